"""Shared fixtures: paths to the repository's and the shared real data."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TINYJUDGE_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs offline: nothing may reach the Hugging Face Hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip (saying why) when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not present at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def xstest_sample() -> Path:
    """The bundled XSTest sample (500 rows), always present."""
    return REPO / "data" / "xstest_sample"


def run_tinyjudge(
    *args: str | os.PathLike[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``tinyjudge ARGS...`` as a user runs it: a fresh process, output captured as text."""
    script = Path(sys.executable).with_name("tinyjudge")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "tinyjudge.cli"]
    return subprocess.run(
        [*cmd, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "120", **(env or {})},
        cwd=cwd,
    )


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_tinyjudge`: the command line in a subprocess."""
    return run_tinyjudge
