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

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    "index_labels",
]

Role = Literal["system", "developer", "user", "assistant", "tool"]
Status = Literal["ok", "unscored"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolFunction(_Record):
    """The function part of an OpenAI tool call; ``arguments`` is a JSON string."""

    name: str
    arguments: str = ""


class ToolCall(_Record):
    """One tool call made by an assistant message."""

    id: str
    type: Literal["function"] = "function"
    function: ToolFunction


class Message(_Record):
    """A chat message in the OpenAI format, tool calls and tool results included.

    ``name`` keeps the speaking agent's name in multi-agent transcripts.
    ``content`` may be a string or a list of OpenAI content parts.
    """

    role: Role
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @model_validator(mode="after")
    def _check_tool_fields(self) -> Message:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError('a "tool" message needs "tool_call_id"')
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f'only assistant messages carry "tool_calls", not {self.role!r}')
        return self

    @property
    def text(self) -> str:
        """The message content as plain text (content parts joined)."""
        return content_text(self.content)


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """Flatten OpenAI message content (string or parts) to plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # Non-text parts (images, audio) have no text; they must not leave blank lines.
    return "\n".join(
        str(part["text"]) for part in content if isinstance(part, dict) and part.get("text")
    )


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
        return self

    @property
    def is_pairwise(self) -> bool:
        return self.response_a is not None

    def content_hash(self) -> str:
        """SHA-256 of the item's content (metadata excluded), for cache keys."""
        payload = self.model_dump(mode="json", exclude={"metadata", "id"}, exclude_none=True)
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
