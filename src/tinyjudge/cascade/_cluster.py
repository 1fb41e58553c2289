"""Bounds on agreement when items come in groups: Korn-Graubard, and one item per group.

Items of one dialogue, prompt or question share most of what decides their label; a
binomial bound that counts them as independent claims more than they hold. The
Korn-Graubard form of Clopper-Pearson (Korn and Graubard, 1998) takes the agreement as
the ratio estimator over groups, its variance as the between-group one, and the exact
beta quantile at the design-effect-adjusted effective sample size: valid as the number
of groups grows. Keeping one random item per group makes the plain binomial bound exact
again, for any within-group correlation.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm
from scipy.stats import t as student_t

from ._binomial import clopper_pearson, clopper_pearson_lower

__all__ = [
    "ClusterCount",
    "cluster_count",
    "korn_graubard_lower",
    "korn_graubard",
    "korn_graubard_items",
    "one_per_group",
    "df_shrink",
]


class ClusterCount(NamedTuple):
    """Agreement over groups and the sample size it is worth (:func:`cluster_count`).

    Attributes:
        agreement: the ratio estimator ``sum(k_g) / sum(n_g)``.
        n: items.
        groups: groups with at least one item.
        deff: the design effect (the ratio estimator's between-group variance over the
            binomial one), at least 1.
        n_eff: the effective sample size ``n / deff``, shrunk for the ``groups - 1``
            degrees of freedom of the variance by ``(z_delta / t_delta) ** 2``.
    """

    agreement: float
    n: int
    groups: int
    deff: float
    n_eff: float

    def lower(self, delta: float) -> float:
        """The exact one-sided lower bound at the effective sample size (0 when none agree)."""
        return clopper_pearson_lower(self.agreement * self.n_eff, self.n_eff, delta)


def cluster_count(k: ArrayLike, n: ArrayLike, delta: float) -> ClusterCount:
    """The Korn-Graubard effective sample size of a proportion from clustered items.

    ``deff = v / (p (1 - p) / n)`` with ``v = G / (G - 1) * sum((k_g - p n_g) ** 2) / n ** 2``
    the with-replacement variance of the ratio estimator ``p`` over ``G`` groups. A
    design effect below 1 is taken as 1 (the bound is never tighter than the binomial
    one), and so is the one of ``p`` at 0 or 1, where the groups carry no variance to
    measure. One group is worth one item.

    Args:
        k: agreements per group.
        n: items per group (groups without items are ignored).
        delta: the one-sided error rate of the bound the count is for (the degrees of
            freedom adjustment compares the ``1 - delta`` quantiles of t and normal).

    Four groups of two, one of them wholly in disagreement: ``p = 6/8``, the residuals
    ``k_g - p n_g`` are ``0.5, 0.5, -1.5, 0.5``, ``v = 4/3 * 3 / 64 = 1/16`` against the
    binomial ``0.1875 / 8``: ``deff = 8/3``, so 3 effective items before the t adjustment.

    >>> c = cluster_count([2, 2, 0, 2], [2, 2, 2, 2], delta=0.1)
    >>> c.agreement, round(c.deff, 4), c.groups
    (0.75, 2.6667, 4)
    >>> round(c.n_eff / 3, 4) == round((1.2815516 / 1.6377444) ** 2, 4)  # z_0.9 / t_{3, 0.9}
    True
    >>> cluster_count([1] * 10, [1] * 10, 0.1).n_eff < 10  # p = 1: deff 1, t's nine df
    True
    """
    kg = np.asarray(k, dtype=np.float64)
    ng = np.asarray(n, dtype=np.float64)
    some = ng > 0
    kg, ng = kg[some], ng[some]
    groups, total = int(len(ng)), float(ng.sum())
    if total <= 0:
        return ClusterCount(math.nan, 0, 0, math.nan, 0.0)
    p = float(kg.sum()) / total
    if groups < 2:
        return ClusterCount(p, int(total), groups, total, 1.0)
    deff = 1.0
    if 0.0 < p < 1.0:
        v = groups / (groups - 1) * float(((kg - p * ng) ** 2).sum()) / total**2
        deff = max(1.0, v / (p * (1.0 - p) / total))
    return ClusterCount(p, int(total), groups, deff, total / deff * df_shrink(groups - 1, delta))


@lru_cache(maxsize=4096)
def df_shrink(df: int, delta: float) -> float:
    # (z / t) ** 2 at the one-sided 1 - delta quantiles; cached, since a threshold scan asks
    # for the same few degrees of freedom again and again and t's quantile is slow
    return min(1.0, float((norm.ppf(1.0 - delta) / student_t.ppf(1.0 - delta, df)) ** 2))


def korn_graubard_lower(k: ArrayLike, n: ArrayLike, delta: float) -> float:
    """The Korn-Graubard one-sided lower bound of a proportion from clustered items.

    The exact Clopper-Pearson bound at the effective sample size of
    :func:`cluster_count`: the ``delta`` quantile of
    ``Beta(p n_eff, (1 - p) n_eff + 1)``; 0 when nothing agrees.

    Args:
        k: agreements per group.
        n: items per group.
        delta: the error rate of the bound (its level is ``1 - delta``).

    With every group of one item it is close to the binomial bound (the design
    effect ``n / (n - 1)`` and 99 degrees of freedom cost little):

    >>> round(korn_graubard_lower([1] * 95 + [0] * 5, [1] * 100, 0.1), 4)
    0.9086
    >>> from tinyjudge.cascade import clopper_pearson
    >>> round(clopper_pearson(95, 100, 0.2)[0], 4)  # its lower end: the one-sided bound
    0.9092

    Twenty groups of five that agree or disagree as a block: the residuals are 0.25
    (19 times) and -4.75, ``v = 20/19 * 23.75 / 100 ** 2 = 0.0025`` against the
    binomial ``0.95 * 0.05 / 100``, so ``deff = 100/19`` and the 100 items are worth 19
    (17.70 after the t adjustment):

    >>> c = cluster_count([5] * 19 + [0], [5] * 20, 0.1)
    >>> round(c.deff * 19, 6), round(c.n_eff, 2)
    (100.0, 17.7)
    >>> round(korn_graubard_lower([5] * 19 + [0], [5] * 20, 0.1), 4)
    0.8061
    >>> from scipy.special import betaincinv
    >>> float(betaincinv(0.95 * c.n_eff, 0.05 * c.n_eff + 1, 0.1)).__round__(4)
    0.8061
    """
    return cluster_count(k, n, delta).lower(delta)


def korn_graubard(k: ArrayLike, n: ArrayLike, delta: float) -> tuple[float, float]:
    """The two-sided ``1 - delta`` Korn-Graubard interval ``(low, high)``.

    >>> low, high = korn_graubard([5] * 19 + [0], [5] * 20, 0.1)
    >>> round(low, 3), round(high, 3)
    (0.764, 0.998)
    """
    c = cluster_count(k, n, delta / 2)
    return clopper_pearson(c.agreement * c.n_eff, c.n_eff, delta)


def korn_graubard_items(agree: ArrayLike, groups: ArrayLike, delta: float) -> tuple[float, float]:
    """:func:`korn_graubard` from one agreement (0/1) and one group key per item.

    Twenty groups of five, the last all in disagreement (as :func:`korn_graubard`'s example):

    >>> keys = [f"g{i // 5}" for i in range(100)]
    >>> by_group = korn_graubard([5] * 19 + [0], [5] * 20, 0.1)
    >>> korn_graubard_items([1] * 95 + [0] * 5, keys, 0.1) == by_group
    True
    """
    names, codes = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    k = np.bincount(codes, weights=np.asarray(agree, dtype=float), minlength=len(names))
    return korn_graubard(k, np.bincount(codes, minlength=len(names)), delta)


def one_per_group(groups: ArrayLike, seed: int = 0) -> np.ndarray:
    """The index of one random item per group (sorted): the units of the exact bound.

    >>> one_per_group(["a", "a", "b", "c", "c", "c"], seed=0).tolist()
    [0, 2, 3]
    """
    keys = np.asarray(groups, dtype=object)
    order = np.random.default_rng(seed).permutation(len(keys))
    first: dict[Any, int] = {}
    for i in order:
        first.setdefault(keys[i], int(i))
    return np.sort(np.fromiter(first.values(), dtype=int, count=len(first)))
