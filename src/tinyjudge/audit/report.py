"""The audit report: every label source against a reference and against each other.

:func:`build_report` computes the figures (JSON-ready) and the plots (PNG bytes);
:func:`write_report` writes the JSON for machines and one self-contained HTML file
for people. ``n`` always counts items where both sources gave a scored label;
unscored labels are counted beside it, never turned into a class.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from itertools import combinations
from typing import Any

import numpy as np

from tinyjudge._stats import BootstrapCI, bootstrap_ci, bootstrap_many
from tinyjudge.audit._alpha import alpha_from_confusion, alpha_from_value_counts
from tinyjudge.audit._consensus import final_without, other_raters, rater_of_final
from tinyjudge.audit._encode import encode
from tinyjudge.audit._kappa import kappa_from_confusion, kendall, spearman, weight_matrix
from tinyjudge.audit._pairs import pair_labels, ratings_matrix
from tinyjudge.audit._report_data import AuditMeta, AuditReport, PairRow, SourceSummary
from tinyjudge.errors import TinyjudgeError, UsageError
from tinyjudge.records import Item, Label, index_labels
from tinyjudge.rubric import Rubric

__all__ = ["AuditReport", "build_report", "write_report", "bias_section", "estimates_section"]

Table = dict[str, dict[str, Label]]


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _ci(ci: BootstrapCI) -> list[float | None]:
    return ci.interval()


def _class_order(
    table: Table, rubric_id: str | None, order: Sequence[str] | None, rub: Rubric | None = None
):
    """The label order: ``order``, else the rubric's labels (plus any others seen), else sorted."""
    seen = sorted({lab.label for d in table.values() for lab in d.values() if lab.label})
    ordinal = False
    if order is None and rub is not None:
        order, ordinal = list(rub.label_names), rub.type == "ordinal"
    elif order is None and rubric_id is not None:
        try:
            from tinyjudge.rubric import load_rubric

            rub = load_rubric(rubric_id)
            order, ordinal = list(rub.label_names), rub.type == "ordinal"
        except TinyjudgeError:
            order = None
    elif order is not None:
        ordinal = True  # an explicit order is a scale
    base = list(order or [])
    extra = [v for v in seen if v not in base]
    if ordinal and extra:
        # tacked on in alphabetical order they would make a scale nobody chose,
        # and the weighted kappa and ordinal alpha would be computed on it
        raise UsageError(
            f"labels {extra} are not on the scale {base}; give every label in order "
            "(or drop those labels)",
            param="order",
        )
    return base + extra, ordinal


def _source_summary(source: str, labels: dict[str, Label], order: list[str]) -> SourceSummary:
    scored = [lab for lab in labels.values() if lab.status == "ok"]
    reasons = Counter(lab.reason or "unscored" for lab in labels.values() if lab.status != "ok")
    dist = Counter(lab.label for lab in scored if lab.label is not None)
    return {
        "source": source,
        "labels": len(labels),
        "scored": len(scored),
        "unscored": len(labels) - len(scored),
        "unscored_reasons": dict(reasons.most_common(5)),
        "distribution": {c: dist.get(c, 0) for c in order if dist.get(c, 0)},
        "has_probs": any(lab.probs for lab in scored),
        "has_scores": any(lab.score is not None for lab in scored),
    }


def _pair_row(
    table: Table,
    a: str,
    b: str,
    order: list[str],
    ordinal: bool,
    group_of: Callable[[str], Any],
    boot: dict[str, Any],
) -> PairRow:
    p = pair_labels(table, a, b)
    row: PairRow = {
        "a": a,
        "b": b,
        "n": p.n,
        "unscored": p.n_unscored,
        "unscored_a": p.unscored_a,
        "unscored_b": p.unscored_b,
        "only_a": p.only_a,
        "only_b": p.only_b,
    }
    empty = {"accuracy": None, "accuracy_ci": [None, None], "kappa": None,
             "kappa_ci": [None, None], "alpha": None, "alpha_ci": [None, None]}  # fmt: skip
    if p.n == 0:
        return row | empty
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
    for name, ci in bootstrap_many(stats, cells, groups=groups, **boot).items():
        row[name], row[f"{name}_ci"] = _num(ci.estimate), _ci(ci)
    row["n_clusters"] = len(set(groups))
    row["confusion"] = {"labels": order, "counts": cm(cells).tolist()}
    scores = pair_labels(table, a, b, value="score")
    if scores.n >= 3:
        row["spearman"] = _num(spearman(scores.a, scores.b))
        row["kendall"] = _num(kendall(scores.a, scores.b))
        row["n_scores"] = scores.n
    return row


def _raters(table: Table, sources: list[str], order: list[str], group_of, boot) -> dict:
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
        return out | {"alpha": None, "alpha_ci": [None, None]}
    units = np.flatnonzero(rated)
    groups = [group_of(item_ids[u]) for u in units]
    ci = bootstrap_ci(
        lambda idx: alpha_from_value_counts(counts[idx]), units, groups=groups, **boot
    )
    out |= {"alpha": _num(ci.estimate), "alpha_ci": _ci(ci)}
    full = counts.sum(axis=1) == len(sources)
    if full.sum() and len(sources) >= 2:
        from tinyjudge.audit._kappa import fleiss_kappa_from_counts

        out["fleiss_kappa"] = _num(fleiss_kappa_from_counts(counts[full]))
        out["n_items_all_raters"] = int(full.sum())
    return out


def _panel_members(table: Table) -> list[str]:
    """The judge sources that sit on a panel whose labels are in ``table`` (the panel left out)."""
    from tinyjudge.judge import is_panel_label

    said = {
        member
        for labels in table.values()
        for lab in labels.values()
        if is_panel_label(lab)
        for member in lab.raw["panel"]
    }
    return sorted(s for s in table if s in said)


def _calibration(table, reference, source, order, group_of, boot, method, figures) -> dict | None:
    from tinyjudge.calibrate import (
        calibration_metrics,
        cross_fit,
        is_one_hot,
        probs_matrix,
        reliability_diagram,
    )

    p = pair_labels(table, reference, source)
    if p.n == 0 or not any(table[source][i].probs for i in p.item_ids):
        return None
    P = probs_matrix([table[source][i] for i in p.item_ids], order)
    if source.startswith("human:") and is_one_hot(P):
        return None  # a person's plain verdicts say nothing about confidence
    y = encode(p.a, order, reference)
    groups = [group_of(i) for i in p.item_ids]
    kw = {"groups": groups, "n_boot": boot["n_boot"], "seed": boot["seed"]}
    metrics = calibration_metrics(y, P, level=boot["level"], **kw)
    out: dict[str, Any] = {
        "n": p.n,
        "one_hot": is_one_hot(P),
        "metrics": {m: {"value": _num(c.estimate), "ci": _ci(c)} for m, c in metrics.items()},
    }
    series = {source: P}
    if len(set(groups)) >= 5 and p.n >= 50:
        cf = cross_fit(method, P, y, **kw)
        out["cross_fitted"] = {
            "method": method,
            "folds": 5,
            "metrics": {
                m: {"value": _num(c.estimate), "ci": _ci(c)} for m, c in cf.metrics_after.items()
            },
        }
        series[f"{source} + {method} (held out)"] = cf.after
    if not out["one_hot"]:
        figures[f"reliability:{source}"] = reliability_diagram(
            y, series, title=f"{source} against {reference}"
        )
    return out


def bias_section(labels: Sequence[Label], items: Sequence[Item] | None, **kw: Any) -> dict:
    """The bias probes that apply to these labels: ``tinyjudge.audit.bias.bias_report``.

    Position bias needs both-order pairwise labels, verbosity bias pairwise items,
    self-consistency repeated samples; sources without them get no probe.
    """
    from tinyjudge.audit.bias import bias_report

    return bias_report(labels, items, **kw)


def estimates_section(
    labels: Sequence[Label],
    items: Sequence[Item] | None,
    *,
    reference: str,
    cheap: Sequence[str],
    by: str | None,
    level: float,
    seed: int,
    rubric: Rubric | None = None,
    cluster: str | None = None,
) -> dict[str, Any]:
    """The rate of the rubric's behaviour from each cheap source plus the reference (PPI).

    Uses :func:`tinyjudge.estimate.estimate_rates`; a source it cannot use
    (no rubric with ``positive`` labels, too few reference labels) gets a note.
    With ``cluster`` (the audit's ``group_by``) the intervals are cluster-robust.
    """
    from tinyjudge.estimate import estimate_rates

    out: dict[str, Any] = {"by": by, "cluster": cluster, "level": level, "sources": {}, "notes": []}
    for source in cheap:
        try:
            rep = estimate_rates(
                labels, items, cheap=source, human=reference, rubric=rubric, by=by,
                level=level, seed=seed, cluster=cluster,
            )  # fmt: skip
        except TinyjudgeError as e:
            out["notes"].append(f"{source}: no estimate ({e})")
            continue
        out["sources"][source] = rep.to_dict()
    return out


def _check_overlap(
    table: Table, reference: str, others: list[str], by_id: dict[str, Item] | None
) -> None:
    """Refuse an audit with nothing to compare: it would be a report of n = 0 rows."""
    labelled = {i for d in table.values() for i in d}
    if by_id is not None and not labelled & by_id.keys():
        example = min(labelled)
        raise UsageError(
            f"the labels name none of the {len(by_id)} items given (e.g. item_id {example!r} "
            "is not among them): pass the items these labels are about"
        )
    ref_ids = table[reference].keys()
    if others and not any(ref_ids & table[s].keys() for s in others):
        sizes = ", ".join(f"{s} {len(table[s])}" for s in [reference, *others])
        raise UsageError(
            f"no item has labels from both {reference} and another source (items labelled: "
            f"{sizes}): audit compares sources on the items they share; check that the label "
            "files are about the same items"
        )


def build_report(
    labels: Sequence[Label],
    items: Sequence[Item] | None = None,
    *,
    reference: str,
    group_by: str | None = None,
    slice_by: Sequence[str] = (),
    rubric: str | Rubric | None = None,
    order: Sequence[str] | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    calibration_method: str = "temperature",
) -> AuditReport:
    """Compare every label source with the reference and with each other.

    Args:
        labels: Label records of any number of sources (one rubric, or choose ``rubric``).
        items: the items, needed for ``group_by`` and ``slice_by`` (values read from them).
        reference: the source everything is compared with, e.g. ``human:final``.
        group_by: a dotted item key (e.g. ``metadata.prompt_id``); bootstrap intervals
            resample these groups rather than items. Items without it are their own group.
        slice_by: dotted item keys to break the agreement down by.
        rubric: keep only labels under this rubric: an id, or the :class:`Rubric`
            itself, whose labels order the tables and whose ``positive`` labels
            define the rates section (a custom rubric need not be findable by id).
        order: the label order (a scale: adds quadratic kappa and ordinal alpha);
            default: the rubric's labels when it can be loaded, else sorted.
        n_boot: bootstrap resamples per interval.
        level: coverage of the intervals.
        seed: bootstrap seed; the same inputs give the same report.
        calibration_method: the calibrator cross-fitted in the calibration section.

    Raises:
        TinyjudgeError: an unknown reference (the message lists the sources),
            ``group_by``/``slice_by`` without items, labels that name none of
            ``items``, or no item labelled by the reference and another source.
    """
    # the bias probes and estimates read Label lists, not the table: filter them alike
    rub = rubric if isinstance(rubric, Rubric) else None
    rubric_id = rub.id if rub is not None else rubric
    labels = [lab for lab in labels if rubric_id is None or lab.rubric == rubric_id]
    table = index_labels(labels)
    if reference not in table:
        raise UsageError(f"no labels from reference {reference!r}; sources: {sorted(table)}")
    if (group_by or slice_by) and items is None:
        raise UsageError(
            "group_by and slice_by read item metadata: pass items",
            param="items",
            also=("group_by", "slice_by"),
        )
    by_id = {it.id: it for it in items or []}
    rubric_ids = sorted({lab.rubric for d in table.values() for lab in d.values()})
    one_rubric = rubric_ids[0] if len(rubric_ids) == 1 else None
    order_, ordinal = _class_order(table, one_rubric, order, rub)
    others = sorted(s for s in table if s != reference)
    _check_overlap(table, reference, others, by_id if items is not None else None)
    boot = {"n_boot": n_boot, "level": level, "seed": seed}

    def group_of(item_id: str) -> Any:
        if group_by is None or item_id not in by_id:
            return item_id
        value = by_id[item_id].get(group_by)
        return item_id if value is None else value

    def row(t: Table, a: str, b: str) -> PairRow:
        return _pair_row(t, a, b, order_, ordinal, group_of, boot)

    def reference_row(t: Table, s: str) -> PairRow:
        """``s`` against the reference; a rater against the final label of the others."""
        if not rater_of_final(reference, s):
            return row(t, reference, s)
        others = ", ".join(other_raters(t, s)) or "no other rater"
        compared = row({**t, reference: final_without(t, s, order_)}, reference, s)
        return compared | {"reference_without": s, "reference_of": others}

    meta: AuditMeta = {
        "reference": reference,
        "sources": [reference, *others],
        "rubrics": rubric_ids,
        "labels": order_,
        "ordinal": ordinal,
        "group_by": group_by,
        "slice_by": list(slice_by),
        "n_items": len(by_id) if items is not None else None,
        "n_boot": n_boot,
        "level": level,
        "seed": seed,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    sources = [_source_summary(s, table[s], order_) for s in [reference, *others]]
    pairs = [reference_row(table, s) for s in others]
    pairs += [row(table, a, b) for a, b in combinations(others, 2)]
    humans = [s for s in others if s.startswith("human:")]
    raters = [
        _raters(table, group, order_, group_of, boot) | {"name": name}
        for name, group in (
            ("people (reference left out)", humans),
            ("a panel's judges", _panel_members(table)),
            ("all but the reference", others),
        )
        if len(group) >= 2
    ]
    slices: dict[str, dict[str, list[PairRow]]] = {}
    for key in slice_by:
        values = {i: by_id[i].get(key) if i in by_id else None for i in table[reference]}
        slices[key] = {}
        for value in sorted({str(v) for v in values.values()}):
            ids = {i for i, v in values.items() if str(v) == value}
            sub = {s: {i: lab for i, lab in d.items() if i in ids} for s, d in table.items()}
            slices[key][value] = [reference_row(sub, s) for s in others if sub[s]]
    figures: dict[str, bytes] = {}
    calib = {}
    notes: list[str] = []
    for s in others:
        try:
            got = _calibration(
                table, reference, s, order_, group_of, boot, calibration_method, figures
            )
        except TinyjudgeError as e:  # e.g. probs over classes the reference never uses
            notes.append(f"calibration of {s}: not measured ({e})")
            continue
        if got is not None:
            calib[s] = got
    bias = bias_section(labels, items, reference=reference, group_by=group_by, **boot)
    estimates = estimates_section(
        labels, items, reference=reference, by=slice_by[0] if slice_by else None,
        cheap=[s for s in others if not s.startswith("human:")], level=level, seed=seed,
        rubric=rub, cluster=group_by,
    )  # fmt: skip
    return AuditReport(meta, sources, pairs, raters, slices, calib, notes, bias, estimates, figures)


def write_report(
    report: AuditReport,
    html_path: str | os.PathLike[str] | None = None,
    json_path: str | os.PathLike[str] | None = None,
) -> None:
    """Write the JSON figures and/or the self-contained HTML page (atomically)."""
    from tinyjudge.audit._report_html import render_html
    from tinyjudge.datasets.jsonl import atomic_writer

    if json_path is not None:
        with atomic_writer(json_path) as fh:
            fh.write(report.to_json())
    if html_path is not None:
        with atomic_writer(html_path) as fh:
            fh.write(render_html(report))
