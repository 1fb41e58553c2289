"""The audit report: every label source against a reference and against each other.

:func:`audit` computes the figures (a typed :class:`AuditReport`, whose rows
``report.pair(a, b)`` finds) and the plots (PNG bytes); :func:`write_report`
writes the JSON for machines and one self-contained HTML file for people. The
rows are computed in ``_rows``, the calibration, bias and rates sections in
``_sections``. ``n`` always counts items where both sources gave a scored label;
unscored labels are counted beside it, never turned into a class.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from itertools import combinations
from typing import Any

from tinyjudge.audit._config import AuditConfig
from tinyjudge.audit._consensus import final_without, other_raters, rater_of_final
from tinyjudge.audit._report_data import AuditMeta, AuditReport, PairRow, SourceSummary
from tinyjudge.audit._rows import Table, pair_row, raters_row
from tinyjudge.audit._sections import bias_section, calibration_section, estimates_section
from tinyjudge.errors import TinyjudgeError, UsageError
from tinyjudge.records import Item, Label, index_labels
from tinyjudge.rubric import Rubric

__all__ = ["AuditReport", "audit", "write_report"]


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


def audit(
    labels: Sequence[Label],
    items: Sequence[Item] | None = None,
    config: AuditConfig | None = None,
    *,
    rubric: str | Rubric | None = None,
    **options: Any,
) -> AuditReport:
    """Compare every label source with the reference and with each other.

    Args:
        labels: Label records of any number of sources (one rubric, or choose ``rubric``).
        items: the items, needed for ``group_by`` and ``slice_by`` (values read from them).
        config: the options (:class:`AuditConfig`); keyword ``options`` (its fields) go
            over it, so ``audit(labels, items, reference="human:final")`` is enough:
            ``reference``, the source everything is compared with; ``group_by``, a
            dotted item key whose groups the bootstrap intervals resample rather than
            items (an item without it is its own group); ``slice_by``, item keys to
            break the agreement down by; ``order``, the label scale (adds quadratic
            kappa and ordinal alpha; default: the rubric's labels when it can be
            loaded, else sorted); ``n_boot``, ``level`` and ``seed`` of the intervals
            (the same inputs give the same report); ``calibration_method``, the
            calibrator cross-fitted in the calibration section.
        rubric: keep only labels under this rubric: an id, or the :class:`Rubric`
            itself, whose labels order the tables and whose ``positive`` labels
            define the rates section (a custom rubric need not be findable by id).

    Raises:
        TinyjudgeError: an unknown reference (the message lists the sources),
            ``group_by``/``slice_by`` without items, labels that name none of
            ``items``, or no item labelled by the reference and another source.
    """
    cfg = AuditConfig.from_options(config, **options)
    reference, group_by, slice_by, order = cfg.reference, cfg.group_by, cfg.slice_by, cfg.order
    n_boot, level, seed, calibration_method = (
        cfg.n_boot,
        cfg.level,
        cfg.seed,
        cfg.calibration_method,
    )
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
        return pair_row(t, a, b, order_, ordinal, group_of, boot)

    def reference_row(t: Table, s: str) -> PairRow:
        """``s`` against the reference; a rater against the final label of the others."""
        if not rater_of_final(reference, s):
            return row(t, reference, s)
        others = ", ".join(other_raters(t, s)) or "no other rater"
        compared = row({**t, reference: final_without(t, s, order_)}, reference, s)
        return replace(compared, reference_without=s, reference_of=others)

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
        raters_row(table, group, order_, group_of, boot) | {"name": name}
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
    from tinyjudge.calibrate import calibrate_source

    # the calibration section measures its own intervals: the fit's need no resamples
    calibrate = partial(calibrate_source, items=items, group_by=group_by, n_boot=1, seed=seed,
                        if_worse="keep")  # fmt: skip
    for s in others:
        try:
            got = calibration_section(
                table, reference, s, order_, group_of, boot, calibration_method, figures,
                calibrate,
            )  # fmt: skip
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
