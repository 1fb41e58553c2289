"""``tinyjudge schema``: the JSON Schema of items and labels files."""

from __future__ import annotations

import json

import typer

__all__ = ["command"]


def command(
    kind: str = typer.Argument(..., help="items or labels"),
) -> None:
    """Print the JSON Schema of one line of an items or labels JSONL file."""
    from tinyjudge.datasets.schema import record_schema

    typer.echo(json.dumps(record_schema(kind), indent=2, ensure_ascii=False))
