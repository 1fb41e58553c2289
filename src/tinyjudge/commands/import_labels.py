"""``tinyjudge import labels``: a sheet of people's labels into human:<rater> and human:final."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tinyjudge.errors import DataError, UsageError

from ._io import (
    REPLACE_LABELS_HELP,
    err,
    out,
    refuse_writing_over_inputs,
    resolve_rubric,
    store_rubric,
    write_labels_out,
)

if TYPE_CHECKING:
    from tinyjudge.datasets.importers.label_sheet import Method

__all__ = ["command"]


def command(
    path: Path = typer.Argument(..., help="a .csv, .tsv, .jsonl, .json or .parquet sheet"),
    rubric: str = typer.Option(..., "--rubric", help="the labels' rubric (name or .yaml path)"),
    out_path: Path = typer.Option(..., "--out", help="labels JSONL to write"),
    item_field: str = typer.Option(..., "--item-field", help="column of item ids"),
    label_field: str = typer.Option(
        ..., "--label-field", help="column of labels; several (a,b,c) for one column per rater"
    ),
    rater_field: str = typer.Option(None, "--rater-field", help="column naming the rater"),
    items: Path = typer.Option(None, "--items", help="items.jsonl: count ids that match none"),
    aggregate: str = typer.Option(
        "majority", "--aggregate", help="human:final by majority (ties unscored) or dawid-skene"
    ),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad rows and go on"),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
) -> None:
    """Import people's labels: one human:<rater> label per judgment, one human:final per item.

    Labels already in --out from other sources stay, after these, unless --replace-labels.
    """
    from tinyjudge.datasets.importers import import_labels
    from tinyjudge.datasets.jsonl import read_items

    if aggregate == "majority":
        method: Method = "majority"
    elif aggregate == "dawid-skene":
        method = "dawid-skene"
    else:
        raise UsageError(
            f"--aggregate {aggregate!r}: choose majority or dawid-skene", param="aggregate"
        )
    refuse_writing_over_inputs([(out_path, "--out")], [(path, "sheet"), (items, "--items file")])
    rub = resolve_rubric(rubric)
    known = read_items(items) if items is not None else None
    fields = [f.strip() for f in label_field.split(",") if f.strip()]
    got = import_labels(
        path,
        rub,
        item_field,
        fields,
        rater_field,
        known,
        method,
        skip_bad,
    )
    if not got.labels:
        raise DataError(
            str(path),
            None,
            f"no labels read ({len(got.bad)} bad rows, {got.empty} rows with no label); "
            f"{out_path} not written",
        )
    # under the file's lock: a concurrent import or the labelling page loses nothing
    n = write_labels_out(out_path, got.labels, replace_labels)
    store_rubric(rub, out_path.parent)
    finals = sum(1 for lab in got.labels if lab.source == "human:final")
    out.print(
        f"{path}: {n - finals} labels from {len(got.raters)} raters, {finals} human:final "
        f"-> {out_path}",
        markup=False,
        soft_wrap=True,
    )
    for source, count in got.raters.items():
        out.print(f"  {source:<24} {count:>6}", markup=False, soft_wrap=True)
    how = "majority" if aggregate == "majority" else "Dawid-Skene"
    tie = f"; {got.ties} ties left unscored" if got.ties else ""
    out.print(f"  {'human:final':<24} {finals:>6} ({how}{tie})", markup=False, soft_wrap=True)
    if got.empty:
        out.print(f"  {got.empty} rows with no label (skipped)", markup=False, soft_wrap=True)
    if got.unmatched:
        first = ", ".join(got.unmatched[:5]) + (", ..." if len(got.unmatched) > 5 else "")
        err.print(
            f"{len(got.unmatched)} item ids match no item in {items}: {first}",
            markup=False,
            soft_wrap=True,
        )
    for bad in got.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
    if got.bad:
        err.print(f"{len(got.bad)} bad rows skipped (listed above)", markup=False, soft_wrap=True)
