"""The typed result of :func:`~tinyjudge.estimate.estimate_rates`: one row per group.

Each :class:`RateRow` holds the prediction-powered rate and the human-only one as
:class:`~tinyjudge.results.Interval` values (``row.rate`` prints as
``0.123 [0.101, 0.148]``) beside the counts; :meth:`RateReport.to_dict` writes the
same JSON as ``tinyjudge estimate --json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tinyjudge.results import Interval, Printed, fields_dict

from ._rates import RateCounts, RateDifference, RateEstimate

__all__ = ["RateRow", "RateComparison", "RateReport"]


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _ci(x: Interval) -> str:
    return "–" if x.low is None or x.high is None else f"{x.low:.3f}-{x.high:.3f}"


@dataclass(frozen=True)
class RateRow(RateCounts):
    """A behaviour's rate over one group of items (or all of them): the intervals and
    method below, beside the counts of :class:`~tinyjudge.estimate.RateCounts`.

    Attributes:
        rate: the prediction-powered rate (``method``) with its interval, clipped to [0, 1].
        human_only: the rate from the human labels alone (Wilson; normal when clustered;
            the bin-weighted human mean for the stratified design).
        method: ``ppi++``, ``ppi`` or ``stratified`` (`` clustered`` appended when so).
        level: nominal coverage of both intervals.
        lam: the weight on the cheap predictions (0: human only, 1: PPI).
    """

    rate: Interval
    human_only: Interval
    method: str
    level: float
    lam: float

    @classmethod
    def of(cls, r: RateEstimate) -> RateRow:
        """The row of :func:`~tinyjudge.estimate.estimate_rate`'s result."""
        e = r.estimate
        return cls(
            **r.counts(), rate=e.interval, human_only=r.human_only.interval, method=e.method,
            level=e.level, lam=e.lam,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the counts (an infinite ``effective_n`` or ``gain`` is ``None``),
        ``rate`` and ``human_only`` as intervals (``{"value", "low", "high"}``), ``lambda``."""
        out = fields_dict(self, rename={"lam": "lambda"}, skip=("method", "level"))
        return out | {k: _finite(out[k]) for k in ("effective_n", "gain")}


@dataclass(frozen=True)
class RateComparison:
    """``rate(a) - rate(b)`` of two groups (disjoint items), with both intervals.

    Attributes:
        a: the first group's value.
        b: the second group's value.
        difference: the prediction-powered difference with its interval.
        human_only: the difference from human labels alone.
    """

    a: str
    b: str
    difference: Interval
    human_only: Interval

    @classmethod
    def of(cls, a: str, b: str, d: RateDifference) -> RateComparison:
        """The comparison of :func:`~tinyjudge.estimate.compare_rates`'s result."""
        return cls(a, b, d.estimate.interval, d.human_only.interval)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``difference`` and ``human_only`` as intervals."""
        return fields_dict(self)


@dataclass(frozen=True, repr=False)
class RateReport(Printed):
    """Rates of a behaviour, overall and per group, from a cheap and a human source.

    It prints as :meth:`lines` (the overall rate, then each group's), a table in Jupyter.

    Attributes:
        rubric: the rubric's id.
        cheap: the cheap source, e.g. ``judge:gpt-4``.
        human: the human source, e.g. ``human:final``.
        by: the grouping key, e.g. ``metadata.answering_model`` (None: no groups).
        overall: the rate over all items.
        groups: one row per group value.
        comparison: ``rate(A) - rate(B)`` when two groups were compared.
        counts: items and labels used and left out, by reason.
        held_back: when human labels were subsampled, the rate from all of them
            (``overall`` and each group): a check on the estimate.
        cluster: the item key the intervals are clustered by (None: items independent).
        positive: the rubric's labels whose rate this is.
    """

    rubric: str
    cheap: str
    human: str
    by: str | None
    overall: RateRow
    groups: dict[str, RateRow]
    comparison: RateComparison | None
    counts: dict[str, int]
    held_back: dict[str, float]
    cluster: str | None = None
    positive: tuple[str, ...] = ()

    @property
    def behaviour(self) -> str:
        """What the rate is of: the rubric's positive labels (``full_refusal or ...``)."""
        return " or ".join(self.positive) or f"{self.rubric} positive"

    def lines(self) -> list[str]:
        """The rate overall and per group, and the comparison when one was asked."""
        level = f"{self.overall.level:.0%}"
        out = [
            f"rate of {self.behaviour}: {self.overall.rate} ({level} CI, {self.overall.method}; "
            f"{self.cheap} on {self.overall.n_items} items + {self.human} on "
            f"{self.overall.n_human})"
        ]
        if self.groups:
            out.append(f"by {self.by}: {len(self.groups)} groups")
        out += [f"{g}: {r.rate} (n human {r.n_human})" for g, r in self.groups.items()]
        if self.comparison is not None:
            c = self.comparison
            out.append(f"{c.a} - {c.b}: {c.difference}")
        return out

    def table(self) -> tuple[list[str], list[list[object]]]:
        """A row per group (the overall rate first): rate, intervals, counts."""
        columns = ["group", "rate", "CI", "human-only CI", "n human", "n items"]
        named = [("all", self.overall), *self.groups.items()]
        rows: list[list[object]] = [
            [g, f"{r.rate.value:.3f}", _ci(r.rate), _ci(r.human_only), r.n_human, r.n_items]
            for g, r in named
        ]
        return columns, rows

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields (``held_back`` as ``all_human_rate``, written with
        ``comparison`` only when there is one), then the overall rate's ``level`` and
        ``method``; infinite counts are None."""
        absent = {"held_back": not self.held_back, "comparison": self.comparison is None}
        skip = ["positive", *(name for name, gone in absent.items() if gone)]
        out = fields_dict(self, rename={"held_back": "all_human_rate"}, skip=skip)
        return out | {"level": self.overall.level, "method": self.overall.method}
