"""Percentile bootstrap confidence intervals, resampling whole clusters when asked.

A neutral low-level module: ``calibrate`` (metric intervals) and ``audit``
(agreement intervals) both build on it, and neither imports the other for it.
The public names are re-exported as ``tinyjudge.audit.bootstrap_ci`` etc.

Items that share a prompt are not independent: a judge that misreads one prompt
misreads all five answers to it. Resampling prompts (clusters) rather than items
gives intervals that account for that; with ``groups=None`` it is the ordinary
item bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge._numbers import check_number
from tinyjudge.errors import UsageError
from tinyjudge.results import Interval

__all__ = [
    "BootstrapCI",
    "MAX_BOOT",
    "check_n_boot",
    "bootstrap_ci",
    "bootstrap_many",
    "cluster_indices",
]

# More resamples than this add nothing to an interval and can exhaust memory
# (each resample of each statistic is kept).
MAX_BOOT = 100_000


def check_n_boot(n_boot: int) -> None:
    """``n_boot`` is a whole number in ``[1, MAX_BOOT]``.

    Raises:
        UsageError: naming ``n_boot``, the value and the range.
    """
    check_number("n_boot", n_boot, 1, MAX_BOOT, whole=True)


class BootstrapCI(NamedTuple):
    """A statistic with its percentile bootstrap interval.

    Attributes:
        estimate: the statistic on the full data.
        low: lower end of the interval (NaN if no resample was defined).
        high: upper end of the interval.
        level: the nominal coverage, e.g. 0.95.
        n_boot: resamples drawn.
        n_undefined: resamples where the statistic was NaN (e.g. a kappa on a
            resample with one class); they are left out of the percentiles.
        n_clusters: the number of clusters resampled (items when ungrouped).
    """

    estimate: float
    low: float
    high: float
    level: float
    n_boot: int
    n_undefined: int
    n_clusters: int

    def interval(self) -> list[float | None]:
        """``[low, high]`` with NaN as None."""
        return [_none(self.low), _none(self.high)]

    def as_interval(self) -> Interval:
        """The estimate and its bounds as the one interval type (no bounds where NaN;
        a value that is not finite is ``nan``)."""
        value = float(self.estimate) if math.isfinite(self.estimate) else math.nan
        return Interval(value, _none(self.low), _none(self.high))


def _none(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def cluster_indices(groups: Sequence[Any]) -> list[np.ndarray]:
    """Row indices of each distinct group, in first-seen order."""
    members: dict[Any, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    return [np.asarray(v, dtype=np.intp) for v in members.values()]


def bootstrap_ci(
    statistic: Callable[..., float],
    *arrays: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> BootstrapCI:
    """Bootstrap a statistic of one or more aligned arrays, optionally by cluster.

    Args:
        statistic: called as ``statistic(*resampled_arrays)``, returns a float.
        *arrays: equally long arrays, one entry per item (e.g. rater a's and b's labels).
        groups: a cluster key per item (e.g. the prompt id); whole clusters are
            drawn with replacement. None resamples items.
        n_boot: number of resamples.
        level: coverage of the interval, in (0, 1).
        seed: seed of the resampling, so reports are reproducible.

    Returns:
        A :class:`BootstrapCI`.

    Raises:
        TinyjudgeError: no arrays, empty or unequal arrays, a bad level or n_boot.

    >>> ci = bootstrap_ci(lambda x: float(np.mean(x)), [0, 1] * 50, n_boot=200)
    >>> ci.low < 0.5 < ci.high
    True
    """
    out = bootstrap_many(
        {"statistic": statistic}, *arrays, groups=groups, n_boot=n_boot, level=level, seed=seed
    )
    return out["statistic"]


def bootstrap_many(
    statistics: Mapping[str, Callable[..., float]],
    *arrays: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
    centered: bool = False,
) -> dict[str, BootstrapCI]:
    """Like :func:`bootstrap_ci` for several statistics over the same resamples.

    Drawing each resample once is faster, and the intervals of, say, accuracy and
    kappa then come from the same resampled items.

    Args:
        centered: shift each percentile interval so that the resamples' median
            sits on the estimate (same width and skew). For statistics that a
            resample biases, such as a binned calibration error (a resample's
            repeated rows make every bin noisier, and noise only adds to
            |accuracy - confidence|): their plain percentile interval can miss
            the estimate on the full data altogether.
    """
    if not arrays:
        raise UsageError("bootstrap_ci needs at least one array to resample", param="arrays")
    arrs = [a if isinstance(a, np.ndarray) else np.asarray(a, dtype=object) for a in arrays]
    n = len(arrs[0])
    if any(len(a) != n for a in arrs):
        raise UsageError(
            f"arrays must be equally long, got {[len(a) for a in arrs]}", param="arrays"
        )
    if n == 0:
        raise UsageError("cannot bootstrap an empty sample", param="arrays")
    if not 0.0 < level < 1.0:
        raise UsageError(f"level must be in (0, 1), got {level}", param="level")
    if n_boot < 1:
        raise UsageError(f"n_boot must be at least 1, got {n_boot}", param="n_boot")
    check_n_boot(n_boot)
    if groups is not None and len(groups) != n:
        raise UsageError(f"groups has {len(groups)} entries for {n} items", param="groups")
    clusters = cluster_indices(groups) if groups is not None else None
    n_clusters = len(clusters) if clusters is not None else n
    if clusters is not None:
        # Flatten once; a resample is then a few vectorised ops instead of a concatenate.
        flat = np.concatenate(clusters)
        sizes = np.array([len(c) for c in clusters])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    names = list(statistics)
    fns = [statistics[k] for k in names]
    estimates = [float(fn(*arrs)) for fn in fns]
    rng = np.random.default_rng(seed)
    draws = np.empty((len(fns), n_boot))
    for r in range(n_boot):
        if clusters is None:
            idx = rng.integers(0, n, size=n)
        else:
            picks = rng.integers(0, n_clusters, size=n_clusters)
            lengths = sizes[picks]
            # position j of the output walks through cluster picks[i]: start + offset
            offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            idx = flat[np.repeat(starts[picks], lengths) + offsets]
        sample = [a[idx] for a in arrs]
        for j, fn in enumerate(fns):
            draws[j, r] = fn(*sample)
    out = {}
    tail = (1.0 - level) / 2.0
    for j, name in enumerate(names):
        ok = draws[j][~np.isnan(draws[j])]
        low, high = (
            (float("nan"), float("nan"))
            if ok.size == 0
            else (float(x) for x in np.quantile(ok, [tail, 1.0 - tail]))
        )
        if centered and ok.size:
            shift = estimates[j] - float(np.median(ok))
            low, high = low + shift, high + shift
        out[name] = BootstrapCI(
            estimates[j], low, high, level, n_boot, int(n_boot - ok.size), n_clusters
        )
    return out
