"""Two-rater and many-rater chance-corrected agreement: accuracy, Cohen's and Fleiss' kappa.

Undefined statistics (chance agreement of 1, e.g. every rating is the same single
class) return NaN rather than raising, so a bootstrap resample or a small slice
can report "undefined" without aborting a report; empty input raises.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from tinyjudge.audit._encode import encode, is_missing, label_order
from tinyjudge.errors import UsageError

__all__ = [
    "Weights",
    "ConfusionMatrix",
    "accuracy",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "fleiss_kappa_from_counts",
    "spearman",
    "kendall",
    "kappa_from_confusion",
    "weight_matrix",
]

Weights = Literal["linear", "quadratic"] | None


class ConfusionMatrix(NamedTuple):
    """Counts of (row = first rater's label, column = second rater's label)."""

    labels: list[Any]
    counts: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {"labels": [str(x) for x in self.labels], "counts": self.counts.tolist()}


def _check_pair(a: Sequence[Any], b: Sequence[Any]) -> None:
    if len(a) != len(b):
        raise UsageError(f"the two raters must rate the same items: got {len(a)} and {len(b)}")
    if len(a) == 0:
        raise UsageError("no items to compare: both label lists are empty")


def confusion_matrix(
    a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None
) -> ConfusionMatrix:
    """Cross-tabulate two raters' labels for the same items.

    Args:
        a: the first rater's labels (rows).
        b: the second rater's labels (columns), same length and item order.
        labels: the label set in order; default: the sorted observed labels.
    """
    a, b = list(a), list(b)
    _check_pair(a, b)
    order = label_order([*a, *b], labels)
    k = len(order)
    ia, ib = encode(a, order, "a"), encode(b, order, "b")
    counts = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k)
    return ConfusionMatrix(order, counts)


def accuracy(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Share of items on which the two raters give the same label.

    >>> accuracy(["x", "y", "y", "x"], ["x", "y", "x", "x"])
    0.75
    """
    a, b = list(a), list(b)
    _check_pair(a, b)
    for name, seq in (("a", a), ("b", b)):
        for i, v in enumerate(seq):
            if is_missing(v):
                raise UsageError(f"{name}[{i}] is missing (None/NaN); drop unscored items first")
    return float(np.mean([x == y for x, y in zip(a, b, strict=True)]))


def weight_matrix(k: int, weights: Weights = None) -> np.ndarray:
    """Disagreement weights between label positions ``i`` and ``j`` (0 on the diagonal)."""
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    if weights == "quadratic":
        return ((i - j) ** 2).astype(float)
    raise UsageError(f'weights must be None, "linear" or "quadratic", got {weights!r}')


def kappa_from_confusion(counts: np.ndarray, weights: np.ndarray) -> float:
    """Cohen's kappa from a confusion matrix and a disagreement-weight matrix.

    kappa = 1 - sum(w * observed) / sum(w * expected), where expected is the
    outer product of the two raters' marginals divided by n.
    """
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    expected = np.outer(counts.sum(axis=1), counts.sum(axis=0)) / n
    denom = float((weights * expected).sum())
    if denom == 0.0:
        return float("nan")
    return 1.0 - float((weights * counts).sum()) / denom


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
) -> float:
    """Cohen's kappa between two raters, optionally weighted for ordinal labels.

    Args:
        a: the first rater's labels.
        b: the second rater's labels for the same items, in the same order.
        weights: None (unweighted), "linear" or "quadratic"; weighted kappa uses
            the positions in ``labels`` as the ordinal scale.
        labels: the label set in order (required to be right for weighted kappa
            on string labels); default: the sorted observed labels.

    Returns:
        Kappa in [-1, 1]; NaN when chance agreement is total (both raters always
        give one and the same label), where kappa is undefined.

    Raises:
        TinyjudgeError: empty or unequal inputs, missing values, labels not in ``labels``.

    >>> round(cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"]), 4)
    0.5
    """
    cm = confusion_matrix(a, b, labels)
    return kappa_from_confusion(cm.counts, weight_matrix(len(cm.labels), weights))


def fleiss_kappa_from_counts(counts: Sequence[Sequence[float]] | np.ndarray) -> float:
    """Fleiss' kappa from an items x categories table of rater counts.

    Every item must have the same number of ratings m >= 2 (Fleiss, 1971):
    P_i = (sum_j n_ij^2 - m) / (m (m - 1)), p_j = sum_i n_ij / (N m),
    kappa = (mean P_i - sum_j p_j^2) / (1 - sum_j p_j^2).

    Returns:
        Kappa; NaN when all ratings fall in one category (undefined).
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0:
        raise UsageError(f"expected a non-empty items x categories table, got shape {table.shape}")
    if (table < 0).any():
        raise UsageError("counts must be non-negative")
    m = table.sum(axis=1)
    if not np.allclose(m, m[0]):
        raise UsageError(
            f"Fleiss' kappa needs the same number of ratings per item, got between "
            f"{m.min():g} and {m.max():g}; use krippendorff_alpha for missing ratings"
        )
    m0 = float(m[0])
    if m0 < 2:
        raise UsageError(f"Fleiss' kappa needs at least 2 ratings per item, got {m0:g}")
    p_i = ((table**2).sum(axis=1) - m0) / (m0 * (m0 - 1))
    p_j = table.sum(axis=0) / table.sum()
    p_e = float((p_j**2).sum())
    if p_e == 1.0:
        return float("nan")
    return (float(p_i.mean()) - p_e) / (1.0 - p_e)


def fleiss_kappa(
    ratings: Sequence[Sequence[Any]] | np.ndarray, labels: Sequence[Any] | None = None
) -> float:
    """Fleiss' kappa for any number of raters from an items x raters matrix of labels.

    Args:
        ratings: one row per item, one column per rating; every item needs the same
            number of ratings (None/NaN entries are not allowed here).
        labels: the label set; default: the sorted observed labels.

    >>> round(fleiss_kappa([["a", "a"], ["b", "b"], ["a", "b"]]), 4)
    0.3333
    """
    rows = [list(r) for r in ratings]
    if not rows:
        raise UsageError("no items to compare: ratings is empty")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise UsageError(f"every item needs the same number of ratings, got {sorted(widths)}")
    flat = [v for r in rows for v in r]
    order = label_order(flat, labels)
    codes = encode(flat, order, "ratings").reshape(len(rows), -1)
    k = len(order)
    table = np.stack([np.bincount(r, minlength=k) for r in codes])
    return fleiss_kappa_from_counts(table)


def _scores(x: Sequence[Any], name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be numbers (scores), got e.g. {list(x)[:3]}") from None
    if np.isnan(arr).any():
        raise UsageError(f"{name} has missing values; drop unscored items first")
    return arr


def _rank_corr(kind: str, x: Sequence[Any], y: Sequence[Any]) -> float:
    from scipy import stats

    _check_pair(x, y)
    xa, ya = _scores(x, "x"), _scores(y, "y")
    if len(xa) < 2 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return float("nan")  # a constant has no ranking to agree with
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(xa, ya) if kind == "spearman" else stats.kendalltau(xa, ya)
    return float(res.statistic)


def spearman(x: Sequence[Any], y: Sequence[Any]) -> float:
    """Spearman's rank correlation of two sources' scores (NaN if either is constant)."""
    return _rank_corr("spearman", x, y)


def kendall(x: Sequence[Any], y: Sequence[Any]) -> float:
    """Kendall's tau-b of two sources' scores (NaN if either is constant)."""
    return _rank_corr("kendall", x, y)
