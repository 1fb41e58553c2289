"""Active labelling: which items people should label next, and the estimate that stays valid.

The design is stratified sampling on the cheap score (Cochran, 1977, ch. 5):
items fall into equal-width bins of the cheap prediction, and each new label goes
to the bin where one more label shrinks the variance most (greedy Neyman
allocation, with the cheap model's own uncertainty sqrt(p(1 - p)) standing in
for the unknown spread of the human labels). Inside a bin the item is drawn
uniformly at random, so whatever the allocation, the labelled items of each bin
are a uniform sample of that bin, and :func:`stratified_ppi_mean` (bin-wise PPI
weighted by bin size) is unbiased with a valid interval. Unlike inverse-probability
weighting (Zrnic & Candès, 2024, "Active statistical inference"), nothing about the
selection has to be recorded: the bins are recomputed from the cheap scores. Labels
from a plain uniform sample are valid for the stratified estimate as well.
"""

from __future__ import annotations

import math

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.results import Interval

from ._ppi import ArrayLike, MeanEstimate, z_value

__all__ = ["cheap_strata", "select_for_labelling", "stratified_ppi_mean"]

# A bin's human labels may disagree with a confident cheap model; a floor on the
# assumed spread keeps confident bins from being starved of labels.
_MIN_SPREAD = 0.1


def _probabilities(cheap: ArrayLike) -> np.ndarray:
    arr = np.asarray(cheap, dtype=float).ravel()
    if arr.size and (not np.all(np.isfinite(arr)) or arr.min() < 0.0 or arr.max() > 1.0):
        raise UsageError(
            "cheap predictions must be probabilities in [0, 1]; "
            f"got values from {np.nanmin(arr):.4g} to {np.nanmax(arr):.4g}"
        )
    return arr


def cheap_strata(cheap: ArrayLike, n_strata: int = 5) -> np.ndarray:
    """The bin of each cheap prediction: ``floor(p * n_strata)``, with p = 1 in the top bin.

    Fixed equal-width bins (not quantiles) keep an item's bin the same when more
    items arrive.
    """
    if n_strata < 1:
        raise UsageError(f"n_strata must be at least 1, got {n_strata}")
    p = _probabilities(cheap)
    return np.minimum((p * n_strata).astype(int), n_strata - 1)


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def select_for_labelling(
    cheap: np.ndarray,
    labelled: np.ndarray,
    k: int = 1,
    rng: np.random.Generator | int | None = None,
    *,
    n_strata: int = 5,
    min_per_stratum: int = 2,
) -> np.ndarray:
    """Indices of the next ``k`` unlabelled items to send to people.

    Each pick goes to the bin (of :func:`cheap_strata`) whose next label cuts the
    stratified variance ``sum_h W_h^2 s_h^2 / n_h`` most, after every non-empty bin
    has ``min_per_stratum`` labels; within the bin the item is uniformly random.
    Estimate with :func:`stratified_ppi_mean` with the same ``n_strata``: the
    plain PPI or human-only estimates are biased once bins are labelled at
    different rates.

    Args:
        cheap: the cheap model's probability of the behaviour, one per item.
        labelled: True where an item already has a human label.
        k: how many items to pick.
        rng: a numpy Generator or seed; None draws fresh entropy.
        n_strata: number of equal-width bins of the cheap score.
        min_per_stratum: labels every non-empty bin gets first (2 gives each bin a
            variance estimate).

    Returns:
        Up to ``k`` distinct indices into ``cheap`` (fewer when fewer items are
        unlabelled), in the order they were picked.

    Raises:
        TinyjudgeError: ``cheap`` not in [0, 1], arrays of unequal length, or k < 1.
    """
    p = _probabilities(cheap)
    done = np.asarray(labelled, dtype=bool).ravel()
    if done.size != p.size:
        raise UsageError(f"cheap has {p.size} items but labelled has {done.size}")
    if k < 1:
        raise UsageError(f"k must be at least 1, got {k}")
    gen = _rng(rng)
    strata = cheap_strata(p, n_strata)
    n_total = p.size
    pools: dict[int, list[int]] = {}
    weight2: dict[int, float] = {}
    count: dict[int, int] = {}
    for h in np.unique(strata):
        members = np.flatnonzero(strata == h)
        free = members[~done[members]]
        pools[int(h)] = list(gen.permutation(free))
        spread2 = max(float(np.mean(p[members] * (1 - p[members]))), _MIN_SPREAD**2)
        weight2[int(h)] = (members.size / n_total) ** 2 * spread2
        count[int(h)] = int(done[members].sum())
    picks: list[int] = []
    while len(picks) < k:
        open_bins = [h for h, pool in pools.items() if pool]
        if not open_bins:
            break

        def gain(h: int) -> tuple[int, float]:
            if count[h] < min_per_stratum:
                return (1, -count[h])
            return (0, weight2[h] / (count[h] * (count[h] + 1)))

        best = max(open_bins, key=gain)
        picks.append(int(pools[best].pop()))
        count[best] += 1
    return np.asarray(picks, dtype=np.intp)


def stratified_ppi_mean(
    cheap: ArrayLike,
    human: ArrayLike,
    *,
    n_strata: int = 5,
    level: float = 0.9,
    use_cheap: bool = True,
) -> MeanEstimate:
    """E[Y] from labels picked by :func:`select_for_labelling` (or uniformly at random).

    In bin h (``N_h`` items, ``n_h`` labelled) the bin mean is PPI with lam = 1,
    ``mean(f_unlabelled) + mean(Y - f)_labelled``; the rate is the bin means
    weighted by ``W_h = N_h / N``. Its variance adds the bins' variances
    ``W_h^2 (var(f)/N_h,u + var(Y - f)/n_h)`` and, because the bin sizes are
    themselves random, ``sum_h W_h (theta_h - theta)^2 / N``. A bin's residual
    variance is at least ``q (1 - q)``, q its human rate shrunk towards 1/2
    (``(sum y + 1/2) / (n_h + 1)``), so that a bin whose few labels agree does not
    claim certainty; a bin with a single label uses it with the largest variance
    a [0, 1] value can have (1/4).

    Args:
        cheap: cheap probabilities on all N items.
        human: the human label (0/1 or soft) per item, NaN where there is none.
        n_strata: the bins, as given to :func:`select_for_labelling`.
        level: nominal coverage.
        use_cheap: False leaves the cheap scores out inside bins (the human-only
            counterpart under this design: bin means of the human labels).

    Raises:
        TinyjudgeError: a non-empty bin without any human label, or bad input.
    """
    p = _probabilities(cheap)
    y = np.asarray(human, dtype=float).ravel()
    if y.size != p.size:
        raise UsageError(f"cheap has {p.size} items but human has {y.size}")
    has = ~np.isnan(y)
    if has.sum() < 2:
        raise UsageError(f"need at least 2 human labels, got {int(has.sum())}")
    strata = cheap_strata(p, n_strata)
    n_total = p.size
    means, weights, variances = [], [], []
    for h in np.unique(strata):
        in_h = strata == h
        lab, unl = in_h & has, in_h & ~has
        n_h = int(lab.sum())
        if n_h == 0:
            lo, hi = h / n_strata, (h + 1) / n_strata
            raise UsageError(
                f"no human label among the {int(in_h.sum())} items with cheap score in "
                f"[{lo:.2g}, {hi:.2g}); the stratified estimate needs labels in every bin "
                "(select_for_labelling gives each bin some first)"
            )
        w = in_h.sum() / n_total
        # A bin's few labels often all agree (a sample variance of 0, claiming certainty).
        # Inside a narrow bin f hardly varies, so Var(Y - f) is about Var(Y) <= q(1 - q)
        # for labels in [0, 1]; q is the bin's rate shrunk towards 1/2 (Jeffreys prior).
        q = (float(y[lab].sum()) + 0.5) / (n_h + 1)
        floor = q * (1.0 - q)
        if n_h == 1:
            theta, var = float(y[lab][0]), 0.25
        elif use_cheap and unl.any():
            resid = y[lab] - p[lab]
            theta = float(p[unl].mean() + resid.mean())
            var = max(float(np.var(resid, ddof=1)), floor) / n_h
            if unl.sum() > 1:
                var += float(np.var(p[unl], ddof=1)) / int(unl.sum())
        else:
            theta = float(y[lab].mean())
            var = max(float(np.var(y[lab], ddof=1)), floor) / n_h
        means.append(theta)
        weights.append(w)
        variances.append(var)
    m, wt, v = np.asarray(means), np.asarray(weights), np.asarray(variances)
    est = float(wt @ m)
    total = float(wt**2 @ v + wt @ (m - est) ** 2 / n_total)
    se, z = math.sqrt(total), z_value(level)
    n_h_total, n_u = int(has.sum()), int((~has).sum())
    method = "stratified" if use_cheap else "stratified-human"
    ci = Interval(est, est - z * se, est + z * se)
    return MeanEstimate(ci, se, n_h_total, n_u, float(use_cheap), level, method)
