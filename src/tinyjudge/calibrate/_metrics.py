"""Calibration metrics: ECE (equal-width and equal-mass bins), MCE, Brier score, NLL.

ECE and MCE are top-label: a prediction's confidence is its largest class
probability, and it is correct when that class is the true one. A source is
calibrated when, among predictions made with confidence 0.8, 80% are correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from tinyjudge._stats import bootstrap_many
from tinyjudge.calibrate._calibrators import check_probs
from tinyjudge.errors import UsageError

__all__ = [
    "METRIC_NAMES",
    "Strategy",
    "ReliabilityCurve",
    "reliability_curve",
    "expected_calibration_error",
    "max_calibration_error",
    "brier_score",
    "nll",
    "calibration_metrics",
    "METRICS",
]

Strategy = Literal["uniform", "quantile"]


class ReliabilityCurve(NamedTuple):
    """Per-bin mean confidence, accuracy and number of items ``n`` (empty bins left out)."""

    confidence: np.ndarray
    accuracy: np.ndarray
    n: np.ndarray


def _check(y: Any, P: Any) -> tuple[np.ndarray, np.ndarray]:
    P = check_probs(P)
    y = np.asarray(y)
    if y.shape != (P.shape[0],):
        raise UsageError(f"y must have one class index per row of P ({P.shape[0]}), got {y.shape}")
    if P.shape[0] == 0:
        raise UsageError("no items: calibration metrics need at least one")
    if y.dtype.kind not in "iu" or (y < 0).any() or (y >= P.shape[1]).any():
        raise UsageError(f"y must hold class indices 0..{P.shape[1] - 1}")
    return y.astype(np.intp), P


def _bin_ids(conf: np.ndarray, n_bins: int, strategy: Strategy) -> np.ndarray:
    if n_bins < 1:
        raise UsageError(f"n_bins must be at least 1, got {n_bins}")
    if strategy == "uniform":
        # bin b holds confidences in (b/B, (b+1)/B]; 1/k is the floor, so low bins stay empty
        return np.clip(np.ceil(conf * n_bins).astype(np.intp) - 1, 0, n_bins - 1)
    if strategy == "quantile":
        # equal-mass: the sorted confidences cut into n_bins nearly equal runs
        order = np.argsort(conf, kind="stable")
        sizes = [len(c) for c in np.array_split(order, min(n_bins, len(conf)))]
        ids = np.empty(len(conf), dtype=np.intp)
        ids[order] = np.repeat(np.arange(len(sizes)), sizes)
        return ids
    raise UsageError(f'strategy must be "uniform" or "quantile", got {strategy!r}')


def _curve(y: np.ndarray, P: np.ndarray, n_bins: int, strategy: Strategy) -> ReliabilityCurve:
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(float)
    ids = _bin_ids(conf, n_bins, strategy)
    count = np.bincount(ids, minlength=n_bins)
    keep = count > 0
    c = count[keep]
    return ReliabilityCurve(
        np.bincount(ids, conf, minlength=n_bins)[keep] / c,
        np.bincount(ids, correct, minlength=n_bins)[keep] / c,
        c,
    )


def _ece(y: np.ndarray, P: np.ndarray, n_bins: int = 15, strategy: Strategy = "uniform") -> float:
    curve = _curve(y, P, n_bins, strategy)
    return float((curve.n * np.abs(curve.accuracy - curve.confidence)).sum() / len(y))


def _mce(y: np.ndarray, P: np.ndarray, n_bins: int = 15, strategy: Strategy = "uniform") -> float:
    curve = _curve(y, P, n_bins, strategy)
    return float(np.abs(curve.accuracy - curve.confidence).max())


def _brier(y: np.ndarray, P: np.ndarray) -> float:
    sq = (P**2).sum(axis=1) - 2 * P[np.arange(len(y)), y] + 1.0
    return float(sq.mean())


def _nll(y: np.ndarray, P: np.ndarray, eps: float = 1e-6) -> float:
    return float(-np.log(np.clip(P[np.arange(len(y)), y], eps, 1.0)).mean())


def reliability_curve(
    y: Any, P: Any, n_bins: int = 15, strategy: Strategy = "uniform"
) -> ReliabilityCurve:
    """Bin predictions by top-label confidence; each bin's mean confidence vs accuracy."""
    return _curve(*_check(y, P), n_bins, strategy)


def expected_calibration_error(
    y: Any, P: Any, n_bins: int = 15, strategy: Strategy = "uniform"
) -> float:
    """ECE = sum_b (n_b / n) |accuracy_b - confidence_b| over top-label confidence bins.

    Args:
        y: true class indices, shape (n,).
        P: predicted probabilities, shape (n, k).
        n_bins: number of bins.
        strategy: "uniform" (equal-width bins on [0, 1]) or "quantile" (equal-mass bins).

    >>> P = [[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.2, 0.8]]
    >>> round(expected_calibration_error([0, 0, 1, 1], P), 6)  # 3/4 * |2/3 - 0.9| + 1/4 * |1 - 0.8|
    0.225
    """
    return _ece(*_check(y, P), n_bins, strategy)


def max_calibration_error(
    y: Any, P: Any, n_bins: int = 15, strategy: Strategy = "uniform"
) -> float:
    """MCE = the largest |accuracy_b - confidence_b| over non-empty bins."""
    return _mce(*_check(y, P), n_bins, strategy)


def brier_score(y: Any, P: Any) -> float:
    """Multi-class Brier score: mean over items of sum_k (p_k - 1[y = k])^2, in [0, 2].

    >>> round(brier_score([0], [[0.8, 0.2]]), 6)
    0.08
    """
    return _brier(*_check(y, P))


def nll(y: Any, P: Any, eps: float = 1e-6) -> float:
    """Negative log-likelihood of the true class, probabilities clipped to ``[eps, 1]``.

    The clip keeps a one-hot source's confident mistakes finite (-log 1e-6 = 13.8).
    """
    return _nll(*_check(y, P), eps)


# Unchecked versions: the bootstrap calls them thousands of times on validated arrays.
METRICS = {
    "ece": lambda y, P: _ece(y, P, strategy="uniform"),
    "ece_mass": lambda y, P: _ece(y, P, strategy="quantile"),
    "mce": _mce,
    "brier": _brier,
    "nll": _nll,
}
# How every table, card and report names them.
METRIC_NAMES = {
    "ece": "ECE (equal-width bins)",
    "ece_mass": "ECE (equal-mass bins)",
    "mce": "MCE",
    "brier": "Brier score",
    "nll": "NLL",
}


def calibration_metrics(
    y: Any,
    P: Any,
    groups: Sequence[Any] | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Every metric in :data:`METRICS` with a (clustered) bootstrap confidence interval.

    Each estimate is the metric on all of ``y``/``P``; its interval comes from
    resamples of the same rows, shifted so that their median sits on the estimate
    (``bootstrap_many(centered=True)``) and floored at 0. Binned errors grow on a
    resample (repeated rows make each bin noisier), so a plain percentile interval
    of ECE can lie wholly above the ECE it is meant to bracket.

    Returns:
        ``{"ece": BootstrapCI, "ece_mass": ..., "mce": ..., "brier": ..., "nll": ...}``.
    """
    y, P = _check(y, P)
    out = bootstrap_many(
        METRICS, y, P, groups=groups, n_boot=n_boot, level=level, seed=seed, centered=True
    )
    # every metric here is >= 0: so is every end of its interval
    return {m: ci._replace(low=max(ci.low, 0.0)) for m, ci in out.items()}
