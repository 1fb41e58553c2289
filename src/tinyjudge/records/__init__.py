"""The records that flow through tinyjudge: messages, items and labels.

Everything that says something about an item (an LLM judge, a reward model, a
person, a rule) is a :class:`Label` with a ``source``, so any two sources can be
compared (:func:`join_sources`) and any cheap source can be combined with a few
human labels.
"""

from ._items import Item, check_unique_ids, unique_ids
from ._labels import Hint, Label, SourceJoin, Status, index_labels, join_sources
from ._messages import Message, Role, ToolCall, ToolFunction, content_text
from ._read import (
    MESSAGE_FIELDS,
    Transcript,
    Unread,
    canonical,
    canonical_messages,
    is_claude_code_event,
    is_eval_log,
    is_message_record,
    is_openhands_event,
    read_messages,
    read_transcript,
    sample_rows,
)

__all__ = [
    "Role",
    "ToolFunction",
    "ToolCall",
    "Message",
    "Item",
    "Hint",
    "Label",
    "Status",
    "SourceJoin",
    "content_text",
    "index_labels",
    "join_sources",
    "check_unique_ids",
    "unique_ids",
    "Transcript",
    "Unread",
    "MESSAGE_FIELDS",
    "canonical",
    "canonical_messages",
    "read_transcript",
    "read_messages",
    "is_eval_log",
    "is_openhands_event",
    "is_message_record",
    "is_claude_code_event",
    "sample_rows",
]
