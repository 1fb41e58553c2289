"""Turn label values (strings, numbers, None) into integer codes for the statistics."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tinyjudge.errors import UsageError

__all__ = ["is_missing", "label_order", "encode"]


def is_missing(value: Any) -> bool:
    """None and NaN mean "no rating" everywhere in tinyjudge's statistics."""
    if value is None:
        return True
    try:
        return isinstance(value, float | np.floating) and math.isnan(value)
    except TypeError:
        return False


def _py(value: Any) -> Any:
    # numpy scalars hash and compare like their Python twins, but print badly in errors.
    return value.item() if isinstance(value, np.generic) else value


def label_order(values: Iterable[Any], labels: Sequence[Any] | None = None) -> list[Any]:
    """The label set in a fixed order: ``labels`` if given, else the sorted observed values.

    Raises:
        TinyjudgeError: a value is not in ``labels``, or the values cannot be sorted
            (e.g. numbers mixed with strings) and no ``labels`` were given.
    """
    seen = {_py(v) for v in values if not is_missing(v)}
    if labels is not None:
        order = [_py(v) for v in labels]
        if len(set(order)) != len(order):
            raise UsageError(f"labels must be distinct, got {order}")
        unknown = seen - set(order)
        if unknown:
            raise UsageError(
                f"values {sorted(map(str, unknown))} are not in labels {order}; "
                "add them to labels or drop those items"
            )
        return order
    try:
        return sorted(seen)
    except TypeError:
        raise UsageError(
            f"cannot order mixed value types {sorted({type(v).__name__ for v in seen})}; "
            "pass labels=[...] in the order you want"
        ) from None


def encode(values: Sequence[Any], order: Sequence[Any], what: str = "values") -> np.ndarray:
    """Codes ``0..k-1`` by position in ``order``; missing values are an error here."""
    index = {v: i for i, v in enumerate(order)}
    out = np.empty(len(values), dtype=np.intp)
    for i, v in enumerate(values):
        if is_missing(v):
            raise UsageError(
                f"{what}[{i}] is missing (None/NaN); drop unscored items first "
                "(pair_labels does) or use krippendorff_alpha, which allows missing ratings"
            )
        code = index.get(_py(v))
        if code is None:
            raise UsageError(f"{what}[{i}] = {v!r} is not one of {list(order)}")
        out[i] = code
    return out
