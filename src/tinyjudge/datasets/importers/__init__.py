"""Importers: a user's own chat transcripts and label sheets, and public labelled sets.

:func:`import_chat` and :func:`import_labels` read a user's files; each public set
has its function (:func:`import_xstest`, ...), and they are one explicit dict,
``NAME -> function(src, ...) -> Imported`` (``_registry``): add a new set by adding an
entry (and its function here).
"""

from __future__ import annotations

import os
from pathlib import Path

from tinyjudge._faces import lazy_names
from tinyjudge.errors import DataError

from ._common import Imported as Imported
from ._registry import IMPORTERS as IMPORTERS
from ._registry import get_importer
from .chat import ChatImport as ChatImport
from .chat import import_chat as import_chat
from .in3 import import_in3 as import_in3
from .label_sheet import LabelImport as LabelImport
from .label_sheet import import_labels as import_labels
from .llmbar import import_llmbar as import_llmbar
from .pandalm import import_pandalm as import_pandalm
from .sycon import import_sycon as import_sycon
from .tau_bench import import_tau_bench as import_tau_bench
from .who_and_when import import_who_and_when as import_who_and_when
from .xstest import import_xstest as import_xstest


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


_, __dir__ = lazy_names(__name__)
