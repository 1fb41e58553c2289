"""The one reader of every message shape: what ``import chat``, the reward server and the
RL adapters all use to turn a row or a rollout into OpenAI chat messages.

One module per framework: Anthropic Messages blocks (``_blocks``), OpenAI
Responses items (``_responses``), Inspect AI logs (``_inspect``), OpenHands
events (``_openhands``), LangChain ``messages_to_dict`` (``_langchain``);
OpenAI chat messages and their near relatives (Inspect's, SWE-agent's) in
``_chat``; which shape a row is, in ``_transcript``.
"""

from tinyjudge._faces import lazy_names

from ._canonical import DEFAULT_SYSTEM_PROMPTS as DEFAULT_SYSTEM_PROMPTS
from ._canonical import canonical as canonical
from ._canonical import canonical_messages as canonical_messages
from ._claude_code import is_claude_code_event as is_claude_code_event
from ._common import Unread as Unread
from ._inspect import is_eval_log as is_eval_log
from ._inspect import sample_rows as sample_rows
from ._openhands import is_openhands_event as is_openhands_event
from ._transcript import MESSAGE_FIELDS as MESSAGE_FIELDS
from ._transcript import Transcript as Transcript
from ._transcript import is_message_record as is_message_record
from ._transcript import read_messages as read_messages
from ._transcript import read_transcript as read_transcript

_, __dir__ = lazy_names(__name__)
