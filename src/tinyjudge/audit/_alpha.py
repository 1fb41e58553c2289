"""Krippendorff's alpha for any number of raters, any level of measurement, missing ratings.

Written from Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability":
with the coincidence matrix o_ck = sum_u (number of c-k pairs in unit u) / (m_u - 1)
over units with m_u >= 2 ratings, n_c = sum_k o_ck and n = sum_c n_c,

    alpha = 1 - D_o / D_e = 1 - sum_ck o_ck d_ck / sum_ck e_ck d_ck,
    e_ck = (n_c n_k - [c == k] n_c) / (n - 1),

and d_ck the squared distance of the level: nominal [c != k]; ordinal
(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2; interval (c - k)^2; ratio ((c - k)/(c + k))^2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from tinyjudge.audit._encode import is_missing, label_order
from tinyjudge.errors import UsageError

__all__ = ["Level", "krippendorff_alpha", "alpha_from_value_counts", "alpha_from_confusion"]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _distances(values: np.ndarray, n_v: np.ndarray, level: str) -> np.ndarray:
    c, k = values[:, None], values[None, :]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        s = c + k
        return np.divide(c - k, s, out=np.zeros(np.broadcast(c, k).shape), where=s != 0) ** 2
    # ordinal: the number of pairable values between the two ranks, inclusive, minus half
    # of each end, so distance depends on how the ratings are distributed, not the codes.
    idx = np.arange(len(n_v))
    lo, hi = np.minimum(idx[:, None], idx[None, :]), np.maximum(idx[:, None], idx[None, :])
    cum = np.concatenate([[0.0], np.cumsum(n_v)])
    between = cum[hi + 1] - cum[lo]
    return (between - (n_v[:, None] + n_v[None, :]) / 2.0) ** 2


def alpha_from_value_counts(
    value_counts: np.ndarray, level: Level = "nominal", values: Sequence[float] | None = None
) -> float:
    """Alpha from a units x values table of how many raters gave each value.

    Args:
        value_counts: shape (units, V); columns in the order of ``values``.
        level: "nominal", "ordinal", "interval" or "ratio".
        values: the numeric value of each column for interval/ratio (default 0..V-1).

    Returns:
        Alpha; NaN when the pairable ratings show no variation (expected
        disagreement is 0), where alpha is undefined.
    """
    if level not in _LEVELS:
        raise UsageError(f"level must be one of {list(_LEVELS)}, got {level!r}")
    counts = np.asarray(value_counts, dtype=float)
    m_u = counts.sum(axis=1)
    pairable = counts[m_u >= 2]
    if pairable.shape[0] == 0:
        raise UsageError(
            "no unit has ratings from two or more raters, so there is nothing to agree on"
        )
    n_units, n_values = pairable.shape
    # o_ck: c-k pairs within each unit (c == k pairs exclude a value paired with itself)
    pairs = pairable[:, :, None] * pairable[:, None, :]
    pairs -= pairable[:, :, None] * np.eye(n_values)[None, :, :]
    o = (pairs / (pairable.sum(axis=1) - 1)[:, None, None]).sum(axis=0)
    n_v = o.sum(axis=0)
    n = n_v.sum()
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n - 1)
    vals = np.arange(n_values, dtype=float) if values is None else np.asarray(values, float)
    d = _distances(vals, n_v, level)
    d_e = float((e * d).sum())
    if d_e == 0.0:
        return float("nan")
    return 1.0 - float((o * d).sum()) / d_e


def alpha_from_confusion(counts: np.ndarray, level: Level = "nominal") -> float:
    """Alpha for two raters who both rated every item, from their confusion matrix.

    Each item holds one rating from each rater, so its value counts are its row
    and column indicators; used by the bootstrap where speed matters.
    """
    counts = np.asarray(counts, dtype=float)
    k = counts.shape[0]
    # Two ratings per unit: o = C + C^T (each pair counted in both orders, divided by m-1 = 1).
    o = counts + counts.T
    n_v = o.sum(axis=0)
    n = n_v.sum()
    if n < 2:
        raise UsageError("no items to compare")
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n - 1)
    d = _distances(np.arange(k, dtype=float), n_v, level)
    d_e = float((e * d).sum())
    if d_e == 0.0:
        return float("nan")
    return 1.0 - float((o * d).sum()) / d_e


def krippendorff_alpha(
    ratings: Sequence[Sequence[Any]] | np.ndarray,
    level: Level = "nominal",
    labels: Sequence[Any] | None = None,
) -> float:
    """Krippendorff's alpha over a raters x units matrix (the ``krippendorff`` package's layout).

    Args:
        ratings: one row per rater, one column per unit (item); None or NaN marks a
            missing rating. Any number of raters; units with fewer than two ratings
            add nothing.
        level: "nominal", "ordinal", "interval" or "ratio".
        labels: the value domain in order. For "ordinal" on string labels it is
            required (it is the scale); for "interval"/"ratio" string labels are
            placed at their positions 0..k-1. Default: the sorted observed values.

    Returns:
        Alpha (1 = perfect, 0 = chance); NaN when the ratings show no variation.

    Raises:
        TinyjudgeError: no unit rated twice, ragged rows, unknown values, ordinal
            strings without ``labels``, non-numeric interval data without ``labels``.

    >>> round(krippendorff_alpha([["a", "a", "b"], ["a", "b", "b"]]), 4)
    0.4444
    """
    if level not in _LEVELS:
        raise UsageError(f"level must be one of {list(_LEVELS)}, got {level!r}")
    rows = [list(r) for r in ratings]
    if not rows:
        raise UsageError("no raters: ratings is empty")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise UsageError(f"every rater row needs one entry per unit, got lengths {sorted(widths)}")
    present = [v for r in rows for v in r if not is_missing(v)]
    if labels is None and level != "nominal" and any(isinstance(v, str) for v in present):
        raise UsageError(
            f"{level} alpha on string labels needs labels=[...] in scale order; "
            f"got e.g. {sorted(set(present))[:4]}"
        )
    order = label_order(present, labels)
    index = {v: i for i, v in enumerate(order)}
    n_units = len(rows[0])
    counts = np.zeros((n_units, len(order)))
    for r in rows:
        for u, v in enumerate(r):
            if not is_missing(v):
                counts[u, index[v.item() if isinstance(v, np.generic) else v]] += 1
    # Numeric ratings keep their own distances; string labels sit at positions 0..k-1.
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in order)
    values = [float(v) for v in order] if numeric else None
    return alpha_from_value_counts(counts, level, values)
