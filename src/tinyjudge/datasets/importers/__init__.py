"""Importers for public labelled sets: ``NAME -> function(src, ...) -> Imported``.

One explicit dict maps names to importers; add a new set by adding an entry.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tinyjudge.errors import TinyjudgeError

from ._common import Imported
from .in3 import import_in3
from .llmbar import import_llmbar
from .pandalm import import_pandalm
from .sycon import import_sycon
from .tau_bench import import_tau_bench
from .who_and_when import import_who_and_when
from .xstest import import_xstest

__all__ = [
    "IMPORTERS",
    "Imported",
    "get_importer",
    "run_import",
    "import_xstest",
    "import_in3",
    "import_llmbar",
    "import_pandalm",
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
        raise TinyjudgeError(
            f"unknown dataset {name!r}; importers exist for {sorted(IMPORTERS)}"
        ) from None


def run_import(name: str, src: Path, skip_bad: bool = False) -> Imported:
    """Import ``src`` with the named importer, stamping the rubric's hash on labels."""
    from tinyjudge.rubric import load_rubric

    importer, rubric_name = get_importer(name)
    if not src.is_dir():
        raise TinyjudgeError(f"{src}: not a folder")
    return importer(src, rubric_hash=load_rubric(rubric_name).hash, skip_bad=skip_bad)
