"""What every test file shares: the repository's paths, the real data, the command line.

``conftest.py`` turns these into fixtures; a test module that needs them outside a
fixture imports them (``tests`` is on pytest's path).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
