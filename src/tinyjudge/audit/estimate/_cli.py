"""The ``tinyjudge estimate`` verb: read labels, estimate, print a table, write JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from tinyjudge.errors import TinyjudgeError

from ._labels import RateReport, estimate_rates
from ._rates import METHODS, RateEstimate

__all__ = ["estimate_command", "report_table"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ci(ci: tuple[float, float]) -> str:
    return f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f}"


def report_table(report: RateReport) -> Table:
    """One row per group (and one for all items): rate, PPI CI, human-only CI, n, N.

    Rates are in percent; ``gain`` is the effective number of human labels over
    the real number (what the cheap labels bought), ``lam`` the weight they got.
    """
    level = report.overall.estimate.level
    method = report.overall.estimate.method
    table = Table(
        title=f"{report.rubric} positive rate (%): {report.cheap} + {report.human}, "
        f"{method} and human-only {level:.0%} CIs",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column(report.by.split(".")[-1] if report.by else "items", no_wrap=True)
    for col in ["rate", method, "human-only", "n human", "N cheap", "lam", "gain"]:
        table.add_column(col, justify="right", no_wrap=True)
    rows: list[tuple[str, RateEstimate]] = list(report.groups.items())
    rows.append(("all", report.overall))
    for name, r in rows:
        table.add_row(
            name,
            f"{100 * r.rate:.1f}",
            _ci(r.ci),
            _ci(r.human_only.ci),
            str(r.n_human),
            str(r.n_items),
            f"{r.estimate.lam:.2f}",
            f"{r.gain:.1f}x",
        )
    return table


def estimate_command(
    labels: Sequence[Path],
    *,
    items: Path | None,
    cheap: str,
    human: str,
    rubric: str | None,
    by: str | None,
    compare: tuple[str, str] | None,
    level: float,
    method: str,
    human_fraction: float | None,
    seed: int,
    json_out: Path | None,
    console: Console,
) -> RateReport:
    """Run :func:`estimate_rates` on label files and print the outcome."""
    from tinyjudge.datasets.jsonl import atomic_writer, read_items, read_labels

    if method not in METHODS:
        raise TinyjudgeError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    records = [lab for path in labels for lab in read_labels(path)]
    report = estimate_rates(
        records,
        read_items(items) if items is not None else None,
        cheap=cheap,
        human=human,
        rubric=rubric,
        by=by,
        compare=compare,
        level=level,
        method=method,  # type: ignore[arg-type]
        human_fraction=human_fraction,
        seed=seed,
    )
    console.print(report_table(report))
    c = report.counts
    left = [
        f"{c[k]} {what}"
        for k, what in [
            ("unscored_cheap", f"unscored {cheap} labels (their items left out)"),
            ("unscored_human", f"unscored {human} labels"),
            ("human_without_cheap", f"{human} labels on items {cheap} did not score"),
            ("not_in_items", "labels of items not in --items"),
            ("human_held_back", f"{human} labels held back (--human-fraction)"),
        ]
        if c.get(k)
    ]
    if left:
        console.print("left out: " + "; ".join(left), markup=False)
    if report.held_back:
        shown = ", ".join(f"{g} {_pct(v)}" for g, v in report.held_back.items())
        console.print(f"rate from all {human} labels (held back): {shown}", markup=False)
    if report.comparison is not None and report.compare is not None:
        d, a, b = report.comparison, *report.compare
        console.print(
            f"{a} - {b}: {100 * d.estimate.estimate:+.1f} points, {method} {level:.0%} CI "
            f"[{100 * d.estimate.ci[0]:+.1f}, {100 * d.estimate.ci[1]:+.1f}]; human-only "
            f"{100 * d.human_only.estimate:+.1f} [{100 * d.human_only.ci[0]:+.1f}, "
            f"{100 * d.human_only.ci[1]:+.1f}]",
            markup=False,
        )
    if json_out is not None:
        with atomic_writer(json_out) as fh:
            json.dump(report.to_dict(), fh, indent=2)
        console.print(f"figures -> {json_out}", markup=False)
    return report
