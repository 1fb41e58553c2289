"""``tinyjudge calibrate``: a reward model's, or a label source's, probabilities against people."""

from __future__ import annotations

from pathlib import Path

import typer

from tinyjudge._present import calibration_table, show_calibration_warning, show_model_calibration
from tinyjudge.calibrate import CalibrateConfig
from tinyjudge.errors import UsageError

from ._config_flags import config_flags
from ._io import out, read_label_files, refuse_writing_over_inputs

__all__ = ["command"]


@config_flags(CalibrateConfig, skip=("n_splits",))
def command(
    paths: list[Path] = typer.Argument(
        ..., help="MODEL_DIR ITEMS LABELS... (or LABELS... with --source)"
    ),
    human: str = typer.Option(..., "--human", help="the human source, e.g. human:final"),
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
    n_splits: int = typer.Option(5, "--folds", "--n-splits", help="cross-fitting folds"),
    skip_bad: bool = typer.Option(
        False, "--skip-bad", help="report bad lines of the labels files (a torn one) and go on"
    ),
    *,
    config: CalibrateConfig,
) -> None:
    """Calibrate a reward model's probabilities against human labels.

    With a model directory, the model is calibrated in memory
    (``tinyjudge.calibrate``) and its ``calibration.json`` goes into the directory
    (``load_model`` applies it from then on); the model card gains before/after
    figures. With ``--source``, any label source that gives ``probs`` is calibrated
    the same way and its labels are written as a new source ``<source>+<method>``.
    """
    from tinyjudge.calibrate import calibrate, calibrate_source, save_source_calibration
    from tinyjudge.datasets.jsonl import read_items

    cfg = config.replace(n_splits=n_splits)
    if source is not None:
        if out_dir is None:
            raise UsageError("--source needs --out DIR for the calibrated labels", param="out_dir")
        written = [(out_dir / name, "--out") for name in ("labels.jsonl", "metrics.json")]
        given = [*((path, "labels file") for path in paths), (items, "--items file")]
        refuse_writing_over_inputs(written, given)
        labels = read_label_files(paths, skip_bad)
        item_list = read_items(items) if items is not None else None
        done = calibrate_source(labels, source=source, human=human, items=item_list, config=cfg)
        save_source_calibration(done, out_dir)
        show_calibration_warning(out, done)
        title = f"{cfg.method} calibration of {source} against {human}"
        out.print(calibration_table(done.crossfit, title))
        if not done.applied:
            out.print(f"{done.n} items; no calibration applied; wrote {out_dir}/metrics.json")
            return
        new_source = f"{source}+{cfg.method}"
        out.print(f"{done.n} items; wrote {out_dir}/calibration.json, labels.jsonl ({new_source})")
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
    import warnings

    from tinyjudge.calibrate import CalibrationWarning, save_model_calibration
    from tinyjudge.distill import load_model

    model_dir, items_path, *label_paths = paths
    model = load_model(model_dir, calibrated=False)
    labels = read_label_files(label_paths, skip_bad, rubric=model.rubric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)  # shown below, with the figures
        calibrated = calibrate(
            model, read_items(items_path), labels, human, config=cfg, items_name=str(items_path)
        )
    done = calibrated.calibration_
    written = save_model_calibration(done, model_dir, out_dir)
    show_model_calibration(out, done, model_dir, human, written)
