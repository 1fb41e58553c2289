"""``tinyjudge hints``: step-level hints as JSONL, or as rows TRL's self-distillation
trainers read (``--format trl``/``messages`` with ``--items``)."""

from __future__ import annotations

from pathlib import Path

import typer

from tinyjudge.hints import HintsConfig

from ._config_flags import config_flags
from ._io import err, fail, out, refuse_writing_over_inputs, resolve_rubric_filter

__all__ = ["command"]


@config_flags(HintsConfig, skip=("hint_from",))
def command(
    labels: Path = typer.Argument(..., help="labels.jsonl whose labels carry hints"),
    out_path: Path = typer.Option(..., "--out", help="the hints or rows, one JSON per line"),
    items: Path = typer.Option(None, "--items", help="items.jsonl (needed by trl, messages)"),
    hint_from: str = typer.Option(
        "hint", "--from", help="hint: the labels' hints; rationale: their rationales"
    ),
    source: str = typer.Option(None, help="only this label source, e.g. judge:gpt-4o"),
    rubric: str = typer.Option(None, help="only labels under this rubric (name, id or YAML path)"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad lines and go on"),
    *,
    config: HintsConfig,
) -> None:
    """Export step-level hints as JSONL, or as TRL rows (prompt, privileged_context, ...)."""
    from tinyjudge.datasets.jsonl import read_items, read_jsonl, write_jsonl
    from tinyjudge.errors import DataError, UsageError
    from tinyjudge.hints import export_hints, hint_rows
    from tinyjudge.records import Label

    try:
        config = config.replace(hint_from=hint_from)
    except UsageError:
        fail(f"--from must be one of 'hint', 'rationale', got {hint_from!r}")
    inputs = [(labels, "labels file")] + ([(items, "items file")] if items else [])
    refuse_writing_over_inputs([(out_path, "--out")], inputs)
    rubric_id, _ = resolve_rubric_filter(rubric)
    if config.format == "hints":
        result = export_hints(
            labels, out_path, source=source, rubric=rubric_id, skip_bad=skip_bad,
            hint_from=config.hint_from,
        )  # fmt: skip
        for bad in result.bad:
            err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
        err.file.flush()  # the rows first: the summary is the last thing on the screen
        out.print(
            f"{result.written} hints from {result.labels} labels -> {out_path} "
            f"({result.without_hint} without a hint, {result.unscored} unscored)",
            markup=False,
            soft_wrap=True,
        )
        return
    if items is None:
        fail(f"--format {config.format} needs --items (the trajectories the labels are about)")
    bad_lines: list[DataError] = []
    on_error = bad_lines.append if skip_bad else None
    kept = [
        lab
        for lab in read_jsonl(labels, Label, on_error=on_error)
        if (not source or lab.source == source) and (not rubric_id or lab.rubric == rubric_id)
    ]
    rows = hint_rows(read_items(items, on_error=on_error), kept, config)
    write_jsonl(out_path, rows.rows)
    for refused in rows.refused:
        err.print(f"refused: {refused}", markup=False, soft_wrap=True)
    for leak in rows.leaks:
        err.print(f"leak: {leak}", markup=False, soft_wrap=True)
    for escaped in rows.escaped:
        err.print(f"escaped: {escaped}", markup=False, soft_wrap=True)
    for line in bad_lines:
        err.print(f"skipped: {line}", markup=False, soft_wrap=True)
    err.file.flush()  # the rows first: the summary is the last thing on the screen
    out.print(f"{rows.summary()} -> {out_path}", markup=False, soft_wrap=True)
