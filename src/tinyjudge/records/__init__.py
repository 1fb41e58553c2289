"""The records that flow through tinyjudge: messages, items and labels.

Everything that says something about an item (an LLM judge, a reward model, a
person, a rule) is a :class:`Label` with a ``source``, so any two sources can be
compared (:func:`join_sources`) and any cheap source can be combined with a few
human labels.
"""

from ._items import Item, check_unique_ids, unique_ids
from ._labels import Hint, Label, SourceJoin, Status, index_labels, join_sources
from ._messages import Message, Role, ToolCall, ToolFunction, content_text
from ._read import *  # noqa: F403  (the reader's face, less its defaults table)
from ._read import __all__ as _read_names

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
]
__all__ += [n for n in _read_names if n != "DEFAULT_SYSTEM_PROMPTS"]
