"""Importers: a user's own chat transcripts and label sheets, and public labelled sets.

:func:`import_chat` and :func:`import_labels` read a user's files. The public
sets are one explicit dict, ``NAME -> function(src, ...) -> Imported``; add a new
set by adding an entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tinyjudge.errors import DataError, UsageError

from ._common import Imported
from .chat import ChatImport, import_chat
from .in3 import import_in3
from .label_sheet import LabelImport, import_labels
from .llmbar import import_llmbar
from .pandalm import import_pandalm
from .sycon import import_sycon
from .tau_bench import import_tau_bench
from .who_and_when import import_who_and_when
from .xstest import import_xstest

__all__ = [
    "ChatImport",
    "LabelImport",
    "import_chat",
    "import_labels",
    "IMPORTERS",
    "Imported",
    "ImportStopped",
    "run_import",
]

Importer = Callable[..., Imported]

IMPORTERS: dict[str, tuple[Importer, str]] = {
    # name: (importer, the rubric its labels use)
    "xstest": (import_xstest, "compliance"),
    "in3": (import_in3, "clarification"),
    "llmbar": (import_llmbar, "instruction_following"),
    "pandalm": (import_pandalm, "instruction_following"),
    "sycon": (import_sycon, "pushback_under_pressure"),
    "who_and_when": (import_who_and_when, "failure_step"),
    "tau_bench": (import_tau_bench, "task_success"),
}


def get_importer(name: str) -> tuple[Importer, str]:
    """The importer registered under ``name`` and its rubric's name."""
    try:
        return IMPORTERS[name]
    except KeyError:
        raise UsageError(
            f"unknown dataset {name!r}; importers exist for {sorted(IMPORTERS)}"
        ) from None


class ImportStopped(DataError):
    """The first bad record of an import run without ``skip_bad``.

    ``kept`` holds the items and labels read before it, so that a caller can
    write them instead of losing them.
    """

    def __init__(self, first: DataError, kept: Imported) -> None:
        super().__init__(first.path, first.line, first.detail)
        self.kept = kept


def run_import(name: str, src: str | os.PathLike[str], skip_bad: bool = False) -> Imported:
    """Import ``src`` with the named importer, stamping the rubric's hash on labels.

    Args:
        name: a key of :data:`IMPORTERS`.
        src: a folder laid out like the original release (a path or a string).
        skip_bad: keep going past bad records; they are listed in ``Imported.bad``.

    Raises:
        ImportStopped: (a :class:`DataError`) at the first bad record when not
            ``skip_bad``, carrying the records read before it.
        TinyjudgeError: an unknown name, a missing folder, or a bad rubric.
    """
    from tinyjudge.rubric import load_rubric

    importer, rubric_name = get_importer(name)
    src = Path(src)
    if not src.is_dir():
        raise DataError(str(src), None, "not a folder" if src.exists() else "no such folder")
    rubric_hash = load_rubric(rubric_name).hash
    # Importers run to the end either way; stopping is decided here, so that what
    # came before the first bad record is kept rather than lost with the exception.
    result = importer(src, rubric_hash=rubric_hash, skip_bad=True)
    if result.bad and not skip_bad:
        raise ImportStopped(result.bad[0], result.before_first_bad())
    return result
