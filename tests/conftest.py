"""Shared fixtures: the repository, the public sets (shared or bundled slices), the command line,
the record factories."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import support
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
def make_item() -> Callable[..., Any]:
    """:func:`support.make_item`: ``make_item("q", "a", item_id="x", metadata={...})``.

    A module that builds items at import time (a parametrize table) imports it from ``support``.
    """
    return support.make_item


@pytest.fixture
def make_label() -> Callable[..., Any]:
    """:func:`support.make_label`: ``make_label("i1", "judge:m", "yes", rubric="r")``;
    ``label=None`` with no score is unscored.

    A module that builds labels at import time imports it from ``support``.
    """
    return support.make_label


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_tinyjudge`: the command line in a subprocess."""
    return run_tinyjudge


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount a tmpfs of ``size`` (e.g. ``"256k"``) under ``tmp_path``: a disk that fills up.

    Needs root (the test skips, saying why, elsewhere). ``support.remount(path, opts)``
    changes its options (``"ro"``, ``"size=8m"``); every mount is undone after the test.
    """
    import os

    mounted: list[Path] = []

    def mount(size: str, name: str = "disk") -> Path:
        if os.geteuid() != 0:
            pytest.skip("a small disk needs a tmpfs mount, which needs root")
        where = tmp_path / name
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
