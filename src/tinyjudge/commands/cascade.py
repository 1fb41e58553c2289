"""``tinyjudge cascade``: the reward model where it has earned it, the judge for the rest."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tinyjudge.cascade import CascadeConfig
from tinyjudge.judge import JudgeConfig

from ._bars import progress_bars, quiet_option
from ._config_flags import config_flags, under
from ._io import out, refuse_writing_over_inputs

__all__ = ["command", "UNMET"]

# the exit status of a run whose reward model could not be guaranteed the target (the
# files are written, every item escalated): a script can tell it from success (0), a
# usage error (2) and a failure (1)
UNMET = 3


@config_flags(CascadeConfig)
def command(
    model_dir: Path = typer.Argument(..., help="a model directory from `tinyjudge distill`"),
    items: Path = typer.Argument(..., help="items.jsonl (calibration items among them)"),
    calibration: Path = typer.Option(
        ..., "--calibration", help="labels.jsonl holding the reference's labels on some items"
    ),
    reference: str = typer.Option(
        ..., "--reference", help="the source agreement is guaranteed against, e.g. human:final"
    ),
    out_dir: Path = typer.Option(..., "--out", help="folder for labels.jsonl and cascade.json"),
    cache: Path = typer.Option(
        None, "--cache", help="the judge's SQLite cache (default: OUT/judge.cache.sqlite)"
    ),
    quiet: bool = quiet_option(),
    *,
    config: CascadeConfig,
) -> None:
    """Keep the reward model's labels where it meets --target; escalate the rest to the judge.

    The threshold is chosen on the items that --calibration labels (held out of
    the output), so that agreement with --reference on kept items is at least
    --target with probability at least 1 - --delta. Without a judge (--judge-model,
    --judge-replay, --judge-local or --judge-panel) the
    escalated items are written unscored (reason "escalated") for people.
    Items sharing a prompt, question or dialogue (--group-by, or the key the
    importers wrote) are tested as groups. Exit status 3: no threshold met
    --target (the files are written, every item escalated).
    """
    from tinyjudge.cascade import cascade
    from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl

    labels_path, json_path = out_dir / "labels.jsonl", out_dir / "cascade.json"
    refuse_writing_over_inputs(
        [(labels_path, "--out"), (json_path, "--out")],
        [(items, "items file"), (calibration, "--calibration file")],
    )
    cache_path = None
    if config.judge is not None:
        with under("judge", JudgeConfig):
            config.judge.check_runnable()
        cache_path = cache or out_dir / "judge.cache.sqlite"
    from tinyjudge.distill import load_model

    model = load_model(model_dir)
    # read before the output folder is made: a repeated id or a label the rubric does not
    # have is refused in one line (file:line) instead of counted as a disagreement
    item_list = read_items(items)
    calib = read_labels(calibration, model.rubric, other_rubrics=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    with progress_bars(quiet):  # the judge's calls on the escalated items
        result = cascade(
            model,
            item_list,
            calib,
            reference=reference,
            config=config,
            cache=cache_path,
        )
    write_jsonl(labels_path, result.labels)
    json_path.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    for line in result.lines():
        out.print(line, markup=False, soft_wrap=True)
    out.print(f"labels (source {result.source}) -> {labels_path}; figures -> {json_path}")
    if not result.guaranteed:
        raise typer.Exit(UNMET)
