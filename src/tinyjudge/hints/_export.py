"""Step-level hints as textual feedback for RL: ``{item_id, step, hint}`` per line.

A judge that localises a failure (``failure_step``, ``tool_error_recovery``)
also writes a hint: what the agent should have been told at that step. This
module pulls those hints out of labels, each kept with the step it targets, so a
training loop can feed them back to the agent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from tinyjudge.datasets.jsonl import read_jsonl, write_jsonl
from tinyjudge.errors import DataError
from tinyjudge.records import Label

__all__ = ["HintExport", "hint_of", "hint_records", "export_hints"]


class HintExport(NamedTuple):
    """What :func:`export_hints` wrote and what it passed over.

    Attributes:
        written: hint records written.
        labels: labels read (after the source/rubric filters).
        without_hint: scored labels with no hint (or an empty one).
        unscored: unscored labels, which never carry a usable hint.
        bad: bad lines skipped (only with ``skip_bad``).
    """

    written: int
    labels: int
    without_hint: int
    unscored: int
    bad: list[DataError]


def hint_of(label: Label, hint_from: str = "hint") -> tuple[str | None, int | None]:
    """A label's hint text and the step it targets.

    ``hint_from="rationale"`` reads the rationale as the hint (e.g. Who&When's
    people-written mistake reasons) at the label's step.
    """
    if hint_from == "rationale":
        return label.rationale, label.step
    if label.hint is None:
        return None, label.step
    return label.hint.text, label.hint.step if label.hint.step is not None else label.step


def hint_records(labels: Iterable[Label], hint_from: str = "hint") -> Iterator[dict[str, Any]]:
    """One ``{item_id, step, hint, source, rubric}`` dict per label carrying a hint.

    The step is the hint's own step when it names one, else the label's step
    (the step the verdict points at); None when neither does. Unscored labels
    and blank hints are passed over.

    Args:
        labels: the labels.
        hint_from: ``hint`` (the label's hint) or ``rationale`` (its rationale).
    """
    for lab in labels:
        text, step = hint_of(lab, hint_from)
        if lab.status != "ok" or text is None or not text.strip():
            continue
        yield {
            "item_id": lab.item_id,
            "step": step,
            "hint": text,
            "source": lab.source,
            "rubric": lab.rubric,
        }


def export_hints(
    labels_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    source: str | None = None,
    rubric: str | None = None,
    skip_bad: bool = False,
    hint_from: str = "hint",
) -> HintExport:
    """Write the hints in a labels JSONL file to ``out_path`` (atomically).

    Args:
        labels_path: a ``labels.jsonl`` file.
        out_path: the hints file; it appears only once complete.
        source: keep only labels of this source (e.g. ``judge:gpt-4o``).
        rubric: keep only labels under this rubric.
        skip_bad: report bad label lines and go on instead of raising at the first.
        hint_from: ``hint`` or ``rationale`` (see :func:`hint_of`).

    Raises:
        DataError: a bad line in ``labels_path`` (``file:line``), unless ``skip_bad``.
    """
    bad: list[DataError] = []
    counts = {"labels": 0, "without_hint": 0, "unscored": 0}

    def kept() -> Iterator[Label]:
        for lab in read_jsonl(labels_path, Label, on_error=bad.append if skip_bad else None):
            if (source and lab.source != source) or (rubric and lab.rubric != rubric):
                continue
            counts["labels"] += 1
            if lab.status != "ok":
                counts["unscored"] += 1
            elif not (hint_of(lab, hint_from)[0] or "").strip():
                counts["without_hint"] += 1
            yield lab

    written = write_jsonl(out_path, hint_records(kept(), hint_from))
    return HintExport(written, counts["labels"], counts["without_hint"], counts["unscored"], bad)
