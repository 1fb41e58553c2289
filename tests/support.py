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

__all__ = ["REPO", "SHARED_DATA", "XSTEST_SAMPLE", "run_tinyjudge", "tinyjudge_command"]


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
