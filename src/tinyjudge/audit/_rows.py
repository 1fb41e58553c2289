"""The agreement rows of an audit: one source against another, and several raters at once.

:func:`pair_row` gives a typed :class:`~tinyjudge.audit._report_data.PairRow` (its
statistics :class:`~tinyjudge.results.Interval` values from one clustered bootstrap);
:func:`raters_row` Krippendorff's alpha over several sources, the ``raters`` section's entry.
``n`` always counts items where both sources gave a scored label; unscored labels
are counted beside it, never turned into a class.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tinyjudge._stats import bootstrap_ci, bootstrap_many
from tinyjudge.audit._alpha import alpha_from_confusion, alpha_from_value_counts
from tinyjudge.audit._encode import encode
from tinyjudge.audit._kappa import kappa_from_confusion, kendall, spearman, weight_matrix
from tinyjudge.audit._pairs import pair_labels, ratings_matrix
from tinyjudge.audit._report_data import Confusion, PairRow
from tinyjudge.records import Label
from tinyjudge.results import Interval

__all__ = ["Table", "pair_row", "raters_row", "number"]

Table = dict[str, dict[str, Label]]


def number(x: float | None) -> float | None:
    """A JSON number: ``None`` for what is missing or not finite."""
    return None if x is None or not math.isfinite(x) else float(x)


def pair_row(
    table: Table,
    a: str,
    b: str,
    order: list[str],
    ordinal: bool,
    group_of: Callable[[str], Any],
    boot: dict[str, Any],
) -> PairRow:
    """``a`` against ``b``: counts, accuracy, kappa and alpha (and, on a scale, the
    weighted ones) with bootstrap intervals resampling ``group_of``'s groups, the
    confusion matrix, and the correlation of scores where there are some."""
    p = pair_labels(table, a, b)
    counts: dict[str, Any] = {
        "a": a, "b": b, "n": p.n, "unscored": p.join.n_unscored,
        "unscored_a": p.join.unscored_a, "unscored_b": p.join.unscored_b,
        "only_a": p.join.only_a, "only_b": p.join.only_b,
    }  # fmt: skip
    if p.n == 0:
        none = Interval(math.nan)
        return PairRow(**counts, accuracy=none, kappa=none, alpha=none)
    k = len(order)
    ia, ib = encode(p.a, order, a), encode(p.b, order, b)
    groups = [group_of(i) for i in p.item_ids]
    w_nom = weight_matrix(k)

    # One code per item, cell = a * k + b: a resample's confusion matrix is one bincount.
    cells = ia * k + ib
    memo: dict[str, Any] = {}

    def cm(c: np.ndarray) -> np.ndarray:
        # every statistic of one resample sees the same array; count it once
        if memo.get("c") is not c:
            memo["c"], memo["m"] = c, np.bincount(c, minlength=k * k).reshape(k, k)
        return memo["m"]

    stats: dict[str, Callable[[np.ndarray], float]] = {
        "accuracy": lambda c: float(np.trace(cm(c))) / len(c),
        "kappa": lambda c: kappa_from_confusion(cm(c), w_nom),
        "alpha": lambda c: alpha_from_confusion(cm(c)),
    }
    if ordinal:
        w_q = weight_matrix(k, "quadratic")
        stats["kappa_quadratic"] = lambda c: kappa_from_confusion(cm(c), w_q)
        stats["alpha_ordinal"] = lambda c: alpha_from_confusion(cm(c), "ordinal")
    got: dict[str, Any] = {
        name: ci.as_interval()
        for name, ci in bootstrap_many(stats, cells, groups=groups, **boot).items()
    }
    confusion = Confusion(order, cm(cells).tolist())
    scores = pair_labels(table, a, b, value="score")
    if scores.n >= 3:
        got |= {
            "spearman": number(spearman(scores.a, scores.b)),
            "kendall": number(kendall(scores.a, scores.b)),
            "n_scores": scores.n,
        }
    return PairRow(**counts, **got, n_clusters=len(set(groups)), confusion=confusion)


def raters_row(
    table: Table,
    sources: list[str],
    order: list[str],
    group_of: Callable[[str], Any],
    boot: dict[str, Any],
) -> dict[str, Any]:
    """Krippendorff's alpha over several sources at once (missing ratings allowed)."""
    item_ids, rows = ratings_matrix(table, sources)
    index = {c: j for j, c in enumerate(order)}
    counts = np.zeros((len(item_ids), len(order)))
    for row in rows:
        for u, v in enumerate(row):
            if v is not None:
                counts[u, index[v]] += 1
    rated = counts.sum(axis=1) >= 2
    out: dict[str, Any] = {"sources": sources, "n_items": int(rated.sum())}
    if not rated.any():
        return out | {"alpha": Interval(math.nan).to_dict()}
    units = np.flatnonzero(rated)
    groups = [group_of(item_ids[u]) for u in units]
    ci = bootstrap_ci(
        lambda idx: alpha_from_value_counts(counts[idx]), units, groups=groups, **boot
    )
    out["alpha"] = ci.as_interval().to_dict()
    full = counts.sum(axis=1) == len(sources)
    if full.sum() and len(sources) >= 2:
        from tinyjudge.audit._kappa import fleiss_kappa_from_counts

        out["fleiss_kappa"] = number(fleiss_kappa_from_counts(counts[full]))
        out["n_items_all_raters"] = int(full.sum())
    return out
