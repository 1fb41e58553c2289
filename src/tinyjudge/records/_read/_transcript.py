"""One row of a user's file (or one rollout) as a transcript of OpenAI chat messages.

The row's shape decides where its messages are: OpenAI chat ``messages`` (and
the other usual column names), an Anthropic request (top-level ``system``),
a Responses ``input`` + ``output`` pair or response object, an Inspect AI
sample, a SWE-agent trajectory (``history``), an OpenHands event stream, a
logged request and its response, or a prompt + completion pair. Each list of
messages may mix the record shapes :func:`read_messages` knows.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._chat import read_chat_message
from ._claude_code import is_claude_code_event, session_messages
from ._common import Unread, fields, new_message, text_of
from ._inspect import INSPECT_SAMPLE_FIELDS, input_text, is_inspect_sample, resolve_attachments
from ._langchain import is_langchain, read_langchain
from ._openhands import is_openhands_event, read_openhands
from ._responses import add_responses_item, is_responses_item

__all__ = ["Transcript", "read_transcript", "read_messages", "is_message_record", "MESSAGE_FIELDS"]

# Where the messages are when no field is named, in this order.
MESSAGE_FIELDS = ("messages", "conversations", "conversation", "chat", "dialog", "turns")
# A prompt/completion pair (TRL's format, plain or conversational) also makes a transcript,
# and so does a logged request and its response (a request body, a ChatCompletion dump).
# A plain ``input`` + ``output`` pair of texts too (a Responses pair holds lists).
_PROMPT_FIELDS = ("prompt", "request", "input")
_COMPLETION_FIELDS = ("completion", "response", "output")


@dataclass
class Transcript:
    """What :func:`read_transcript` read of a row.

    Attributes:
        messages: OpenAI chat messages, ready for :class:`~tinyjudge.records.Message`.
        used: the row's fields read as the transcript (the rest is metadata).
        metadata: what the shape says about the run beyond the row's other
            fields (an Inspect sample's ``input`` as text).
        scores: an Inspect sample's scores by scorer name.
        unread: parts and records no reader knew, by name.
    """

    messages: list[dict[str, Any]]
    used: set[str] = field(default_factory=set)
    metadata: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, Any] = field(default_factory=dict)
    unread: Unread = field(default_factory=Unread)


def is_message_record(obj: Any) -> bool:
    """Whether a record is one message (of any shape :func:`read_messages` knows), not a
    row holding a transcript: a file of such records is one transcript."""
    if not isinstance(obj, dict):
        return False
    if is_langchain(obj) or is_responses_item(obj) or is_openhands_event(obj):
        return True
    if is_claude_code_event(obj):
        return True
    holds = (*MESSAGE_FIELDS, *_PROMPT_FIELDS, *_COMPLETION_FIELDS, "history")
    return ("role" in obj or "from" in obj) and not any(k in obj for k in holds)


_R = TypeVar("_R")


def _shape_errors_as_value_errors(read: Callable[..., _R]) -> Callable[..., _R]:
    """A record whose fields hold types no framework writes (a number where a list of
    blocks goes) is refused in one line, as a ``ValueError``, never a traceback."""

    @functools.wraps(read)
    def reading(*args: Any, **kwargs: Any) -> _R:
        try:
            return read(*args, **kwargs)
        except (TypeError, AttributeError, KeyError, IndexError) as e:
            raise ValueError(f"a record of an unexpected shape ({type(e).__name__}: {e})") from None

    return reading


@_shape_errors_as_value_errors
def read_messages(records: list[Any], unread: Unread) -> list[dict[str, Any]]:
    """A list of message records of any known shape, as OpenAI chat messages.

    Records may be OpenAI chat messages (content parts, Anthropic blocks,
    Inspect's and SWE-agent's fields included), Responses items, LangChain
    ``messages_to_dict`` records or OpenHands events; a record of no known
    shape is tallied in ``unread`` and left out.
    """
    out: list[dict[str, Any]] = []
    if records and all(isinstance(r, dict) and is_openhands_event(r) for r in records):
        return read_openhands(records, unread)
    if records and all(is_claude_code_event(r) for r in records):
        records = session_messages(records)
    for record in records:
        if not isinstance(record, dict):
            out.append(record)  # left for Message to refuse, naming it
        elif is_langchain(record):
            out += read_langchain(record, unread)
        elif is_responses_item(record):
            add_responses_item(out, record, unread)
        elif "role" in record or "from" in record:
            out += read_chat_message(record, unread)
        else:
            unread.note("message record with fields", ",".join(sorted(record))[:80])
    return out


def _listed(value: Any, key: str, text_role: str) -> list[Any]:
    """A field's value as a list of records (JSON text and plain text read too)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith(("[", "{")):
            return [{"role": text_role, "content": value}]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f'"{key}" holds malformed JSON ({e.msg} at column {e.colno})'
            ) from None
    if hasattr(value, "tolist"):  # a numpy array from pandas
        value = value.tolist()
    if isinstance(value, dict):
        value = _unwrap(value)
    if not isinstance(value, list) or not value:
        raise ValueError(f'"{key}" must be a non-empty list of messages, got {value!r:.60}')
    return value


def _unwrap(obj: dict[str, Any]) -> list[Any]:
    """The records inside a logged object: a request body (also a Batch API line's
    ``body``), a ChatCompletion's first choice, a response object's ``output``, an
    Anthropic request's ``system`` + ``messages``, or the object as one message."""
    if isinstance(obj.get("body"), dict):
        return _unwrap(obj["body"])
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return [choices[0].get("message")]
    if isinstance(obj.get("messages"), list):
        return _with_system(obj, obj["messages"])
    if "input" in obj or isinstance(obj.get("output"), list):
        return _responses_records(obj)
    if obj.get("type") == "message" and isinstance(obj.get("content"), list):
        return [{"role": obj.get("role", "assistant"), "content": obj["content"]}]  # Anthropic
    return [obj]


def _system(row: dict[str, Any], key: str = "system") -> list[dict[str, Any]]:
    """The system turn an Anthropic request (``system``: text or text blocks) or a
    Responses request (``instructions``: text, or input items) gives at the top level."""
    system = row.get(key)
    if isinstance(system, list) and all(isinstance(b, dict) and "text" in b for b in system):
        system = text_of(system)
    elif isinstance(system, list) and key == "instructions":
        return [r for r in system if isinstance(r, dict)]
    if not isinstance(system, str) or not system:
        return []
    return [new_message("system", system)]


def _with_system(row: dict[str, Any], records: list[Any]) -> list[Any]:
    """The records after the row's top-level system turn, unless they open with one."""
    first = records[0] if records else None
    if isinstance(first, dict) and str(first.get("role", "")).lower() in ("system", "developer"):
        return records
    return [*_system(row), *records]


def _system_used(row: dict[str, Any]) -> set[str]:
    """``{"system"}`` when the row's top-level system is read as its system turn."""
    return {"system"} if _system(row) else set()


def _responses_records(row: dict[str, Any]) -> list[Any]:
    given = row.get("input")
    records = [*_system(row, "instructions")]
    if isinstance(given, str):
        records.append({"role": "user", "content": given})
    elif isinstance(given, list):
        records += given
    if isinstance(row.get("output"), list):
        records += row["output"]
    return records


def _is_responses_row(row: dict[str, Any]) -> bool:
    lists = [row.get("output"), row.get("input")]
    return row.get("object") == "response" or any(
        isinstance(v, list) and any(isinstance(r, dict) and is_responses_item(r) for r in v)
        for v in lists
    )


@_shape_errors_as_value_errors
def read_transcript(row: dict[str, Any], messages_field: str | None = None) -> Transcript:
    """The transcript one row holds, whichever framework wrote it.

    Args:
        row: one record of a user's file, or one rollout sent to the server.
        messages_field: the field holding the messages; None finds them by the
            row's shape, then by :data:`MESSAGE_FIELDS`, then ``prompt`` +
            ``completion``.

    Raises:
        ValueError: no messages found, or a field that holds no list of them.
    """
    unread = Unread()
    if messages_field is not None:
        if messages_field not in row:
            raise ValueError(f'missing field "{messages_field}"; found {sorted(row)}')
        records = _with_system(row, _listed(row[messages_field], messages_field, "user"))
        used = {messages_field} | _system_used(row)
        return Transcript(read_messages(records, unread), used, unread=unread)
    if is_inspect_sample(row):
        sample = resolve_attachments(row)
        used = set(INSPECT_SAMPLE_FIELDS) & set(row)
        meta = {"input": input_text(sample["input"])} if "input" in sample else {}
        return Transcript(
            read_messages(sample["messages"], unread),
            used,
            meta,
            fields(sample.get("scores")),
            unread,
        )
    if isinstance(row.get("history"), list):  # SWE-agent (.traj), OpenHands output
        # a .traj's trajectory repeats its history, and its replay_config is the run's config
        used = {"history", "trajectory", "replay_config"} & set(row)
        return Transcript(read_messages(row["history"], unread), used, unread=unread)
    if isinstance(row.get("events"), list):
        return Transcript(read_messages(row["events"], unread), {"events"}, unread=unread)
    if _is_responses_row(row):
        used = {"input", "output", "instructions"} & set(row)
        return Transcript(read_messages(_responses_records(row), unread), used, unread=unread)
    for key in MESSAGE_FIELDS:
        if key in row and row[key] is not None:
            records = _with_system(row, _listed(row[key], key, "user"))
            used = {key} | _system_used(row)
            return Transcript(read_messages(records, unread), used, unread=unread)
    prompt = next((k for k in _PROMPT_FIELDS if row.get(k) is not None), None)
    completion = next((k for k in _COMPLETION_FIELDS if row.get(k) is not None), None)
    if prompt and completion:
        records = [
            *_listed(row[prompt], prompt, "user"),
            *_listed(row[completion], completion, "assistant"),
        ]
        used = {prompt, completion} | _system_used(row)
        return Transcript(read_messages(_with_system(row, records), unread), used, unread=unread)
    if row.get("type") == "message" and isinstance(row.get("content"), list):
        return Transcript(read_messages(_unwrap(row), unread), set(row) - {"id"}, unread=unread)
    raise ValueError(
        f"no messages: expected a column {list(MESSAGE_FIELDS)}, an Anthropic, Responses, "
        "Inspect AI, SWE-agent or OpenHands transcript, or prompt + completion "
        f"(or name it with messages_field); found {sorted(row)}"
    )
