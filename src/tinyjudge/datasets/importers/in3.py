"""IN3 (Qian et al., 2024, "Tell Me More!"): should an agent ask before acting on a task?

Each line of ``data/IN3/<split>.jsonl`` is an agent task with ``vague`` (does the
agent need to ask the user for more detail first?), the ``thought`` behind that
decision, the ``category`` and the ``missing_details`` (what to ask, with options).

Label provenance: the release's ``vague`` labels (and thoughts and missing details)
were proposed by GPT-4 and then checked and adapted by people. They are imported
as ``human:in3`` because people had the last word, but they are anchored on
GPT-4's proposals: expect a GPT-4 judge to agree with them more than with labels
written from scratch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message

from ._common import Imported, SkipBad
from ._json import need, read_jsonl_objects

__all__ = ["import_in3", "IN3_LABELS", "IN3_SOURCE"]

IN3_LABELS = ("ask_first", "proceed")
IN3_SOURCE = "human:in3"
_RUBRIC = "clarification"


def _files(src: Path) -> list[Path]:
    # The release keeps its splits in data/IN3/; a copy of that folder alone works too.
    folder = src / "data" / "IN3"
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else sorted(src.glob("*.jsonl"))
    if not files:
        raise DataError(str(src), None, "no data/IN3/*.jsonl (or *.jsonl) files; is this IN3?")
    return files


def _row_to_records(
    path: Path, line: int, row: dict[str, Any], rubric_hash: str | None
) -> tuple[Item, Label]:
    task = need(row, "task", path, line)
    vague = need(row, "vague", path, line)
    category = need(row, "category", path, line)
    missing = row.get("missing_details", [])
    if not isinstance(task, str) or not task.strip():
        raise DataError(str(path), line, f'"task" must be a non-empty string, got {task!r}')
    if not isinstance(vague, bool):
        raise DataError(str(path), line, f'"vague" must be true or false, got {vague!r}')
    if not isinstance(missing, list):
        raise DataError(
            str(path), line, f'"missing_details" must be a list, got {type(missing).__name__}'
        )
    item_id = f"in3:{path.stem}:{line}"
    item = Item(
        id=item_id,
        messages=[Message(role="user", content=task)],
        # missing_details is empty exactly when the label is "proceed": keep it out
        # of any features a model is trained on.
        metadata={
            "split": path.stem,
            "line": line,
            "category": category,
            "missing_details": missing,
        },
    )
    value = "ask_first" if vague else "proceed"
    thought = row.get("thought")
    label = Label(
        item_id=item_id,
        rubric=_RUBRIC,
        rubric_hash=rubric_hash,
        source=IN3_SOURCE,
        label=value,
        probs={value: 1.0},
        rationale=thought if isinstance(thought, str) and thought else None,
        raw=vague,
    )
    return item, label


def import_in3(src: Path, rubric_hash: str | None = None, skip_bad: bool = False) -> Imported:
    """Import every split of IN3 as single-message items labelled ``ask_first``/``proceed``.

    Item ids are ``in3:<split>:<line>`` (the line of the task in ``<split>.jsonl``),
    with ``metadata`` holding ``split``, ``line``, ``category`` and ``missing_details``.
    One label per item from ``human:in3``: ``vague: true`` -> ``ask_first``,
    ``vague: false`` -> ``proceed``; ``rationale`` holds the release's ``thought``.

    Args:
        src: a folder laid out like the OpenBMB/Tell_Me_More repository (holding
            ``data/IN3/*.jsonl``), or the ``IN3`` folder itself.
        rubric_hash: the ``clarification`` rubric's hash, stamped on each label.
        skip_bad: record bad lines in ``Imported.bad`` and go on instead of raising.

    Raises:
        DataError: no IN3 files, or (without ``skip_bad``) a malformed line, a
            missing field or a ``vague`` value that is not true/false.
    """
    out = Imported()
    skip = SkipBad(skip_bad, out.bad)
    for path in _files(src):
        for line, row in read_jsonl_objects(path, on_error=skip):
            with skip.record():
                item, label = _row_to_records(path, line, row, rubric_hash)
                out.items.append(item)
                out.labels.append(label)
    return out
