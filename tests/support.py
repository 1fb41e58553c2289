"""What every test file shares: the repository's paths, the real data, the command line,
and the record factories (``make_item``, ``make_label``).

``conftest.py`` turns these into fixtures; a test module that needs them outside a
fixture (a table of labels at module level, a parametrize list) imports them
(``tests`` is on pytest's path: ``from support import make_label``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinyjudge.records import Item, Label

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TINYJUDGE_SHARED_DATA", REPO.parent / "shared" / "data"))
XSTEST_SAMPLE = REPO / "data" / "xstest_sample"
# Small licensed slices of the shared sets, laid out as there (each with its SOURCE.md).
DATA_SLICES = REPO / "tests" / "fixtures" / "data"

__all__ = [
    "REPO",
    "SHARED_DATA",
    "XSTEST_SAMPLE",
    "DATA_SLICES",
    "real_data",
    "is_slice",
    "run_tinyjudge",
    "tinyjudge_command",
    "remount",
    "make_item",
    "make_label",
]


def real_data(name: str) -> Path | None:
    """A public set's folder: ``../shared/data/NAME`` when present, else its bundled slice.

    None when neither exists (the caller skips, saying why).
    """
    for root in (SHARED_DATA, DATA_SLICES):
        if (root / name).is_dir():
            return root / name
    return None


def is_slice(path: Path) -> bool:
    """Whether ``path`` is in a bundled slice (figures of the whole set do not apply)."""
    return DATA_SLICES in Path(path).parents


def tinyjudge_command() -> list[str]:
    """How to start the command line: the installed script, else ``python -m tinyjudge.cli``."""
    script = Path(sys.executable).with_name("tinyjudge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tinyjudge.cli"]


def run_tinyjudge(
    *args: str | os.PathLike[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``tinyjudge ARGS...`` as a user runs it: a fresh process, output captured as text."""
    return subprocess.run(
        [*tinyjudge_command(), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def remount(where: Path, options: str) -> None:
    """Change the options of a ``small_disk`` mount (``"ro"``, ``"rw,size=8m"``)."""
    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True)


def make_item(
    *texts: str, item_id: str = "x", metadata: dict[str, Any] | None = None, **fields: Any
) -> Item:
    """An item whose messages alternate user and assistant over ``texts`` (one user ``"q"``
    when none are given); ``fields`` go to :class:`~tinyjudge.records.Item` as they are."""
    from tinyjudge.records import Item, Message

    roles = ("user", "assistant")
    messages = [Message(role=roles[i % 2], content=t) for i, t in enumerate(texts or ("q",))]
    return Item(id=item_id, messages=messages, metadata=metadata or {}, **fields)


def make_label(
    item_id: str = "i",
    source: str = "judge:m",
    label: str | None = None,
    *,
    rubric: str = "r",
    **fields: Any,
) -> Label:
    """What ``source`` says about ``item_id`` under ``rubric``: ``label``, or, when there is
    neither a label nor a score (and no ``status`` is given), an unscored verdict as a judge
    whose answer could not be read leaves (``raw="???"``, ``reason="unparseable"``, unless
    given). Other ``fields`` (``probs``, ``score``, ``step``, ``orders`` ...) pass through."""
    from tinyjudge.records import Label

    if "status" not in fields and label is None and fields.get("score") is None:
        fields["status"] = "unscored"
    if fields.get("status") == "unscored":
        fields.setdefault("raw", "???")
        fields.setdefault("reason", "unparseable")
    return Label(item_id=item_id, rubric=rubric, source=source, label=label, **fields)
