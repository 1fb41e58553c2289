"""``tinyjudge import``: your own transcripts (``chat``) and label sheets (``labels``), or a
public labelled set into items.jsonl and labels.jsonl."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from tinyjudge.errors import UsageError

from ._io import REPLACE_LABELS_HELP, err, fail, labels_to_keep, out, resolve_rubric, store_rubric

__all__ = ["command", "build_app"]


def command(
    name: str = typer.Argument(..., help="dataset: xstest, in3, llmbar, pandalm, ..."),
    src: Path = typer.Argument(..., help="folder laid out like the original release"),
    out_dir: Path = typer.Option(..., "--out", help="writes OUT/items.jsonl and OUT/labels.jsonl"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad rows and go on"),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
) -> None:
    """Import a public labelled set into items.jsonl and labels.jsonl.

    Without --skip-bad the import stops at the first bad record and exits 2;
    with --skip-bad it reports each bad record and imports the rest. The two
    files are written into a temporary folder beside OUT and take the place of
    OUT's earlier pair together, only when the import succeeds: a failed or
    killed import leaves OUT as it was (its other files always stay). Labels
    already in OUT/labels.jsonl from other sources (people's, from the labelling
    page) stay, after the imported ones, unless --replace-labels.
    """
    from tinyjudge._atomic import atomic_dir, exclusive_lock
    from tinyjudge.datasets.importers import ImportStopped, run_import
    from tinyjudge.datasets.jsonl import write_jsonl

    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} is a file; give a folder to write into", param="out_dir")
    try:
        result = run_import(name, src, skip_bad=skip_bad)
    except ImportStopped as stop:
        kept = (
            f"{out_dir} is as it was"
            if (out_dir / "items.jsonl").exists() or (out_dir / "labels.jsonl").exists()
            else "nothing written"
        )
        fail(f"{stop}; {kept}; fix that record, or rerun with --skip-bad to import the rest")
    with exclusive_lock(out_dir / "labels.jsonl"), atomic_dir(out_dir, keep_others=True) as tmp:
        n_items = write_jsonl(tmp / "items.jsonl", result.items)
        others = labels_to_keep(out_dir / "labels.jsonl", result.labels, replace_labels)
        n_labels = write_jsonl(tmp / "labels.jsonl", [*result.labels, *others]) - len(others)
        for rubric_id in dict.fromkeys(lab.rubric for lab in result.labels):
            store_rubric(resolve_rubric(rubric_id), tmp)
    out.print(f"{name}: {n_items} items, {n_labels} labels -> {out_dir}", markup=False)
    for source, n in result.sources().items():
        unscored = sum(1 for lab in result.labels if lab.source == source and lab.status != "ok")
        extra = f" ({unscored} unscored)" if unscored else ""
        out.print(f"  {source:<32} {n:>6}{extra}", markup=False)
    for bad in result.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
    if result.bad:
        err.print(f"{len(result.bad)} bad records skipped (listed above)", markup=False)


def _public_set(name: str, rubric: str) -> Callable[..., None]:
    def run(
        src: Path = typer.Argument(..., help="folder laid out like the original release"),
        out_dir: Path = typer.Option(
            ..., "--out", help="writes OUT/items.jsonl and OUT/labels.jsonl"
        ),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad rows and go on"),
        replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
    ) -> None:
        command(name, src, out_dir, skip_bad, replace_labels)

    run.__doc__ = f"Import the public set {name} (labels under rubric {rubric})."
    return run


class _ImportGroup(TyperGroup):
    """An unknown set's name is a user's mistake: one line naming the sets, not a usage screen."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else None
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from tinyjudge.datasets.importers import IMPORTERS

            raise UsageError(
                f"unknown dataset {name!r}; importers exist for {sorted(IMPORTERS)}, "
                "and `tinyjudge import chat` / `import labels` read your own files",
                param="name",
            )
        return super().resolve_command(ctx, args)


def build_app() -> typer.Typer:
    """Import your own chat transcripts (chat) and label sheets (labels), or a public set."""
    from tinyjudge.datasets.importers import IMPORTERS

    from . import import_chat, import_labels

    group = typer.Typer(no_args_is_help=True, add_completion=False, cls=_ImportGroup)
    group.command("chat")(import_chat.command)
    group.command("labels")(import_labels.command)
    for name, (_, rubric) in IMPORTERS.items():
        group.command(name)(_public_set(name, rubric))
    return group
