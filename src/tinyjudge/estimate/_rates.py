"""A behaviour's rate from cheap predictions on every item plus human labels on some.

These functions take item-aligned arrays (``cheap`` on all items, ``human`` with
NaN where no person labelled) and put the prediction-powered interval beside the
human-only one, so a user sees what the cheap labels bought.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.results import Interval

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ._active import _probabilities, stratified_ppi_mean
from ._config import METHODS, Method
from ._ppi import (
    ArrayLike,
    Difference,
    MeanEstimate,
    clustered_se,
    difference,
    newcombe_difference,
    ppi_mean,
    wilson_mean,
    z_value,
)

__all__ = [
    "RateCounts",
    "RateEstimate",
    "RateDifference",
    "RateOptions",
    "estimate_rate",
    "compare_rates",
]


@dataclass(frozen=True)
class RateCounts:
    """What a rate estimate counts beside its intervals (shared by :class:`RateEstimate`
    and the typed row of :func:`~tinyjudge.estimate.estimate_rates`).

    Attributes:
        n_human: items with a human label (and a cheap prediction).
        n_items: items with a cheap prediction (N, the population the rate is of).
        cheap_mean: the plain mean of the cheap predictions: what trusting the
            cheap source blindly would report (biased when it is).
        effective_n: human labels the human-only estimate would need for the same
            variance (``n * se_human^2 / se_ppi^2``).
        gain: ``effective_n / n_human``; above 1 means the cheap labels helped.
        n_clusters: clusters the intervals are robust to (0: items taken as independent).
    """

    n_human: int
    n_items: int
    cheap_mean: float
    effective_n: float
    gain: float
    n_clusters: int

    def counts(self) -> dict[str, Any]:
        """These fields by name (to build another result of the same counts)."""
        return {f.name: getattr(self, f.name) for f in fields(RateCounts)}


@dataclass(frozen=True)
class RateEstimate(RateCounts):
    """A rate with its prediction-powered and human-only intervals, and its counts.

    Attributes:
        estimate: the prediction-powered estimate (PPI++, PPI or stratified).
        human_only: the estimate from the human labels alone (Wilson; for the
            stratified design, the bin-weighted human mean).
    """

    estimate: MeanEstimate
    human_only: MeanEstimate

    @property
    def rate(self) -> float:
        """The prediction-powered rate (``interval.value``)."""
        return self.estimate.estimate

    @property
    def interval(self) -> Interval:
        """The prediction-powered rate with its interval."""
        return self.estimate.interval


class RateDifference(NamedTuple):
    """``rate(a) - rate(b)`` on two disjoint sets of items (e.g. two checkpoints)."""

    estimate: Difference
    human_only: Difference
    a: RateEstimate
    b: RateEstimate


def _clip(est: MeanEstimate) -> MeanEstimate:
    # A rate lies in [0, 1]; clipping the interval there cannot lose coverage.
    ci = est.interval
    low = None if ci.low is None else max(ci.low, 0.0)
    high = None if ci.high is None else min(ci.high, 1.0)
    return est._replace(interval=Interval(ci.value, low, high))


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}; choose one of {list(METHODS)}")


def _with_se(est: MeanEstimate, se: float, method: str) -> MeanEstimate:
    z = z_value(est.level)
    ci = Interval(est.estimate, est.estimate - z * se, est.estimate + z * se)
    return est._replace(se=se, interval=ci, method=method)


def estimate_rate(
    cheap: ArrayLike,
    human: ArrayLike,
    *,
    level: float = 0.9,
    method: Method = "ppi++",
    n_strata: int = 5,
    clusters: Sequence[object] | np.ndarray | None = None,
) -> RateEstimate:
    """Estimate how often a behaviour occurs, with a valid interval.

    Args:
        cheap: the cheap source's probability of the behaviour on every item
            (a reward model's or judge's probs, or 0/1 verdicts).
        human: the human label per item (0/1, or soft in [0, 1]), NaN where none.
        level: nominal coverage, e.g. 0.9.
        method: ``ppi++`` (tuned weight on the cheap scores; the default), ``ppi``
            (weight 1), or ``stratified`` when the human labels were picked by
            :func:`select_for_labelling`. The first two need the human-labelled
            items to be a uniform random subset.
        n_strata: bins of the stratified design.
        clusters: the cluster of each item (a dialogue, a prompt): both intervals
            are then cluster-robust (:func:`clustered_se`; the human-only one a
            normal interval on it), as wide as dependent items allow. Not with
            ``stratified``.

    Returns:
        A :class:`RateEstimate`; intervals are clipped to [0, 1].

    Raises:
        TinyjudgeError: unequal lengths, cheap scores outside [0, 1], fewer than 2
            human labels (or clusters), clusters with ``stratified``, or an unknown
            method.

    >>> r = estimate_rate([0.9, 0.1, 0.8, 0.2, 0.9, 0.1], [1, 0, 1, np.nan, np.nan, np.nan])
    >>> r.n_human, r.n_items
    (3, 6)
    """
    _check_method(method)
    if clusters is not None and method == "stratified":
        raise UsageError(
            "clusters with the stratified design are not supported: use ppi++ or ppi",
            param="method",
        )
    f = _probabilities(cheap)
    y = np.asarray(human, dtype=float).ravel()
    if y.size != f.size:
        raise UsageError(f"cheap has {f.size} items but human has {y.size}")
    has = ~np.isnan(y)
    if method == "stratified":
        est = stratified_ppi_mean(f, y, n_strata=n_strata, level=level)
        base = stratified_ppi_mean(f, y, n_strata=n_strata, level=level, use_cheap=False)
    else:
        est = ppi_mean(y[has], f[has], f[~has], level=level, lam=None if method == "ppi++" else 1.0)
        base = wilson_mean(y[has], level=level)
    n_clusters = 0
    if clusters is not None:
        se, n_clusters = clustered_se(y, f, clusters, est.lam)
        est = _with_se(est, se, f"{method} clustered")
        base = _with_se(base._replace(interval=Interval(float(y[has].mean()))),
                        clustered_se(y, f, clusters, 0.0)[0], "normal clustered")  # fmt: skip
    if est.se > 0:
        eff = has.sum() * (base.se / est.se) ** 2
    else:
        eff = float(has.sum()) if base.se == 0 else math.inf
    gain = eff / has.sum()
    return RateEstimate(
        n_human=int(has.sum()), n_items=int(f.size), cheap_mean=float(f.mean()),
        effective_n=float(eff), gain=gain, n_clusters=n_clusters, estimate=_clip(est),
        human_only=_clip(base),
    )  # fmt: skip


class RateOptions(TypedDict, total=False):
    """:func:`estimate_rate`'s options that :func:`compare_rates` gives both sides."""

    level: float
    method: Method
    n_strata: int


def compare_rates(
    cheap_a: ArrayLike,
    human_a: ArrayLike,
    cheap_b: ArrayLike,
    human_b: ArrayLike,
    *,
    clusters_a: Sequence[object] | np.ndarray | None = None,
    clusters_b: Sequence[object] | np.ndarray | None = None,
    **options: Unpack[RateOptions],
) -> RateDifference:
    """The difference of a behaviour's rate between two disjoint sets of items.

    For A/B checkpoints: each side is estimated as in :func:`estimate_rate` (with
    its ``level``, ``method`` and ``n_strata``) and, the two samples being
    independent, the variances add. The human-only difference uses Newcombe's
    hybrid score interval (uniform designs), or with clusters the difference of
    the two clustered normal intervals.
    """
    a = estimate_rate(cheap_a, human_a, clusters=clusters_a, **options)
    b = estimate_rate(cheap_b, human_b, clusters=clusters_b, **options)
    if options.get("method") == "stratified" or clusters_a is not None or clusters_b is not None:
        base = difference(a.human_only, b.human_only)
    else:
        ya, yb = np.asarray(human_a, dtype=float), np.asarray(human_b, dtype=float)
        level = a.estimate.level
        base = newcombe_difference(ya[~np.isnan(ya)], yb[~np.isnan(yb)], level=level)
    return RateDifference(difference(a.estimate, b.estimate), base, a, b)
