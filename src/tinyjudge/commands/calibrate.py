"""``tinyjudge calibrate``: a reward model's, or a label source's, probabilities against people."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import typer

from tinyjudge._present import calibration_table, show_calibration_warning, show_model_calibration
from tinyjudge.errors import UsageError

from ._io import out, read_label_files, refuse_writing_over_inputs

__all__ = ["command"]


class _FitOptions(TypedDict):
    """The fitting options ``calibrate_model`` and ``calibrate_source`` share."""

    method: str
    group_by: str | None
    n_splits: int
    n_boot: int
    seed: int
    if_worse: str


def command(
    paths: list[Path] = typer.Argument(
        ..., help="MODEL_DIR ITEMS LABELS... (or LABELS... with --source)"
    ),
    human: str = typer.Option(..., "--human", help="the human source, e.g. human:final"),
    method: str = typer.Option(
        "temperature", "--method", help="temperature, vector, platt or isotonic"
    ),
    out_dir: Path = typer.Option(
        None,
        "--out",
        "--out-dir",
        help="model dir to write (default: in place); with --source, a folder",
    ),
    source: str = typer.Option(
        None, "--source", help="calibrate this label source's probs (e.g. judge:gpt-4)"
    ),
    items: Path = typer.Option(None, "--items", help="items JSONL, for --group-by with --source"),
    group_by: str = typer.Option(
        None, "--group-by", help="cross-fitting never splits this item key, e.g. metadata.prompt_id"
    ),
    n_splits: int = typer.Option(5, "--folds", help="cross-fitting folds"),
    n_boot: int = typer.Option(1000, "--n-boot", help="bootstrap resamples per interval"),
    seed: int = typer.Option(0, "--seed"),
    if_worse: str = typer.Option(
        "identity",
        "--if-worse",
        help="when the method makes held-out NLL or ECE worse than none: identity "
        "(apply none), refuse (exit 2) or keep",
    ),
    skip_bad: bool = typer.Option(
        False, "--skip-bad", help="report bad lines of the labels files (a torn one) and go on"
    ),
) -> None:
    """Calibrate a reward model's probabilities against human labels.

    With a model directory, ``calibration.json`` goes into it (``load_model``
    applies it from then on) and the model card gains before/after figures.
    With ``--source``, any label source that gives ``probs`` is calibrated the
    same way and its labels are written as a new source ``<source>+<method>``.
    """
    from tinyjudge._stats import check_n_boot
    from tinyjudge.calibrate import (
        calibrate_model,
        calibrate_source,
        make_calibrator,
        save_model_calibration,
        save_source_calibration,
    )
    from tinyjudge.datasets.jsonl import read_items

    check_n_boot(n_boot)  # before any file is read: 10^9 resamples would not fit in memory
    fit: _FitOptions = {
        "method": method,
        "group_by": group_by,
        "n_splits": n_splits,
        "n_boot": n_boot,
        "seed": seed,
        "if_worse": if_worse,
    }
    if source is not None:
        if out_dir is None:
            raise UsageError("--source needs --out DIR for the calibrated labels", param="out_dir")
        make_calibrator(method)
        written = [(out_dir / name, "--out") for name in ("labels.jsonl", "metrics.json")]
        given = [*((path, "labels file") for path in paths), (items, "--items file")]
        refuse_writing_over_inputs(written, given)
        labels = read_label_files(paths, skip_bad)
        item_list = read_items(items) if items is not None else None
        done = calibrate_source(labels, source=source, human=human, items=item_list, **fit)
        save_source_calibration(done, out_dir)
        show_calibration_warning(out, done)
        title = f"{method} calibration of {source} against {human}"
        out.print(calibration_table(done.crossfit, title))
        if not done.applied:
            out.print(f"{done.n} items; no calibration applied; wrote {out_dir}/metrics.json")
            return
        out.print(
            f"{done.n} items; wrote {out_dir}/calibration.json, labels.jsonl ({source}+{method})"
        )
        return
    if len(paths) < 3:
        raise UsageError(
            "expected MODEL_DIR ITEMS LABELS... (or LABELS... --source SOURCE for a label "
            f"source's probs), got {len(paths)} path(s)",
            param="paths",
        )
    if items is not None:
        raise UsageError(
            "ITEMS is the second argument here; --items is for --source", param="items"
        )
    from tinyjudge.distill import load_model

    model_dir, items_path, *label_paths = paths
    make_calibrator(method)  # an unknown method fails before any work
    model = load_model(model_dir, calibrated=False)
    labels = read_label_files(label_paths, skip_bad)
    done_model = calibrate_model(
        model, read_items(items_path), labels, human=human, items_name=str(items_path), **fit,
    )  # fmt: skip
    written = save_model_calibration(
        done_model, model_dir, out_dir, human=human, n_splits=n_splits, group_by=group_by
    )
    show_model_calibration(out, done_model, model_dir, human, written)
