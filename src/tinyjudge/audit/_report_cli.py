"""``tinyjudge audit``: read label files, build the report, write it, print a summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tinyjudge.errors import TinyjudgeError

__all__ = ["audit_command"]


def _fmt(x: float | None, ci: list[float | None] | None = None) -> str:
    if x is None:
        return "–"
    if ci and ci[0] is not None:
        return f"{x:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
    return f"{x:.3f}"


def audit_command(
    labels: Sequence[Path],
    *,
    items: Path | None,
    reference: str,
    group_by: str | None,
    slice_by: Sequence[str],
    report: Path | None,
    json_out: Path | None,
    rubric: str | None,
    order: str | None,
    n_boot: int,
    seed: int,
    console: Console,
) -> None:
    """Build the audit report from label files and write the HTML and/or JSON."""
    from tinyjudge.audit.report import build_report, write_report
    from tinyjudge.datasets.jsonl import read_items, read_labels

    if report is None and json_out is None:
        raise TinyjudgeError("nothing to write: pass --report OUT.html and/or --json OUT.json")
    all_labels = [lab for path in labels for lab in read_labels(path)]
    item_list = read_items(items) if items is not None else None
    scale = [s.strip() for s in order.split(",") if s.strip()] if order else None
    result = build_report(
        all_labels,
        item_list,
        reference=reference,
        group_by=group_by,
        slice_by=list(slice_by),
        rubric=rubric,
        order=scale,
        n_boot=n_boot,
        seed=seed,
    )
    write_report(result, report, json_out)
    meta = result.data["meta"]
    level = f"{meta['level']:.0%}"
    table = Table(title=f"agreement with {reference} ({level} CIs)")
    for col in ("source", "n", "unscored", "accuracy", "kappa", "alpha"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for r in result.data["pairs"]:
        if r["a"] == reference:
            table.add_row(
                r["b"], str(r["n"]), str(r["unscored"]), _fmt(r["accuracy"]),
                _fmt(r["kappa"], r["kappa_ci"]), _fmt(r["alpha"]),
            )  # fmt: skip
    console.print(table)
    for path in (report, json_out):
        if path is not None:
            console.print(f"wrote {path}")
