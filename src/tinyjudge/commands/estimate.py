"""``tinyjudge estimate``: read labels, estimate rates with PPI, print a table, write JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.table import Table

from tinyjudge.estimate import EstimateConfig
from tinyjudge.results import Interval

from ._config_flags import config_flags
from ._io import labels_rubric, out, read_label_files, refuse_writing_over_inputs, resolve_rubric
from ._overlap import allow_overlap_option, model_dir_option, refuse_people_overlap

if TYPE_CHECKING:
    from tinyjudge.estimate import RateReport, RateRow

__all__ = ["command", "report_table"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _percent(x: Interval) -> Interval:
    return Interval(100 * x.value, *(None if b is None else 100 * b for b in (x.low, x.high)))


def _ci(x: Interval) -> str:
    p = _percent(x)
    return f"{p.low:.1f}-{p.high:.1f}"


def report_table(report: RateReport) -> Table:
    """One row per group (and one for all items): rate, PPI CI, human-only CI, n, N.

    Rates are in percent; ``gain`` is the effective number of human labels over
    the real number (what the cheap labels bought), ``lam`` the weight they got.
    """
    level = report.overall.level
    method = report.overall.method
    clustered = (
        f", clustered by {report.cluster} ({report.overall.n_clusters} clusters)"
        if report.cluster
        else ""
    )
    table = Table(
        title=f"rate of {report.behaviour} (%, rubric {report.rubric}): {report.cheap} + "
        f"{report.human}, {method} and human-only {level:.0%} CIs{clustered}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    rows: list[tuple[str, RateRow]] = list(report.groups.items())
    rows.append(("all", report.overall))
    cells = [
        [
            name,
            f"{100 * r.rate.value:.1f}",
            _ci(r.rate),
            _ci(r.human_only),
            str(r.n_human),
            str(r.n_items),
            f"{r.lam:.2f}",
            f"{r.gain:.1f}x",
        ]
        for name, r in rows
    ]
    columns = [report.by.split(".")[-1] if report.by else "items", "rate", method,
               "human-only", "n human", "N cheap", "lam", "gain"]  # fmt: skip
    # on a narrow terminal the column names wrap; a figure is never wrapped or cut
    for j, col in enumerate(columns):
        widest = max(len(row[j]) for row in cells)
        table.add_column(
            col, justify="left" if j == 0 else "right", overflow="fold", min_width=widest
        )
    for row in cells:
        table.add_row(*row)
    return table


@config_flags(EstimateConfig)
def command(
    labels: list[Path] = typer.Argument(..., help="labels JSONL file(s), any sources"),
    items: Path = typer.Option(None, "--items", help="items JSONL (for --by and --cluster)"),
    rubric: str = typer.Option(
        None, "--rubric", help="name or YAML path; its `positive` labels are the behaviour"
    ),
    json_out: Path = typer.Option(None, "--json", help="also write the figures as JSON"),
    model_dir: list[Path] = model_dir_option(),
    allow_overlap: bool = allow_overlap_option(),
    *,
    config: EstimateConfig,
) -> None:
    """Estimate behaviour rates from cheap labels plus a few human ones (PPI)."""
    from tinyjudge.datasets.jsonl import atomic_writer, read_items
    from tinyjudge.estimate import estimate_rates

    refuse_writing_over_inputs(
        [(json_out, "--json")],
        [*((path, "labels file") for path in labels), (items, "--items file")],
    )
    cheap, human, cluster = config.cheap, config.human, config.cluster
    rub = resolve_rubric(rubric) if rubric is not None else None
    records = read_label_files(labels, rubric=rub)
    refuse_people_overlap(records, labels, [cheap], [human], model_dir, allow_overlap)
    report = estimate_rates(
        records,
        read_items(items) if items is not None else None,
        config,
        rubric=rub or labels_rubric(records, labels),
    )
    out.print(report_table(report))
    c = report.counts
    left = [
        f"{c[k]} {what}"
        for k, what in [
            ("unscored_cheap", f"unscored {cheap} labels (their items left out)"),
            ("unscored_human", f"unscored {human} labels"),
            ("human_without_cheap", f"{human} labels on items {cheap} did not score"),
            ("not_in_items", "labels of items not in --items"),
            ("human_held_back", f"{human} labels held back (--human-fraction)"),
            ("no_cluster", f"items without {cluster} (each its own cluster)"),
        ]
        if c.get(k)
    ]
    if left:
        out.print("left out: " + "; ".join(left), markup=False)
    if report.held_back:
        shown = ", ".join(f"{g} {_pct(v)}" for g, v in report.held_back.items())
        out.print(f"rate from all {human} labels (held back): {shown}", markup=False)
    if report.comparison is not None:
        d = report.comparison
        p, alone = _percent(d.difference), _percent(d.human_only)
        out.print(
            f"{d.a} - {d.b}: {p.value:+.1f} points, {config.method} {config.level:.0%} CI "
            f"[{p.low:+.1f}, {p.high:+.1f}]; human-only {alone:+.1f}",
            markup=False,
        )
    if json_out is not None:
        with atomic_writer(json_out) as fh:
            json.dump(report.to_dict(), fh, indent=2)
        out.print(f"figures -> {json_out}", markup=False)
