"""Typed results that print themselves: an estimate with its interval.

A stage's result is a dataclass of such values rather than a dict, so a notebook
reads ``row.kappa.low`` and prints ``row.kappa`` as ``0.718 [0.548, 0.865]``.

>>> k = Interval(0.7184, 0.5481, 0.8652)
>>> str(k)
'0.718 [0.548, 0.865]'
>>> 0.6 in k, k.width > 0.3
(True, True)
>>> Interval(0.5).to_dict()
{'value': 0.5, 'low': None, 'high': None}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Interval"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with the bounds of its confidence interval.

    Args:
        value: the estimate (``nan`` where it could not be computed).
        low: the interval's lower bound (``None`` where none was computed).
        high: the interval's upper bound.
    """

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def width(self) -> float:
        """``high - low``; ``nan`` without an interval."""
        if self.low is None or self.high is None:
            return math.nan
        return self.high - self.low

    def __contains__(self, x: object) -> bool:
        if self.low is None or self.high is None or not isinstance(x, int | float):
            return False
        return self.low <= x <= self.high

    def __format__(self, spec: str) -> str:
        fmt = spec or ".3f"
        text = "nan" if math.isnan(self.value) else format(self.value, fmt)
        if self.low is None or self.high is None:
            return text
        return f"{text} [{format(self.low, fmt)}, {format(self.high, fmt)}]"

    def __str__(self) -> str:
        return format(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"value", "low", "high"}``."""
        return {"value": self.value, "low": self.low, "high": self.high}
