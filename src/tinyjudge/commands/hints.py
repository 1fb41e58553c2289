"""``tinyjudge hints``: step-level hints as JSONL textual feedback for RL."""

from __future__ import annotations

from pathlib import Path

import typer

from ._io import err, out, refuse_writing_over_inputs, resolve_rubric_filter

__all__ = ["command"]


def command(
    labels: Path = typer.Argument(..., help="labels.jsonl whose labels carry hints"),
    out_path: Path = typer.Option(..., "--out", help="writes {item_id, step, hint} per line"),
    source: str = typer.Option(None, help="only this label source, e.g. judge:gpt-4o"),
    rubric: str = typer.Option(None, help="only labels under this rubric (name, id or YAML path)"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad lines and go on"),
) -> None:
    """Export step-level hints as JSONL textual feedback for RL."""
    from tinyjudge.hints import export_hints

    refuse_writing_over_inputs([(out_path, "--out")], [(labels, "labels file")])
    rubric_id, _ = resolve_rubric_filter(rubric)
    result = export_hints(labels, out_path, source=source, rubric=rubric_id, skip_bad=skip_bad)
    out.print(
        f"{result.written} hints from {result.labels} labels -> {out_path} "
        f"({result.without_hint} without a hint, {result.unscored} unscored)",
        markup=False,
        soft_wrap=True,
    )
    for bad in result.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
