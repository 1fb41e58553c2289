"""``tinyjudge score``: score items with a distilled reward model (here or on Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ._bars import quiet_option, shows_bars
from ._io import REPLACE_LABELS_HELP, err, fail, out, print_kept, refuse_writing_over_inputs

if TYPE_CHECKING:
    from tinyjudge.records import Label

__all__ = ["command"]


def command(
    model_dir: Path = typer.Argument(..., help="a model directory from `tinyjudge distill`"),
    items: Path = typer.Argument(..., help="items.jsonl"),
    out_path: Path = typer.Option(..., "--out", help="labels.jsonl to write"),
    batch_size: int = typer.Option(64, "--batch-size", min=1),
    raw: bool = typer.Option(False, "--uncalibrated", help="ignore calibration.json"),
    ray: str = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="score on Ray: 'local' starts one, 'auto' or "
        "HOST:PORT joins a cluster (needs the ray extra)",
    ),
    actors: int = typer.Option(2, "--actors", min=1, help="Ray actors (one model each)"),
    quiet: bool = quiet_option(),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
) -> None:
    """Score items with a distilled reward model."""
    from rich.progress import Progress

    from tinyjudge._people_items import learned_from_model_dir, write_sidecar
    from tinyjudge.datasets.jsonl import check_keepable, count_lines
    from tinyjudge.distill import load_model, score_file

    refuse_writing_over_inputs([(out_path, "--out")], [(items, "items file")])
    check_keepable(out_path, replace_labels)  # before the model loads
    if ray is not None:
        from tinyjudge.scale import score_file_on_ray

        n = score_file_on_ray(
            items,
            model_dir,
            out_path,
            address=ray,
            actors=actors,
            batch_size=batch_size,
            calibrated=not raw,
            replace_labels=replace_labels,
        )
        write_sidecar(out_path, learned_from_model_dir(model_dir, calibrated=not raw))
        out.print(f"{n} labels scored on Ray ({ray}) -> {out_path}")
        return
    model = load_model(model_dir, calibrated=not raw)
    unscored: list[Label] = []
    with Progress(console=err, transient=True, disable=not shows_bars(quiet)) as bar:
        task = bar.add_task(f"scoring with {model.name}", total=count_lines(items))
        n = score_file(
            model,
            items,
            out_path,
            batch_size,
            lambda k: bar.advance(task, k),
            unscored=unscored,
            replace_labels=replace_labels,
            on_written=lambda kept: print_kept(out_path, kept),
        )
    # which people labels the model learned from, for estimate and audit to check
    write_sidecar(out_path, learned_from_model_dir(model_dir, calibrated=not raw))
    out.print(f"{n} labels (source {model.source}) -> {out_path}")
    say_unscored(n, unscored, items)


def say_unscored(n: int, unscored: list[Label], items: Path) -> None:
    """Name the items left unscored (a reference the model reads was missing); fail when
    none was scored."""
    if not unscored:
        return
    first = unscored[0]
    line = (
        f"{len(unscored)} of {n} items unscored: {first.reason} (e.g. item {first.item_id!r}); "
        f"add it to each item's metadata in {items}"
    )
    if len(unscored) == n:
        fail(f"no item scored: {line}")
    err.print(line, markup=False, soft_wrap=True)
