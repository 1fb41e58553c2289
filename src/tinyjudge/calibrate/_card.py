"""The calibration's text: the figures of its summary and the model card's section."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from tinyjudge.calibrate._crossfit import CrossFitResult
from tinyjudge.calibrate._guard import MethodCheck
from tinyjudge.calibrate._metrics import METRIC_NAMES, METRICS

__all__ = ["crossfit_summary", "model_card_section", "methods_line"]


def crossfit_summary(cf: CrossFitResult, check: MethodCheck | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "before": {m: c.as_interval().to_dict() for m, c in cf.metrics_before.items()},
        "after": {m: c.as_interval().to_dict() for m, c in cf.metrics_after.items()},
    }
    if check is not None:
        out["check"] = {
            "worse_than_none": check.worse,
            "best_method": check.best,
            "held_out": check.table,
            "message": check.message(),
        }
    return out


def model_card_section(
    cf: CrossFitResult,
    human: str,
    n_splits: int,
    group_by: str | None,
    plot: str | None,
    check: MethodCheck | None = None,
    applied: bool = True,
) -> str:
    """The model card's "Calibration against people" section (Markdown)."""
    level = next(iter(cf.metrics_before.values())).level
    split = f"{n_splits} folds grouped by `{group_by}`" if group_by else f"{n_splits} random folds"
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    what = (
        f"Calibrated with `{cf.method}` scaling on {len(cf.y)} items labelled by `{human}` "
        f"({date}); `load_model` applies it from `calibration.json` whenever the model is "
        "loaded (`load_model(dir, calibrated=False)` gives the raw probabilities)."
        if applied
        else f"Not calibrated: `{cf.method}` scaling, fitted on {len(cf.y)} items labelled by "
        f"`{human}` ({date}), made held-out figures worse than the model's own "
        "probabilities, so none is applied (no `calibration.json`)."
    )
    lines = [
        "## Calibration against people",
        "",
        what,
        f"The figures are cross-fitted ({split}): every item is measured with a calibrator "
        f"fitted without it. Lower is better for all; brackets are {level:.0%} bootstrap "
        "intervals. Calibrate on items the model was not trained on: on its own training "
        "items a model looks more certain and more right than it will be on new ones.",
        "",
        "| metric | before | after (held out) |",
        "|---|---|---|",
    ]
    for m in METRICS:
        b, a = cf.metrics_before[m], cf.metrics_after[m]
        lines.append(
            f"| {METRIC_NAMES[m]} | {b.estimate:.4f} [{b.low:.4f}, {b.high:.4f}] "
            f"| {a.estimate:.4f} [{a.low:.4f}, {a.high:.4f}] |"
        )
    if check is not None:
        lines += ["", f"Every method on the same folds: {methods_line(check)}. {check.message()}."]
    if plot:
        lines += ["", f"![reliability diagram before and after]({plot})"]
    return "\n".join(lines)


def methods_line(check: MethodCheck) -> str:
    return ", ".join(f"{m} NLL {v['nll']:.4f} / ECE {v['ece']:.4f}" for m, v in check.table.items())
