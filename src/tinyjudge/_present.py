"""How figures look on a terminal: intervals and calibration tables.

Shared by the demo and the commands, so it sits below both: the demo (a
library function) never imports ``commands/``, and a verb and the demo print
the same figures the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from tinyjudge.calibrate import Calibration, CrossFitResult

__all__ = [
    "format_interval",
    "calibration_table",
    "show_calibration_warning",
    "show_model_calibration",
]


def format_interval(
    x: float | None, ci: Sequence[float | None] | None = None, missing: str = "–"
) -> str:
    """``0.712 [0.650, 0.770]``; the figure alone without a whole interval; ``missing`` for none."""
    if x is None:
        return missing
    if not ci or ci[0] is None or ci[1] is None:
        return f"{x:.3f}"
    return f"{x:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def calibration_table(cf: CrossFitResult, title: str) -> Table:
    """Each metric before and after calibration (held out)."""
    from tinyjudge.calibrate import METRIC_NAMES, METRICS

    table = Table(title=title)
    for col in ("metric", "before", "after (held out)"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for m in METRICS:
        b, a = cf.metrics_before[m], cf.metrics_after[m]
        table.add_row(METRIC_NAMES[m], f"{b.estimate:.4f}", f"{a.estimate:.4f}")
    return table


def show_calibration_warning(console: Console, done: Calibration) -> None:
    """The calibration's warning (a method that made held-out figures worse), if any."""
    if done.warning:
        console.print(f"[yellow]warning: {escape(done.warning)}[/]")


def show_model_calibration(
    console: Console, done: Calibration, model_dir: Path, human: str, out_dir: Path
) -> None:
    """The warning (if any), the table and the one-line outcome of calibrating a model."""
    show_calibration_warning(console, done)
    title = f"{done.method} calibration of {model_dir.name} against {human}"
    console.print(calibration_table(done.crossfit, title))
    extra = f", {done.unscored} unscored {human} labels left out" if done.unscored else ""
    wrote = f"wrote {out_dir / 'calibration.json'}" if done.applied else "no calibration applied"
    console.print(f"{done.n} items{extra}; {wrote}")
