"""Items: a trajectory, or a pair of responses to one context."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tinyjudge.errors import DataError

from ._messages import Message, link_tool_calls

__all__ = ["Item", "check_unique_ids", "unique_ids"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


def check_unique_ids(items: Iterable[Item], where: str = "items") -> None:
    """Refuse items that share an id: each would be judged, scored or trained on twice.

    Raises:
        TinyjudgeError: naming the first repeated id and its positions (1-based).
    """
    for _ in unique_ids(items, where):
        pass


def unique_ids(items: Iterable[Item], where: str = "items") -> Iterator[Item]:
    """The items, in order, refusing one whose id came before (for streams read once).

    Raises:
        TinyjudgeError: as :func:`check_unique_ids`, when the repeated id is reached.
    """
    seen: dict[str, int] = {}
    for n, item in enumerate(items, start=1):
        first = seen.setdefault(item.id, n)
        if first != n:
            raise DataError(
                where,
                None,
                f"item id {item.id!r} appears twice (items {first} and {n}); ids must be unique",
            )
        yield item
