"""``estimate`` and ``audit``: refuse a reward model measured on the people labels it learned.

Where a reward model's record comes from, in order: a ``--model-dir`` whose
model wrote the source (``rm:<name>``, or ``rm:<name>+cal`` with its
calibration), else the file ``score`` wrote beside a labels file given (see
:mod:`tinyjudge._people_items`). A ``rm:`` source with neither is named in a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from tinyjudge._people_items import (
    LearnedFrom,
    PeopleOverlapError,
    check_people_overlap,
    learned_from_model_dir,
    read_sidecars,
    sidecar_path,
)
from tinyjudge.errors import UsageError
from tinyjudge.records import Label

from ._io import err

__all__ = ["refuse_people_overlap", "model_dir_option", "allow_overlap_option"]


def model_dir_option() -> Any:
    """``--model-dir``, as estimate and audit take it."""
    return typer.Option(
        [], "--model-dir", help="a reward model's directory, to check what it learned from"
    )


def allow_overlap_option() -> Any:
    """``--allow-overlap``, as estimate and audit take it."""
    return typer.Option(
        False,
        "--allow-overlap",
        help="go on when a reward model learned from these human labels (biased on purpose)",
    )


def _records(label_paths: Sequence[Path], model_dirs: Sequence[Path]) -> list[LearnedFrom]:
    from_dirs = [
        learned_from_model_dir(d, calibrated) for d in model_dirs for calibrated in (False, True)
    ]
    return [*from_dirs, *read_sidecars(label_paths)]


def refuse_people_overlap(
    labels: Sequence[Label],
    label_paths: Sequence[Path],
    cheap: Sequence[str],
    humans: Sequence[str],
    model_dirs: Sequence[Path] = (),
    allow_overlap: bool = False,
) -> None:
    """Refuse, in one line, a cheap source compared with human labels it learned from.

    Raises:
        TinyjudgeError: the overlap, with ``--allow-overlap`` as the way on.
    """
    records = _records(label_paths, model_dirs)
    for source in cheap:
        learned = next((r for r in records if r.source == source), None)
        if learned is None:
            if source.startswith("rm:"):
                beside = ", ".join(str(sidecar_path(p)) for p in label_paths[:2])
                err.print(
                    f"note: cannot check which people labels {source} learned from (no record "
                    f"in {beside}{', ...' if len(label_paths) > 2 else ''}); pass --model-dir "
                    "to check",
                    markup=False,
                    soft_wrap=True,
                )
            continue
        for human in humans:
            ids = [lab.item_id for lab in labels if lab.source == human and lab.status == "ok"]
            try:
                both = check_people_overlap(learned, human, ids, allow_overlap)
            except PeopleOverlapError as e:
                raise UsageError(e.describe("--allow-overlap"), param="allow_overlap") from None
            if both:
                err.print(
                    f"note: --allow-overlap: {source} learned from the people's labels of "
                    f"{len(both)} of the items {human} labels here",
                    markup=False,
                    soft_wrap=True,
                )
