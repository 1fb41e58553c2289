"""The public sets' importers by name: :data:`IMPORTERS`, one explicit dict.

Add a set by adding an entry: ``NAME -> (function(src, ...) -> Imported, rubric name)``.
"""

from __future__ import annotations

from collections.abc import Callable

from tinyjudge.errors import UsageError

from ._common import Imported
from .in3 import import_in3
from .llmbar import import_llmbar
from .pandalm import import_pandalm
from .sycon import import_sycon
from .tau_bench import import_tau_bench
from .who_and_when import import_who_and_when
from .xstest import import_xstest

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
