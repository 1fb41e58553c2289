"""A verb whose extra is not installed says which to install, in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tinyjudge._extras import require_extra
from tinyjudge.errors import TinyjudgeError


def test_missing_module_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what `import uvicorn` sees when absent
    with pytest.raises(
        TinyjudgeError,
        match=r'^tinyjudge serve needs the "serve" extra \(uvicorn is not installed\): '
        r'pip install "tinyjudge\[serve\]"$',
    ):
        require_extra("serve", "tinyjudge serve")


def test_installed_extra_passes() -> None:
    require_extra("serve", "tinyjudge serve")


def test_python_dash_m_tinyjudge() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tinyjudge", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "distill" in done.stdout
