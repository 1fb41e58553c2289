"""The records that flow through tinyjudge: messages, items and labels.

Everything that says something about an item (an LLM judge, a reward model, a
person, a rule) is a :class:`Label` with a ``source``, so any two sources can be
compared and any cheap source can be combined with a few human labels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tinyjudge.errors import TinyjudgeError

__all__ = [
    "Role",
    "ToolFunction",
    "ToolCall",
    "Message",
    "Item",
    "Hint",
    "Label",
    "content_text",
    "link_tool_calls",
    "index_labels",
    "check_unique_ids",
]

Role = Literal["system", "developer", "user", "assistant", "tool"]
Status = Literal["ok", "unscored"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Other tools' spellings of the roles (ShareGPT, Gemini, Llama 3's tool role, the
# OpenAI API's legacy "function" role), read as the OpenAI role they stand for.
_ROLE_ALIASES = {
    "human": "user",
    "gpt": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "function": "tool",
    "ipython": "tool",
    "observation": "tool",
}
# What a content part that is not text is shown as, by its type.
_PART_NAMES = {
    "image_url": "image",
    "input_image": "image",
    "image": "image",
    "input_audio": "audio",
    "audio": "audio",
    "file": "file",
    "input_file": "file",
    "video": "video",
    "video_url": "video",
}


def _is_empty(value: Any) -> bool:
    return value is None or value == [] or value == {}


class _Tolerant(BaseModel):
    """A record read from other tools' files: fields tinyjudge does not use are kept.

    Unknown fields go into ``extra`` (empty ones, such as the OpenAI SDK's
    ``"audio": null``, are dropped), so a file written by another tool is never
    refused for them and nothing it said is lost.
    """

    # Unknown fields are moved into ``extra`` before validation, so the schema
    # says what is accepted (any field), not what is stored.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"additionalProperties": True})
    extra: dict[str, Any] | None = None

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        return data

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = cls._normalize(dict(data))
        known = cls.model_fields
        unknown = {k: v for k, v in data.items() if k not in known and not _is_empty(v)}
        out = {k: v for k, v in data.items() if k in known}
        if unknown:
            out["extra"] = {**(out.get("extra") or {}), **unknown}
        return out


class ToolFunction(_Tolerant):
    """The function part of a tool call; ``arguments`` is a JSON string.

    Arguments given as an object (TRL, transformers chat templates) are stored
    as their JSON text.
    """

    name: str
    arguments: str = ""

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_text(cls, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return value


class ToolCall(_Tolerant):
    """One tool call made by an assistant message.

    ``id`` may be missing (TRL, transformers); an :class:`Item` then gives it one
    from its position (``call_<message>_<k>``). A flat ``{"name", "arguments"}``
    and an OpenAI custom tool call (``{"custom": {"name", "input"}}``) are read too.
    """

    id: str | None = None
    type: str = "function"
    function: ToolFunction

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "function" not in data:
            if isinstance(data.get("custom"), dict):
                custom = data.pop("custom")
                data["function"] = {"name": custom.get("name"), "arguments": custom.get("input")}
                data.setdefault("type", "custom")
            elif "name" in data:
                data["function"] = {
                    "name": data.pop("name"),
                    "arguments": data.pop("arguments", ""),
                }
        return data


class Message(_Tolerant):
    """A chat message in the OpenAI format, tool calls and tool results included.

    Read tolerantly, since messages come from other tools' files: the OpenAI
    SDK's ``model_dump()`` (``refusal``, ``annotations``, ``audio``,
    ``function_call``), vLLM's and DeepSeek's ``reasoning_content``, TRL's tool
    calls (no ``id``, ``arguments`` as an object), ShareGPT's ``from``/``value``.
    ``name`` keeps the speaking agent's name in multi-agent transcripts.
    ``content`` may be a string or a list of content parts. ``reasoning`` is the
    model's reasoning text, kept but not part of :attr:`text`. Fields tinyjudge
    does not use are kept in ``extra``.
    """

    role: Role
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    refusal: str | None = None

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "role" not in data and "from" in data:  # ShareGPT
            data["role"] = data.pop("from")
            data.setdefault("content", data.pop("value", None))
        role = data.get("role")
        if isinstance(role, str):
            data["role"] = _ROLE_ALIASES.get(role.lower(), role.lower())
        for key in ("reasoning_content", "thinking"):
            if data.get(key) and not data.get("reasoning"):
                data["reasoning"] = data.pop(key)
        call = data.get("function_call")
        if isinstance(call, dict) and not data.get("tool_calls"):
            data["tool_calls"] = [{"type": "function", "function": data.pop("function_call")}]
        content = data.get("content")
        is_part = lambda p: isinstance(p, str) or (isinstance(p, dict) and "type" in p)  # noqa: E731
        if isinstance(content, list) and all(is_part(p) for p in content):
            data["content"] = [
                {"type": "text", "text": p} if isinstance(p, str) else p for p in content
            ]
        elif isinstance(content, dict) and "type" in content:
            data["content"] = [content]
        elif isinstance(content, dict | list | int | float | bool):
            # a tool's JSON result given as an object: its JSON text is the content
            data["content"] = json.dumps(content, ensure_ascii=False)
        if not data.get("tool_calls"):
            data.pop("tool_calls", None)
        return data

    @model_validator(mode="after")
    def _check_tool_fields(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f'only assistant messages carry "tool_calls", not {self.role!r}')
        return self

    @property
    def text(self) -> str:
        """The message content as plain text (content parts joined).

        With no content, the refusal or the spoken reply's transcript stands in.
        """
        audio = (self.extra or {}).get("audio")
        transcript = audio.get("transcript") if isinstance(audio, dict) else None
        return content_text(self.content) or self.refusal or str(transcript or "")


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """Flatten OpenAI message content (a string or parts) to plain text.

    Text parts are joined by newlines; a part with no text stands as a
    placeholder naming what it was (``[image]``, ``[audio]``, ``[file]``).
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for part in content:
        if not isinstance(part, dict):
            continue
        text = part.get("text") if part.get("type") != "refusal" else part.get("refusal")
        if isinstance(text, str):
            if text:
                out.append(text)
            continue
        kind = str(part.get("type", "part"))
        out.append(f"[{_PART_NAMES.get(kind, kind)}]")
    return "\n".join(out)


def link_tool_calls(messages: list[Message]) -> None:
    """Give tool calls without ``id`` one, and tool replies without ``tool_call_id`` theirs.

    A call's id comes from its position (``call_<message>_<k>``). A tool reply
    with no ``tool_call_id`` answers the open call of the same ``name`` if there
    is one, else the earliest open call, as TRL and chat templates assume.
    """
    open_calls: list[ToolCall] = []
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            for k, call in enumerate(message.tool_calls):
                if not call.id:
                    call.id = f"call_{i}_{k}"
            open_calls = list(message.tool_calls)
        elif message.role == "tool":
            if message.tool_call_id:
                open_calls = [c for c in open_calls if c.id != message.tool_call_id]
            elif open_calls:
                named = [c for c in open_calls if message.name and c.function.name == message.name]
                call = (named or open_calls)[0]
                message.tool_call_id = call.id
                open_calls.remove(call)


class Item(_Record):
    """A thing to be judged: a trajectory, or a pair of responses to one context.

    A single item has ``messages``. A pairwise item has ``context`` plus
    ``response_a`` and ``response_b`` (each one or more messages).
    """

    id: str
    messages: list[Message] = Field(default_factory=list)
    context: list[Message] | None = None
    response_a: list[Message] | None = None
    response_b: list[Message] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_shape(self) -> Item:
        pair = (self.context, self.response_a, self.response_b)
        if any(p is not None for p in pair):
            if self.response_a is None or self.response_b is None:
                raise ValueError('a pairwise item needs both "response_a" and "response_b"')
            if self.messages:
                raise ValueError('an item has either "messages" or a pair, not both')
        elif not self.messages:
            raise ValueError('an item needs non-empty "messages" (or "response_a"/"response_b")')
        if not self.id:
            raise ValueError('"id" must not be empty')
        link_tool_calls(self.messages)
        for response in (self.response_a, self.response_b):
            if response is not None:
                link_tool_calls([*(self.context or []), *response])
        return self

    @property
    def is_pairwise(self) -> bool:
        return self.response_a is not None

    def content_hash(self) -> str:
        """SHA-256 of the item's content, for cache keys.

        The id, metadata and the fields kept in ``extra`` (which no judge or
        reward model reads) are left out.
        """
        payload = _without_extra(
            self.model_dump(mode="json", exclude={"metadata", "id"}, exclude_none=True)
        )
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def get(self, key: str) -> Any:
        """Look up a dotted key such as ``metadata.prompt_id`` (None if absent)."""
        value: Any = self
        for part in key.split("."):
            if isinstance(value, BaseModel):
                value = getattr(value, part, None)
            elif isinstance(value, dict):
                value = value.get(part)
            else:
                return None
        return value


def _without_extra(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_extra(v) for k, v in value.items() if k != "extra"}
    if isinstance(value, list):
        return [_without_extra(v) for v in value]
    return value


class Hint(_Record):
    """Textual feedback for the agent at a given step of its trajectory."""

    step: int | None = None
    text: str


class Label(_Record):
    """What one source says about one item under one rubric.

    ``status="unscored"`` keeps the raw output and the reason when no label
    could be read; it is never coerced into a class and never dropped.
    For pairwise items, ``orders`` holds the verdict of each presentation order
    (mapped back to the original positions) and ``consistent`` whether they agree.
    ``step`` is the trajectory step a verdict points at (e.g. the first mistake).
    On an ``ok`` label, ``reason`` (when set) notes a doubt about it, such as a
    judge answer that held a second, different verdict (``ambiguous: ...``).
    """

    item_id: str
    rubric: str
    rubric_hash: str | None = None
    source: str
    status: Status = "ok"
    label: str | None = None
    probs: dict[str, float] | None = None
    score: float | None = None
    step: int | None = None
    rationale: str | None = None
    hint: Hint | None = None
    orders: dict[str, str | None] | None = None
    consistent: bool | None = None
    raw: Any = None
    reason: str | None = None
    usage: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check_status(self) -> Label:
        if not self.source:
            raise ValueError('"source" must not be empty')
        if self.status == "ok" and self.label is None and self.score is None:
            raise ValueError('an "ok" label needs "label" or "score"')
        if self.status == "unscored":
            if self.label is not None:
                raise ValueError('an "unscored" label must not carry "label"')
            if not self.reason:
                raise ValueError('an "unscored" label needs a "reason"')
        if self.probs is not None:
            # a sum of 1 alone lets {"a": 1.5, "b": -0.5} through, and NaN compares false;
            # the slack is for float32 models whose renormalised top class reads 1.0000001
            for name, p in self.probs.items():
                if not -1e-6 <= p <= 1.0 + 1e-6:
                    raise ValueError(f'"probs["{name}"]" is {p}, not in [0, 1]')
            total = sum(self.probs.values())
            if self.probs and abs(total - 1.0) > 1e-3:
                raise ValueError(f'"probs" must sum to 1, got {total:.4f}')
        return self


def index_labels(labels: Iterable[Label], rubric: str | None = None) -> dict[str, dict[str, Label]]:
    """``{source: {item_id: label}}``; a later label for the same item and source wins.

    Raises:
        TinyjudgeError: the labels mix rubrics and no ``rubric`` was chosen, since
            a source's verdicts under two rubrics are not one rater's ratings.
    """
    out: dict[str, dict[str, Label]] = {}
    rubrics: dict[str, set[str]] = {}
    for lab in labels:
        if rubric is not None and lab.rubric != rubric:
            continue
        rubrics.setdefault(lab.source, set()).add(lab.rubric)
        out.setdefault(lab.source, {})[lab.item_id] = lab
    mixed = {s: sorted(r) for s, r in rubrics.items() if len(r) > 1}
    if mixed:
        source, names = next(iter(mixed.items()))
        raise TinyjudgeError(
            f"source {source!r} has labels under several rubrics {names}; "
            "choose one with rubric=..."
        )
    return out


def check_unique_ids(items: Iterable[Item], where: str = "items") -> None:
    """Refuse items that share an id: each would be judged, scored or trained on twice.

    Raises:
        TinyjudgeError: naming the first repeated id and its positions (1-based).
    """
    seen: dict[str, int] = {}
    for n, item in enumerate(items, start=1):
        first = seen.setdefault(item.id, n)
        if first != n:
            raise TinyjudgeError(
                f"{where}: item id {item.id!r} appears twice (items {first} and {n}); "
                "ids must be unique"
            )
