"""The records that flow through tinyjudge: messages, items and labels.

Everything that says something about an item (an LLM judge, a reward model, a
person, a rule) is a :class:`Label` with a ``source``, so any two sources can be
compared (:func:`join_sources`) and any cheap source can be combined with a few
human labels.
"""

from tinyjudge._faces import lazy_names

from ._items import Item as Item
from ._items import check_unique_ids as check_unique_ids
from ._items import unique_ids as unique_ids
from ._labels import Hint as Hint
from ._labels import Label as Label
from ._labels import SourceJoin as SourceJoin
from ._labels import Status as Status
from ._labels import index_labels as index_labels
from ._labels import join_sources as join_sources
from ._messages import Message as Message
from ._messages import Role as Role
from ._messages import ToolCall as ToolCall
from ._messages import ToolFunction as ToolFunction
from ._messages import content_text as content_text
from ._read import MESSAGE_FIELDS as MESSAGE_FIELDS
from ._read import Transcript as Transcript
from ._read import Unread as Unread
from ._read import canonical as canonical
from ._read import canonical_messages as canonical_messages
from ._read import is_claude_code_event as is_claude_code_event
from ._read import is_eval_log as is_eval_log
from ._read import is_message_record as is_message_record
from ._read import is_openhands_event as is_openhands_event
from ._read import read_messages as read_messages
from ._read import read_transcript as read_transcript
from ._read import sample_rows as sample_rows

_, __dir__ = lazy_names(__name__)
