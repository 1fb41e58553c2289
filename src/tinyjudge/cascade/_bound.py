"""The exact binomial bound and the fixed-sequence choice of a confidence threshold.

"Trust or Escalate" (Jung et al., ICLR 2025): order the thresholds from most to
least confident and test, at each, the null hypothesis "agreement on the items
kept at this threshold is below ``target``" with an exact binomial test at level
``delta``; stop at the first threshold whose test fails and keep the last one that
passed. Since the order is fixed before any agreement is seen (it depends on the
model's confidences only), no correction for the number of tests is needed: the
agreement on kept items is at least ``target`` with probability at least
``1 - delta``.

The test passes exactly when the one-sided Clopper-Pearson lower bound of the
agreement reaches ``target``: ``P(Binomial(n, target) >= k) <= delta``.

Items of one dialogue, prompt or question are not independent, and the binomial
bound then claims more than the data hold. With a group per item the test uses
the Korn-Graubard form of Clopper-Pearson instead (:func:`korn_graubard_lower`):
the agreement is the ratio estimator over groups, its variance the between-group
one, and the exact beta quantile is taken at the design-effect-adjusted effective
sample size (valid as the number of groups grows). ``bound="exact"`` keeps one
random item per group and applies the plain binomial bound to those: exact for
any within-group correlation, at the price of the other items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from tinyjudge.results import fields_dict

from ._binomial import clopper_pearson, clopper_pearson_lower
from ._cluster import cluster_count, df_shrink, one_per_group

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson",
    "Bound",
    "MIN_GROUPS",
    "fewest_to_pass",
    "ThresholdStep",
    "ThresholdChoice",
    "choose_threshold",
]


# the bound a threshold is tested with: items independent, groups (Korn-Graubard), or
# one random item per group (exact)
Bound = Literal["item", "cluster", "exact"]
# the fewest groups whose kept items the cluster bound is asked to rest on
MIN_GROUPS = 30


def _first_cluster_test(
    codes: np.ndarray, first: int, min_groups: int, target: float, delta: float
) -> int:
    """The first kept set (most confident first) worth testing under the cluster bound.

    It spans ``min_groups`` groups, and a perfect record on it could pass: at agreement 1
    the bound is ``delta ** (1 / n_eff)`` with ``n_eff = n (z / t) ** 2``, so the t
    adjustment asks for a few more items than :func:`fewest_to_pass` (a test that could
    not pass would stop the sequence for nothing). Groups only: the order stays fixed.
    """
    new = np.zeros(len(codes), dtype=bool)
    _, where = np.unique(codes, return_index=True)
    new[where] = True
    spans = np.cumsum(new)
    need = math.log(delta) / math.log(target)
    m = max(first, int(np.searchsorted(spans, min_groups)) + 1)
    while m <= len(codes) and m * df_shrink(int(spans[m - 1]) - 1, delta) < need:
        m += 1
    return m


def fewest_to_pass(target: float, delta: float) -> int:
    """The fewest items whose bound can reach ``target`` (all agreeing: ``delta ** (1/n)``).

    >>> fewest_to_pass(0.95, 0.1)
    45
    """
    return max(1, math.ceil(math.log(delta) / math.log(target) - 1e-12))


@dataclass(frozen=True)
class ThresholdStep:
    """One tested threshold: the calibration items it keeps and their agreement.

    ``groups`` counts the groups among them and ``n_eff`` what they are worth to the
    bound (``n`` under the item bound; the exact bound's items are one per group).
    """

    threshold: float
    n: int
    agree: int
    lower: float
    passed: bool
    groups: int = 0
    n_eff: float = 0.0

    @property
    def agreement(self) -> float:
        """``agree / n``."""
        return self.agree / self.n if self.n else math.nan

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields, with the share ``agreement`` in place of the count."""
        return fields_dict(self, skip=("agree",)) | {"agreement": self.agreement}


@dataclass(frozen=True)
class ThresholdChoice:
    """The chosen threshold (``None``: none could be guaranteed) and every test run.

    Attributes:
        bound: how each threshold was tested (``item``, ``cluster`` or ``exact``).
        n_groups: groups among the calibration items (``n_calibration`` under ``item``).
        n_used: calibration items the tests read (one per group under ``exact``).
        too_few_groups: the cluster bound was not tried: fewer than ``min_groups``
            groups among the calibration items.
    """

    threshold: float | None
    target: float
    delta: float
    n_calibration: int
    steps: list[ThresholdStep] = field(default_factory=list)
    bound: Bound = "item"
    n_groups: int = 0
    n_used: int = 0
    too_few_groups: bool = False

    @property
    def guaranteed(self) -> bool:
        """Whether some threshold passed its test."""
        return self.threshold is not None

    @property
    def chosen(self) -> ThresholdStep | None:
        """The last step that passed (the chosen threshold's figures)."""
        passed = [s for s in self.steps if s.passed]
        return passed[-1] if passed else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields but ``target`` and ``delta`` (the caller's own), the
        steps as ``tests``, then whether a threshold passed."""
        out = fields_dict(self, rename={"steps": "tests"}, skip=("target", "delta"))
        return out | {"guaranteed": self.guaranteed}


def choose_threshold(
    confidence: ArrayLike,
    agree: ArrayLike,
    *,
    target: float,
    delta: float,
    step: float = 0.02,
    groups: ArrayLike | None = None,
    bound: Bound | None = None,
    min_groups: int = MIN_GROUPS,
    seed: int = 0,
) -> ThresholdChoice:
    """Fixed-sequence testing of confidence thresholds, most confident first.

    The sequence starts where the most confident :func:`fewest_to_pass` items are
    kept (fewer could never pass), from at least ``min_groups`` groups under the
    cluster bound, and grows the kept set by ``step`` of the calibration items at a
    time; it depends on the confidences and groups only, never on agreement.

    Args:
        confidence: the cheap source's confidence on each calibration item.
        agree: whether its label agrees with the reference's on that item.
        target: the agreement to guarantee on kept items.
        delta: the probability that the guarantee may fail.
        step: the share of calibration items added between two tests.
        groups: each item's group (dialogue, prompt, question); ``None``: independent.
        bound: ``item`` (binomial), ``cluster`` (Korn-Graubard over ``groups``) or
            ``exact`` (binomial on one random item per group); default ``cluster``
            with groups, ``item`` without.
        min_groups: under ``cluster``, the fewest groups a tested kept set spans; with
            fewer groups in all no threshold is tested (``too_few_groups``).
        seed: which item of each group ``exact`` keeps.

    >>> conf = [0.99] * 50 + [0.6] * 50
    >>> ok = [True] * 50 + [False] * 25 + [True] * 25
    >>> choose_threshold(conf, ok, target=0.95, delta=0.1).threshold
    0.99

    The same items as ten prompts of five answers each: the variance over ten groups has
    9 degrees of freedom, so a perfect record is worth ``(z / t) ** 2 = 0.86`` of its items
    and needs 53 of them to pass, more than the 50 sure ones; the first test keeps the
    next ties too, and fails:

    >>> g = [i // 5 for i in range(100)]
    >>> by_prompt = choose_threshold(conf, ok, target=0.95, delta=0.1, groups=g, min_groups=5)
    >>> by_prompt.threshold is None, by_prompt.steps[0].n
    (True, 100)
    """
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(agree, dtype=bool)
    n = len(conf)
    how: Bound = bound or ("item" if groups is None else "cluster")
    if how != "item" and groups is None:
        raise ValueError(f"bound={how!r} needs groups: one group key per calibration item")
    if groups is None or how == "item":
        codes = np.arange(n)
    else:
        _, codes = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    n_groups = int(codes.max()) + 1 if n else 0
    if how == "exact":
        units = one_per_group(codes, seed)
        conf, hit, codes = conf[units], hit[units], np.arange(len(units))
    choice = ThresholdChoice(None, target, delta, n, [], how, n_groups, len(conf))
    if how == "cluster" and n_groups < min_groups:
        return ThresholdChoice(None, target, delta, n, [], how, n_groups, len(conf), True)
    first = fewest_to_pass(target, delta)
    m_all = len(conf)
    if m_all < first:
        return choice
    order = np.argsort(-conf, kind="stable")
    ordered = conf[order]
    if how == "cluster":
        first = _first_cluster_test(codes[order], first, min_groups, target, delta)
        if first > m_all:  # even a perfect record on every item could not pass
            return choice
    stride = max(1, math.ceil(step * m_all))
    steps: list[ThresholdStep] = []
    chosen: float | None = None
    tried: set[float] = set()
    for m in [*range(first, m_all + 1, stride), m_all]:
        lam = float(ordered[m - 1])
        if lam in tried:  # ties: this threshold keeps what the last one kept
            continue
        tried.add(lam)
        kept = conf >= lam
        nk, k = int(kept.sum()), int(hit[kept].sum())
        if how == "cluster":
            kg = np.bincount(codes[kept], weights=hit[kept], minlength=n_groups)
            ng = np.bincount(codes[kept], minlength=n_groups)
            c = cluster_count(kg, ng, delta)
            lower, n_eff, spans = c.lower(delta), c.n_eff, c.groups
        else:
            lower, n_eff, spans = clopper_pearson_lower(k, nk, delta), float(nk), nk
        passed = lower >= target
        steps.append(ThresholdStep(lam, nk, k, lower, passed, spans, n_eff))
        if not passed:
            break
        chosen = lam
    return ThresholdChoice(chosen, target, delta, n, steps, how, n_groups, m_all)
