"""``tinyjudge audit``: read label files, build the report, write it, print a summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from tinyjudge.audit import AuditConfig

if TYPE_CHECKING:
    from tinyjudge.audit import PairRow

from ._config_flags import config_flags
from ._io import (
    labels_rubric,
    out,
    read_label_files,
    refuse_writing_over_inputs,
    resolve_rubric_filter,
)
from ._overlap import allow_overlap_option, model_dir_option, refuse_people_overlap

__all__ = ["command"]


@config_flags(AuditConfig)
def command(
    labels: list[Path] = typer.Argument(..., help="labels JSONL file(s), any sources"),
    items: Path = typer.Option(None, "--items", help="items JSONL (for --group-by/--slice-by)"),
    report: Path = typer.Option(None, "--report", help="write the HTML report here"),
    json_out: Path = typer.Option(None, "--json", help="write the figures as JSON here"),
    rubric: str = typer.Option(
        None, "--rubric", help="only labels under this rubric (id, name or YAML path)"
    ),
    model_dir: list[Path] = model_dir_option(),
    allow_overlap: bool = allow_overlap_option(),
    exploit: Path = typer.Option(
        None,
        "--exploit",
        help="an exploit.json from `tinyjudge exploit`: its section in the report",
    ),
    *,
    config: AuditConfig,
) -> None:
    """Agreement, bias probes and an HTML report for any label sources."""
    from tinyjudge.audit import audit, write_report
    from tinyjudge.datasets.jsonl import read_items

    refuse_writing_over_inputs(
        [(report, "--report"), (json_out, "--json")],
        [*((path, "labels file") for path in labels), (items, "--items file")],
    )
    reference = config.reference
    rubric_id, rub = resolve_rubric_filter(rubric)
    all_labels = read_label_files(labels, rubric=rub)
    sources = sorted({lab.source for lab in all_labels})
    refuse_people_overlap(
        all_labels,
        labels,
        [s for s in sources if s.startswith("rm:")],
        # people, and the reference: a model's teacher as the truth on its own training items
        [*(s for s in sources if s.startswith("human:") and s != reference), reference],
        model_dir,
        allow_overlap,
    )
    rub = rub or labels_rubric(all_labels, labels, rubric_id)
    item_list = read_items(items) if items is not None else None
    result = audit(all_labels, item_list, config, rubric=rub or rubric_id)
    if exploit is not None:
        from tinyjudge.audit import with_exploit

        result = with_exploit(result, exploit)
    write_report(result, report, json_out)
    level = f"{result.meta['level']:.0%}"
    rows = [r for r in result.pairs if r.a == reference]
    out.print(_agreement_table(f"agreement with {reference} ({level} CIs)", "source", rows))
    for key, by_value in result.slices.items():
        sliced = [(value, r) for value, got in by_value.items() for r in got]
        title = f"agreement with {reference} by {key} ({level} CIs)"
        out.print(_agreement_table(title, key.split(".")[-1], [r for _, r in sliced], sliced))
    written = [path for path in (report, json_out) if path is not None]
    for path in written:
        out.print(f"wrote {path}")
    if not written:
        out.print("nothing written: pass --report OUT.html and/or --json OUT.json to keep it")


def _agreement_table(
    title: str, first: str, rows: list[PairRow], sliced: list[tuple[str, PairRow]] | None = None
) -> Table:
    """One row per source (per slice value and source, when ``sliced``)."""
    table = Table(title=title)
    for col in (first, *(["source"] if sliced else []), "n", "unscored", "accuracy", "kappa",
                "alpha"):  # fmt: skip
        table.add_column(col, justify="left" if col in (first, "source") else "right")
    values = [v for v, _ in sliced] if sliced else [None] * len(rows)
    for value, r in zip(values, rows, strict=True):
        name = r.b + (" (vs the others' final)" if r.reference_without else "")
        table.add_row(
            *([value, name] if value is not None else [name]),
            str(r.n), str(r.unscored), r.accuracy.shown(bounds=False), r.kappa.shown(),
            r.alpha.shown(bounds=False),
        )  # fmt: skip
    return table
