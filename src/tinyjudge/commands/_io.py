"""What every verb shares: the two consoles, the one-line failure, the rubric and label files.

A verb reads its paths, resolves the rubric once (a built-in name or a YAML
path, wherever a rubric is named) and hands in-memory records to the stage
libraries; only this layer prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from tinyjudge._atomic import refuse_writing_over_inputs
from tinyjudge.records import Label
from tinyjudge.rubric import Rubric, list_rubrics, load_rubric, save_rubric_copy, stored_rubric

if TYPE_CHECKING:
    from tinyjudge.datasets.jsonl import KeptLabels

__all__ = [
    "out",
    "err",
    "fail",
    "resolve_rubric",
    "resolve_rubric_filter",
    "store_rubric",
    "labels_rubric",
    "read_label_files",
    "refuse_writing_over_inputs",
    "labels_to_keep",
    "REPLACE_LABELS_HELP",
    "write_labels_out",
    "print_kept",
]

REPLACE_LABELS_HELP = (
    "drop the labels already in the labels file from other sources (people's from the "
    "labelling page, a judge's); without it they are kept"
)

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def fail(message: str) -> NoReturn:
    """Print one error line and exit 2."""
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def resolve_rubric(name_or_path: str | Path) -> Rubric:
    """The rubric a user named: a built-in name or a path to a YAML file.

    Raises:
        TinyjudgeError: no such rubric, or the file is not a valid rubric.
    """
    return load_rubric(name_or_path)


def resolve_rubric_filter(value: str | None) -> tuple[str | None, Rubric | None]:
    """A ``--rubric`` that selects labels: the rubric id, and the rubric when one can be read.

    A built-in name or a YAML path gives the rubric (so its labels and ``positive``
    travel with it); any other bare id still selects the labels written under it.

    Raises:
        TinyjudgeError: a YAML path that is missing or not a valid rubric.
    """
    if value is None:
        return None, None
    p = Path(value)
    if p.suffix in {".yaml", ".yml"} or p.is_file() or value in list_rubrics():
        rub = resolve_rubric(value)
        return rub.id, rub
    return value, None


def store_rubric(rubric: Rubric, folder: Path) -> Path:
    """Store the rubric's copy (``rubric.<hash>.yaml``) in the folder that holds its labels."""
    folder.mkdir(parents=True, exist_ok=True)
    return save_rubric_copy(rubric, folder)


def labels_rubric(
    labels: Sequence[Label], paths: Sequence[Path], rubric_id: str | None = None
) -> Rubric | None:
    """The rubric the labels were written under, from its copy stored beside their files.

    Used where a verb was given no rubric it can read (none, or a bare id that is
    not built in), so a custom YAML rubric travels with its labels. None when the
    labels (those under ``rubric_id``) use several rubrics or no copy is there.

    Raises:
        TinyjudgeError: a stored copy whose content no longer has its hash.
    """
    chosen = [lab for lab in labels if rubric_id is None or lab.rubric == rubric_id]
    if len({lab.rubric for lab in chosen}) != 1:
        return None
    hashes = dict.fromkeys(lab.rubric_hash for lab in chosen if lab.rubric_hash)
    for folder in dict.fromkeys(Path(p).parent for p in paths):
        for h in hashes:
            if (rub := stored_rubric(folder, h)) is not None:
                return rub
    return None


def read_label_files(
    paths: Sequence[Path], skip_bad: bool = False, rubric: Rubric | None = None
) -> list[Label]:
    """Every label of every file, in order.

    With ``skip_bad`` a bad line (a torn last line, say) is reported on stderr
    and the rest is read. With ``rubric`` a label of that rubric whose value is
    not one of its labels is a bad line (labels of other rubrics are read as they are).

    Raises:
        TinyjudgeError: a file is missing or holds a bad line (``file:line``).
    """
    from tinyjudge.datasets.jsonl import read_labels
    from tinyjudge.errors import DataError

    def report(e: DataError) -> None:
        err.print(f"skipped {e}", markup=False, soft_wrap=True)

    on_error = report if skip_bad else None
    return [
        lab
        for path in paths
        for lab in read_labels(path, rubric, on_error=on_error, other_rubrics=True)
    ]


def labels_to_keep(path: Path, written: Sequence[Label], replace: bool) -> list[Label]:
    """The labels an import must write back: those already in ``path`` from other sources.

    An import owns the (source, rubric) pairs it writes; the rest of the file (the
    ``human:`` labels the labelling page wrote there, say) is someone else's work.
    Prints what is kept or, with ``replace`` (``--replace-labels``), what is dropped.

    Raises:
        TinyjudgeError: a line of ``path`` is not a label, so what it holds cannot be
            kept; naming the line and ``--replace-labels``.
    """
    from collections import Counter

    from tinyjudge.datasets.jsonl import labels_from_other_sources
    from tinyjudge.errors import DataError

    try:
        others = labels_from_other_sources(path, written)
    except DataError as e:
        if replace:
            out.print(f"  replaced {path} whole (--replace-labels)", markup=False, soft_wrap=True)
            return []
        raise DataError(
            e.path,
            e.line,
            f"{e.detail}; the import keeps the labels already there from other sources and cannot "
            "read this line: fix or remove it, or give --replace-labels to drop them all",
        ) from None
    if others:
        counts = ", ".join(f"{s} {n}" for s, n in Counter(lab.source for lab in others).items())
        did = "dropped (--replace-labels)" if replace else "kept"
        out.print(
            f"  {did} {len(others)} labels of other sources in {path}: {counts}",
            markup=False,
            soft_wrap=True,
        )
    return [] if replace else others


def write_labels_out(
    path: Path, labels: Sequence[Label], replace: bool, rubric: Rubric | None = None
) -> int:
    """Write a verb's labels to ``--out``, keeping other sources' labels there, and say so;
    with ``rubric``, its copy beside them (:func:`store_rubric`).

    Returns the number of the verb's own labels written.
    """
    from tinyjudge.datasets.jsonl import write_labels

    written = write_labels(path, labels, replace)
    print_kept(path, written)
    if rubric is not None:
        store_rubric(rubric, path.parent)
    return written.written


def print_kept(path: Path, written: KeptLabels) -> None:
    """One line on the other sources' labels kept in (or dropped from) ``path``."""
    for counts, did in ((written.kept, "kept"), (written.dropped, "dropped (--replace-labels)")):
        if counts:
            listed = ", ".join(f"{s} {n}" for s, n in counts.items())
            out.print(
                f"  {did} {sum(counts.values())} labels of other sources in {path}: {listed}",
                markup=False,
                soft_wrap=True,
            )
