"""The one reader of every message shape: what ``import chat``, the reward server and the
RL adapters all use to turn a row or a rollout into OpenAI chat messages.

One module per framework: Anthropic Messages blocks (``_blocks``), OpenAI
Responses items (``_responses``), Inspect AI logs (``_inspect``), OpenHands
events (``_openhands``), LangChain ``messages_to_dict`` (``_langchain``);
OpenAI chat messages and their near relatives (Inspect's, SWE-agent's) in
``_chat``; which shape a row is, in ``_transcript``.
"""

from ._canonical import DEFAULT_SYSTEM_PROMPTS, canonical, canonical_messages
from ._claude_code import is_claude_code_event
from ._common import Unread
from ._inspect import is_eval_log, sample_rows
from ._openhands import is_openhands_event
from ._transcript import (
    MESSAGE_FIELDS,
    Transcript,
    is_message_record,
    read_messages,
    read_transcript,
)

__all__ = [
    "MESSAGE_FIELDS",
    "DEFAULT_SYSTEM_PROMPTS",
    "Transcript",
    "Unread",
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
