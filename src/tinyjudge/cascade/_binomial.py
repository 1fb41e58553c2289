"""The exact (Clopper-Pearson) bounds of a binomial proportion: the one beta quantile that the
item-level, the one-per-group and the Korn-Graubard (effective sample size) bounds all take."""

from __future__ import annotations

import math

from scipy.special import betaincinv

__all__ = ["clopper_pearson_lower", "clopper_pearson"]


def clopper_pearson_lower(k: float, n: float, delta: float) -> float:
    """The exact one-sided lower confidence bound of a binomial proportion.

    The ``p`` at which ``P(Binomial(n, p) >= k) = delta``: the ``delta``
    quantile of ``Beta(k, n - k + 1)``; 0 when ``k = 0``.

    Args:
        k: successes (agreements); a non-whole count where ``n`` is an effective
            sample size (the Korn-Graubard bound of :mod:`._cluster`).
        n: trials (items), or the effective sample size.
        delta: the error rate of the bound (its level is ``1 - delta``).

    >>> round(clopper_pearson_lower(10, 10, 0.1), 4)  # all agree: delta ** (1 / n)
    0.7943
    >>> round(clopper_pearson_lower(9, 10, 0.025), 4)  # the textbook 95% CI of 9/10
    0.555
    """
    if n <= 0 or k <= 0:
        return 0.0
    return float(betaincinv(k, n - k + 1, delta))


def clopper_pearson(k: float, n: float, delta: float) -> tuple[float, float]:
    """The exact two-sided ``1 - delta`` interval ``(low, high)`` of ``k / n``."""
    if n <= 0:
        return (math.nan, math.nan)
    low = clopper_pearson_lower(k, n, delta / 2)
    high = 1.0 - clopper_pearson_lower(n - k, n, delta / 2)
    return (low, high)
