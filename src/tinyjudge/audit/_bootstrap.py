"""Percentile bootstrap confidence intervals, resampling whole clusters when asked.

Items that share a prompt are not independent: a judge that misreads one prompt
misreads all five answers to it. Resampling prompts (clusters) rather than items
gives intervals that account for that; with ``groups=None`` it is the ordinary
item bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge.errors import TinyjudgeError

__all__ = ["BootstrapCI", "bootstrap_ci", "cluster_indices"]


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
        """``[low, high]`` with NaN as None, ready for JSON."""
        return [_none(self.low), _none(self.high)]


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
    if not arrays:
        raise TinyjudgeError("bootstrap_ci needs at least one array to resample")
    arrs = [a if isinstance(a, np.ndarray) else np.asarray(a, dtype=object) for a in arrays]
    n = len(arrs[0])
    if any(len(a) != n for a in arrs):
        raise TinyjudgeError(f"arrays must be equally long, got {[len(a) for a in arrs]}")
    if n == 0:
        raise TinyjudgeError("cannot bootstrap an empty sample")
    if not 0.0 < level < 1.0:
        raise TinyjudgeError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise TinyjudgeError(f"n_boot must be at least 1, got {n_boot}")
    if groups is not None and len(groups) != n:
        raise TinyjudgeError(f"groups has {len(groups)} entries for {n} items")
    clusters = cluster_indices(groups) if groups is not None else None
    n_clusters = len(clusters) if clusters is not None else n
    estimate = float(statistic(*arrs))
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for r in range(n_boot):
        if clusters is None:
            idx = rng.integers(0, n, size=n)
        else:
            picks = rng.integers(0, n_clusters, size=n_clusters)
            idx = np.concatenate([clusters[p] for p in picks])
        draws[r] = statistic(*(a[idx] for a in arrs))
    ok = draws[~np.isnan(draws)]
    if ok.size == 0:
        low = high = float("nan")
    else:
        alpha = (1.0 - level) / 2.0
        low, high = (float(x) for x in np.quantile(ok, [alpha, 1.0 - alpha]))
    return BootstrapCI(estimate, low, high, level, n_boot, int(n_boot - ok.size), n_clusters)
