"""The sections of an audit beside agreement: calibration, bias probes, behaviour rates.

Each reads the labels the audit compares and returns its section of ``report.json``
(a source it cannot measure gets ``None`` or a note, never a made-up figure).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tinyjudge._stats import BootstrapCI
from tinyjudge.audit._encode import encode
from tinyjudge.audit._pairs import pair_labels
from tinyjudge.audit._rows import Table
from tinyjudge.errors import TinyjudgeError, UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric

if TYPE_CHECKING:
    from tinyjudge.calibrate import SourceCalibration

__all__ = ["calibration_section", "bias_section", "estimates_section"]


def _metrics(got: dict[str, BootstrapCI]) -> dict[str, dict[str, Any]]:
    return {m: c.as_interval().to_dict() for m, c in got.items()}


def calibration_section(
    table: Table,
    reference: str,
    source: str,
    order: list[str],
    group_of: Callable[[str], Any],
    boot: dict[str, Any],
    method: str,
    figures: dict[str, bytes],
    calibrate: Callable[..., SourceCalibration] | None = None,
) -> dict[str, Any] | None:
    """How well ``source``'s probabilities match the reference, and after ``method``
    (with 5 or more groups and 50 items); its reliability diagram goes into ``figures``.
    ``None`` for a source without probabilities, or a person's plain verdicts.

    The "after" figures are those of :func:`tinyjudge.calibrate.calibrate_source` (called
    through ``calibrate``, which the audit binds to its items and grouping): each item's
    probabilities from a calibrator fitted without its prompt's items, measured here on
    the same bootstrap resamples as the figures before. Where it cannot calibrate (too
    few labels of a second class), the section has no "after" figures.
    """
    from tinyjudge.calibrate import (
        calibration_metrics,
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
        "metrics": _metrics(metrics),
    }
    series = {source: P}
    after = None
    if calibrate is not None and len(set(groups)) >= 5 and p.n >= 50:
        try:
            after = calibrate([*table[source].values(), *table[reference].values()],
                              source=source, human=reference, method=method)  # fmt: skip
        except UsageError:  # e.g. fewer than 5 reference labels of a second class
            after = None
    if after is not None:
        held_out = {lab.item_id: lab for lab in after.labels}
        P_after = probs_matrix([held_out[i] for i in p.item_ids], order)
        metrics_after = calibration_metrics(y, P_after, level=boot["level"], **kw)
        out["cross_fitted"] = {"method": method, "folds": 5, "metrics": _metrics(metrics_after)}
        series[f"{source} + {method} (held out)"] = P_after
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
