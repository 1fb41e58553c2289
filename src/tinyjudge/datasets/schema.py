"""JSON Schema of the files tinyjudge reads and writes (``tinyjudge schema items|labels``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label

__all__ = ["SCHEMAS", "record_schema"]

SCHEMAS: dict[str, type[BaseModel]] = {"items": Item, "labels": Label}


def record_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one line of an ``items`` or ``labels`` JSONL file.

    Raises:
        TinyjudgeError: ``kind`` is not one of :data:`SCHEMAS`.
    """
    model = SCHEMAS.get(kind)
    if model is None:
        raise UsageError(f"unknown schema {kind!r}; choose one of {sorted(SCHEMAS)}")
    schema = model.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"one line of a tinyjudge {kind} JSONL file; see docs/formats.md",
        **schema,
    }
