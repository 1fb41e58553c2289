"""Shared fixtures: the repository, the public sets (shared or bundled slices), the command line."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support import REPO, SHARED_DATA, XSTEST_SAMPLE, real_data, run_tinyjudge


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
def data_dir() -> Callable[[str], Path]:
    """A public set's folder: ``../shared/data/NAME``, else its slice in tests/fixtures/data.

    A test that needs the set skips (saying why) when neither is there.
    """

    def find(name: str) -> Path:
        got = real_data(name)
        if got is None:
            pytest.skip(f"{name}: no data at {SHARED_DATA / name} and no bundled slice")
        return got

    return find


@pytest.fixture
def xstest_sample() -> Path:
    """The bundled XSTest sample (500 rows), always present."""
    return XSTEST_SAMPLE


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_tinyjudge`: the command line in a subprocess."""
    return run_tinyjudge
