"""``tinyjudge import chat``: a user's own chat transcripts into items.jsonl (and labels.jsonl)."""

from __future__ import annotations

from pathlib import Path

import typer

from tinyjudge.errors import TinyjudgeError

from ._io import REPLACE_LABELS_HELP, err, labels_to_keep, out, resolve_rubric, store_rubric

__all__ = ["command"]


def command(
    path: Path = typer.Argument(
        ..., help="a .jsonl, .json, .csv, .parquet file, or a `datasets` save_to_disk folder"
    ),
    out_dir: Path = typer.Option(
        ..., "--out", help="writes OUT/items.jsonl (and OUT/labels.jsonl with --label-field)"
    ),
    id_field: str = typer.Option(None, "--id-field", help="column of ids (default: id, if any)"),
    messages_field: str = typer.Option(
        None, "--messages-field", help="column of messages (default: messages, conversations, ...)"
    ),
    label_field: str = typer.Option(None, "--label-field", help="column of labels, if any"),
    rubric: str = typer.Option(None, "--rubric", help="the labels' rubric (name or .yaml path)"),
    source: str = typer.Option(None, "--source", help="the labels' source, e.g. human:final"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad rows and go on"),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
) -> None:
    """Import your own chat transcripts (OpenAI SDK, vLLM, TRL shapes) as items.

    Every other column goes to the items' metadata. Rows without an id get one
    from their content. A bad row stops the import (file:line) and writes
    nothing, unless --skip-bad. Labels already in OUT/labels.jsonl from other
    sources stay, unless --replace-labels.
    """
    from tinyjudge._atomic import atomic_dir
    from tinyjudge.datasets.importers import import_chat
    from tinyjudge.datasets.jsonl import write_jsonl

    if out_dir.exists() and not out_dir.is_dir():
        raise TinyjudgeError(f"--out {out_dir} is a file; give a folder to write into")
    rub = resolve_rubric(rubric) if rubric is not None else None
    got = import_chat(path, id_field, messages_field, label_field, rub, source, skip_bad)
    if not got.items:
        raise TinyjudgeError(f"{path}: no items read (all {len(got.bad)} rows were bad)")
    with atomic_dir(out_dir, keep_others=True) as tmp:
        write_jsonl(tmp / "items.jsonl", got.items)
        if label_field is not None:
            kept = labels_to_keep(out_dir / "labels.jsonl", got.labels, replace_labels)
            write_jsonl(tmp / "labels.jsonl", [*got.labels, *kept])
            if rub is not None:
                store_rubric(rub, tmp)
    out.print(
        f"{path}: {len(got.items)} items -> {out_dir / 'items.jsonl'}", markup=False, soft_wrap=True
    )
    if got.hashed_ids:
        out.print(
            f"  ids: {got.hashed_ids} made from the content (16 hex digits of its SHA-256; "
            "the same transcript always gets the same id)",
            markup=False,
            soft_wrap=True,
        )
    if got.metadata_fields:
        out.print(f"  metadata: {', '.join(got.metadata_fields)}", markup=False, soft_wrap=True)
    if label_field is not None:
        out.print(
            f"  labels: {len(got.labels)} ({source}) -> {out_dir / 'labels.jsonl'}", markup=False
        )
    for bad in got.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
    if got.bad:
        err.print(f"{len(got.bad)} bad rows skipped (listed above)", markup=False, soft_wrap=True)
