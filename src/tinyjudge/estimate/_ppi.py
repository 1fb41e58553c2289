"""Prediction-powered inference for a mean, the human-only intervals beside it.

PPI (Angelopoulos et al., 2023, "Prediction-powered inference") estimates the mean
of a behaviour Y from n human labels plus N cheap predictions f on other items:

    theta_hat = lam * mean(f_unlabelled) + mean(Y - lam * f)_labelled
    se^2      = lam^2 * var(f_unlabelled) / N + var(Y - lam * f)_labelled / n

``lam = 1`` is PPI, ``lam = 0`` the human-only mean, and PPI++ (Angelopoulos,
Duchi & Zrnic, 2023, "PPI++: efficient prediction-powered inference") picks the
variance-minimising ``lam = cov(Y, f) / ((1 + n / N) var(f))``, clipped to [0, 1]
so that it reads as "how much the cheap scores are trusted". The interval is the
normal one, theta_hat +- z * se; it is valid when the labelled items are a uniform
random subset of all items (for a non-uniform design see ``_active``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.results import Interval

__all__ = [
    "MeanEstimate",
    "Difference",
    "z_value",
    "wilson_mean",
    "normal_mean",
    "ppi_lambda",
    "ppi_mean",
    "difference",
    "newcombe_difference",
    "clustered_se",
]

ArrayLike = Sequence[float] | np.ndarray


class MeanEstimate(NamedTuple):
    """A mean with its confidence interval.

    Attributes:
        interval: the point estimate with its interval at coverage ``level`` (printing as
            ``0.123 [0.101, 0.148]``); ``estimate`` is its value.
        se: the standard error used for the interval (Wilson: the plug-in one).
        n: human labels used.
        N: cheap predictions used on items without a human label (0 for human-only).
        lam: the weight on the cheap predictions (0: human only, 1: PPI).
        level: nominal coverage, e.g. 0.9.
        method: ``ppi++``, ``ppi``, ``wilson``, ``normal`` or ``stratified``.
    """

    interval: Interval
    se: float
    n: int
    N: int
    lam: float
    level: float
    method: str

    @property
    def estimate(self) -> float:
        """The point estimate (``interval.value``)."""
        return self.interval.value


class Difference(NamedTuple):
    """``a - b`` of two estimates on disjoint items, with its interval (``estimate`` is
    its value)."""

    interval: Interval
    se: float
    level: float
    method: str

    @property
    def estimate(self) -> float:
        """The difference (``interval.value``)."""
        return self.interval.value


def z_value(level: float) -> float:
    """The two-sided normal quantile for coverage ``level`` (1.6449 for 0.9)."""
    if not 0.0 < level < 1.0:
        raise UsageError(f"level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def _vector(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if not np.all(np.isfinite(arr)):
        raise UsageError(f"{name} holds NaN or infinite values; drop or fill them first")
    return arr


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if x.size > 1 else 0.0


def _need_labels(y: np.ndarray) -> None:
    if y.size < 2:
        raise UsageError(
            f"need at least 2 human labels for an interval, got {y.size}; label more items"
        )


def wilson_mean(y: ArrayLike, *, level: float = 0.9) -> MeanEstimate:
    """The Wilson score interval for a rate (Wilson, 1927), human labels only.

    Better than the normal interval near 0 and 1 and never outside [0, 1]; for
    soft labels in [0, 1] it uses their mean as the observed proportion.

    >>> est = wilson_mean([1] * 3 + [0] * 7, level=0.95)
    >>> format(est.interval, ".4f")
    '0.3000 [0.1078, 0.6032]'
    """
    p, low, high, n = _wilson(y, level)
    se = math.sqrt(p * (1 - p) / n)
    return MeanEstimate(Interval(p, low, high), se, n, 0, 0.0, level, "wilson")


def _wilson(y: ArrayLike, level: float) -> tuple[float, float, float, int]:
    """The observed proportion, the Wilson bounds, and n."""
    yy = _vector(y, "y")
    if yy.size == 0:
        raise UsageError("no human labels: the Wilson interval needs at least one")
    n, p, z = yy.size, float(yy.mean()), z_value(level)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return p, centre - half, centre + half, n


def normal_mean(y: ArrayLike, *, level: float = 0.9) -> MeanEstimate:
    """The classical mean +- z * s / sqrt(n) of human labels only."""
    yy = _vector(y, "y")
    _need_labels(yy)
    m, se, z = float(yy.mean()), math.sqrt(_var(yy) / yy.size), z_value(level)
    return MeanEstimate(Interval(m, m - z * se, m + z * se), se, yy.size, 0, 0.0, level, "normal")


def ppi_lambda(y: ArrayLike, f: ArrayLike, f_unlabelled: ArrayLike) -> float:
    """PPI++'s power-tuning weight for a mean, clipped to [0, 1].

    ``cov(Y, f) / ((1 + n / N) var(f))`` with the covariance from the labelled items
    and var(f) from all cheap predictions; 0 when the cheap scores do not vary or
    there are no unlabelled items (nothing to gain from them).
    """
    yy, ff, fu = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    if fu.size == 0 or yy.size < 2:
        return 0.0
    var_f = _var(np.concatenate([ff, fu]))
    if var_f <= 0.0:
        return 0.0
    cov = float(np.cov(yy, ff, ddof=1)[0, 1])
    lam = cov / ((1.0 + yy.size / fu.size) * var_f)
    return float(min(max(lam, 0.0), 1.0))


def ppi_mean(
    y: ArrayLike,
    f: ArrayLike,
    f_unlabelled: ArrayLike,
    *,
    level: float = 0.9,
    lam: float | None = None,
) -> MeanEstimate:
    """Prediction-powered estimate of E[Y] with a normal confidence interval.

    Args:
        y: human labels (0/1, or soft in [0, 1]) on the n labelled items.
        f: the cheap predictions on those same n items.
        f_unlabelled: the cheap predictions on the N items no person labelled.
        level: nominal coverage of the interval.
        lam: weight on the cheap predictions; None tunes it (PPI++), 1.0 is PPI.

    Returns:
        A :class:`MeanEstimate` (``method`` is ``ppi++`` when tuned, else ``ppi``).

    Raises:
        TinyjudgeError: fewer than 2 human labels, ``y`` and ``f`` of unequal
            length, NaN in the inputs, or ``lam`` outside [0, 1].

    >>> est = ppi_mean([1, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 0], lam=1.0)
    >>> round(est.estimate, 4)  # 0.5 + mean([0, 0, 0, 1])
    0.75
    """
    yy, ff, fu = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    if yy.size != ff.size:
        raise UsageError(f"y and f must cover the same labelled items: got {yy.size} and {ff.size}")
    _need_labels(yy)
    method = "ppi++" if lam is None else "ppi"
    if lam is None:
        lam = ppi_lambda(yy, ff, fu)
    elif not 0.0 <= lam <= 1.0:
        raise UsageError(f"lam must be in [0, 1] (or None to tune it), got {lam}")
    if fu.size == 0:
        # Every item has a human label: the cheap scores add nothing.
        lam = 0.0
    resid = yy - lam * ff
    cheap_mean = float(fu.mean()) if fu.size else 0.0
    est = lam * cheap_mean + float(resid.mean())
    var = _var(resid) / yy.size + (lam * lam * _var(fu) / fu.size if fu.size else 0.0)
    se, z = math.sqrt(var), z_value(level)
    ci = Interval(est, est - z * se, est + z * se)
    return MeanEstimate(ci, se, yy.size, fu.size, lam, level, method)


def difference(a: MeanEstimate, b: MeanEstimate) -> Difference:
    """``a - b`` for two normal-interval estimates on disjoint, independent items.

    Their errors are independent, so the variances add.
    """
    if a.level != b.level:
        raise UsageError(f"cannot combine intervals at levels {a.level} and {b.level}")
    d, se, z = a.estimate - b.estimate, math.hypot(a.se, b.se), z_value(a.level)
    return Difference(Interval(d, d - z * se, d + z * se), se, a.level, a.method)


def newcombe_difference(y_a: ArrayLike, y_b: ArrayLike, *, level: float = 0.9) -> Difference:
    """Newcombe's hybrid score interval for a difference of two rates (human only).

    Method 10 of Newcombe (1998), built from the two Wilson intervals; it stays
    inside [-1, 1] and behaves well for small n and rates near 0 or 1.

    >>> d = newcombe_difference([1] * 56 + [0] * 14, [1] * 48 + [0] * 32, level=0.95)
    >>> format(d.interval, ".4f")
    '0.2000 [0.0524, 0.3339]'
    """
    (pa, lo_a, hi_a, n_a), (pb, lo_b, hi_b, n_b) = _wilson(y_a, level), _wilson(y_b, level)
    d = pa - pb
    lo = d - math.sqrt((pa - lo_a) ** 2 + (hi_b - pb) ** 2)
    hi = d + math.sqrt((hi_a - pa) ** 2 + (pb - lo_b) ** 2)
    se = math.hypot(math.sqrt(pa * (1 - pa) / n_a), math.sqrt(pb * (1 - pb) / n_b))
    return Difference(Interval(d, lo, hi), se, level, "newcombe")


def clustered_se(
    y: ArrayLike, f: ArrayLike, clusters: Sequence[object] | np.ndarray, lam: float
) -> tuple[float, int]:
    """Cluster-robust (sandwich) standard error of the PPI estimate, and the cluster count.

    Items in one cluster (the turns of one dialogue, the answers to one prompt) are
    not independent. The estimate ``lam * mean(f_u) + mean(y - lam * f)_l`` is a sum
    of per-item terms ``psi``: ``(r_i - mean(r)) / n`` on a labelled item
    (``r = y - lam * f``), ``lam * (f_i - mean(f_u)) / N`` on an unlabelled one. Its
    variance is the sum over clusters of each cluster's summed ``psi`` squared, times
    ``G / (G - 1)`` (G clusters holding a term); terms of one cluster add before
    squaring, so correlated items widen the interval as they should. With ``lam = 0``
    it is the human-only mean's clustered error. One item per cluster gives the iid
    error up to the small-sample factors.

    Args:
        y: the human label per item, NaN where none.
        f: the cheap prediction per item.
        clusters: the cluster of each item (any hashable values).
        lam: the weight on the cheap predictions.

    Raises:
        UsageError: arrays of unequal length, or fewer than 2 clusters with labels.

    >>> se, g = clustered_se([1, 1, 0, 0], [0.5] * 4, ["a", "a", "b", "b"], lam=0.0)
    >>> round(se, 4), g  # two clusters of two identical labels: n is 2, not 4
    (0.5, 2)
    """
    yy = np.asarray(y, dtype=float).ravel()
    ff = _vector(f, "f")
    keys = np.asarray([str(c) for c in clusters], dtype=object)
    if not yy.size == ff.size == keys.size:
        raise UsageError(
            f"y, f and clusters must cover the same items: got {yy.size}, {ff.size}, {keys.size}"
        )
    has = ~np.isnan(yy)
    n, N = int(has.sum()), int((~has).sum())
    psi = np.zeros(yy.size)
    if n:
        r = yy[has] - lam * ff[has]
        psi[has] = (r - r.mean()) / n
    if N and lam:
        psi[~has] = lam * (ff[~has] - ff[~has].mean()) / N
    counted = has | (lam != 0.0)
    _, index = np.unique(keys[counted], return_inverse=True)
    sums = np.bincount(index, weights=psi[counted])
    g = int(sums.size)
    if len(np.unique(keys[has])) < 2:
        raise UsageError(
            f"need human labels in at least 2 clusters for a clustered interval, got "
            f"{len(np.unique(keys[has]))}; label items of more clusters"
        )
    return math.sqrt(g / (g - 1) * float((sums**2).sum())), g
