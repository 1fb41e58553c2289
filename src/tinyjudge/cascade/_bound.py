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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import betaincinv

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson",
    "fewest_to_pass",
    "ThresholdStep",
    "ThresholdChoice",
    "choose_threshold",
]


def clopper_pearson_lower(k: int, n: int, delta: float) -> float:
    """The exact one-sided lower confidence bound of a binomial proportion.

    The ``p`` at which ``P(Binomial(n, p) >= k) = delta``: the ``delta``
    quantile of ``Beta(k, n - k + 1)``; 0 when ``k = 0``.

    Args:
        k: successes (agreements).
        n: trials (items).
        delta: the error rate of the bound (its level is ``1 - delta``).

    >>> round(clopper_pearson_lower(10, 10, 0.1), 4)  # all agree: delta ** (1 / n)
    0.7943
    >>> round(clopper_pearson_lower(9, 10, 0.025), 4)  # the textbook 95% CI of 9/10
    0.555
    """
    if n <= 0 or k <= 0:
        return 0.0
    return float(betaincinv(k, n - k + 1, delta))


def clopper_pearson(k: int, n: int, delta: float) -> tuple[float, float]:
    """The exact two-sided ``1 - delta`` interval ``(low, high)`` of ``k / n``."""
    if n <= 0:
        return (math.nan, math.nan)
    low = clopper_pearson_lower(k, n, delta / 2)
    high = 1.0 - clopper_pearson_lower(n - k, n, delta / 2)
    return (low, high)


def fewest_to_pass(target: float, delta: float) -> int:
    """The fewest items whose bound can reach ``target`` (all agreeing: ``delta ** (1/n)``).

    >>> fewest_to_pass(0.95, 0.1)
    45
    """
    return max(1, math.ceil(math.log(delta) / math.log(target) - 1e-12))


@dataclass(frozen=True)
class ThresholdStep:
    """One tested threshold: the calibration items it keeps and their agreement."""

    threshold: float
    n: int
    agree: int
    lower: float
    passed: bool

    @property
    def agreement(self) -> float:
        """``agree / n``."""
        return self.agree / self.n if self.n else math.nan


@dataclass(frozen=True)
class ThresholdChoice:
    """The chosen threshold (``None``: none could be guaranteed) and every test run."""

    threshold: float | None
    target: float
    delta: float
    n_calibration: int
    steps: list[ThresholdStep] = field(default_factory=list)

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
        """The JSON form."""
        return {
            "threshold": self.threshold,
            "guaranteed": self.guaranteed,
            "n_calibration": self.n_calibration,
            "tests": [
                {"threshold": s.threshold, "n": s.n, "agreement": s.agreement,
                 "lower": s.lower, "passed": s.passed}
                for s in self.steps
            ],
        }  # fmt: skip


def choose_threshold(
    confidence: Any, agree: Any, *, target: float, delta: float, step: float = 0.02
) -> ThresholdChoice:
    """Fixed-sequence testing of confidence thresholds, most confident first.

    The sequence starts where the most confident :func:`fewest_to_pass` items are
    kept (fewer could never pass) and grows the kept set by ``step`` of the
    calibration items at a time; it depends on the confidences only.

    Args:
        confidence: the cheap source's confidence on each calibration item.
        agree: whether its label agrees with the reference's on that item.
        target: the agreement to guarantee on kept items.
        delta: the probability that the guarantee may fail.
        step: the share of calibration items added between two tests.

    >>> conf = [0.99] * 50 + [0.6] * 50
    >>> ok = [True] * 50 + [False] * 25 + [True] * 25
    >>> choose_threshold(conf, ok, target=0.95, delta=0.1).threshold
    0.99
    """
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(agree, dtype=bool)
    n = len(conf)
    choice = ThresholdChoice(None, target, delta, n)
    first = fewest_to_pass(target, delta)
    if n < first:
        return choice
    ordered = np.sort(conf)[::-1]
    stride = max(1, math.ceil(step * n))
    steps: list[ThresholdStep] = []
    chosen: float | None = None
    seen: set[float] = set()
    for m in [*range(first, n + 1, stride), n]:
        lam = float(ordered[m - 1])
        if lam in seen:  # ties: this threshold keeps what the last one kept
            continue
        seen.add(lam)
        kept = conf >= lam
        nk, k = int(kept.sum()), int(hit[kept].sum())
        lower = clopper_pearson_lower(k, nk, delta)
        passed = lower >= target
        steps.append(ThresholdStep(lam, nk, k, lower, passed))
        if not passed:
            break
        chosen = lam
    return ThresholdChoice(chosen, target, delta, n, steps)
