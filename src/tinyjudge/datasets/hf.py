"""Conversion between tinyjudge records and Hugging Face ``datasets``.

Nested message lists are stored as JSON strings so that every row has the same
Arrow schema whatever tools or content parts a trajectory uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from tinyjudge.records import Item, Label

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = ["to_dataset", "from_dataset"]

_JSON_FIELDS = {
    Item: ("messages", "context", "response_a", "response_b", "metadata"),
    Label: ("probs", "hint", "orders", "raw", "usage"),
}


def to_dataset(records: Iterable[Item] | Iterable[Label]) -> Dataset:
    """Build a ``datasets.Dataset`` with one row per record."""
    from datasets import Dataset

    rows: list[dict[str, Any]] = []
    kind: type[Item] | type[Label] | None = None
    for r in records:
        kind = type(r)
        row = r.model_dump(mode="json")
        for f in _JSON_FIELDS[kind]:
            row[f] = json.dumps(row[f], ensure_ascii=False)
        rows.append(row)
    ds = Dataset.from_list(rows)
    if kind is not None:
        ds.info.description = f"tinyjudge:{kind.__name__}"
    return ds


R = TypeVar("R", Item, Label)


def from_dataset(ds: Dataset, model: type[R]) -> list[R]:
    """Turn rows written by :func:`to_dataset` back into records (``Item`` or ``Label``)."""
    out = []
    for row in ds:
        row = dict(row)
        for f in _JSON_FIELDS[model]:
            if f in row and isinstance(row[f], str):
                row[f] = json.loads(row[f])
        out.append(model.model_validate(row))
    return out
