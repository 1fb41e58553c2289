"""Outputs that appear whole or not at all: a failed command leaves earlier outputs as they were."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tinyjudge._atomic import atomic_dir, same_file
from tinyjudge.errors import TinyjudgeError


def _files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}


def _write_pair(folder: Path, n: int) -> None:
    (folder / "items.jsonl").write_text(f"items {n}\n")
    (folder / "labels.jsonl").write_text(f"labels {n}\n")


@pytest.mark.parametrize("keep_others", [True, False], ids=["workspace", "whole_folder"])
def test_a_failure_leaves_the_old_outputs(tmp_path: Path, keep_others: bool) -> None:
    out = tmp_path / "out"
    with atomic_dir(out, keep_others=keep_others) as tmp:
        _write_pair(tmp, 500)
    with pytest.raises(RuntimeError, match="bad record"):
        with atomic_dir(out, keep_others=keep_others) as tmp:
            (tmp / "items.jsonl").write_text("items 129\n")
            raise RuntimeError("bad record")
    assert _files(out) == {"items.jsonl": "items 500\n", "labels.jsonl": "labels 500\n"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two_renames"])
def test_items_and_labels_are_swapped_together(tmp_path: Path, monkeypatch, exchange: bool) -> None:
    if not exchange:
        monkeypatch.setattr("tinyjudge._atomic._exchange", lambda a, b: False)
    out = tmp_path / "out"
    with atomic_dir(out) as tmp:
        _write_pair(tmp, 1)
    with atomic_dir(out) as tmp:
        _write_pair(tmp, 2)
        assert _files(out) == {"items.jsonl": "items 1\n", "labels.jsonl": "labels 1\n"}
    assert _files(out) == {"items.jsonl": "items 2\n", "labels.jsonl": "labels 2\n"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_workspace_keeps_what_else_it_holds(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    (out / "model").mkdir(parents=True)
    (out / "model" / "weights.bin").write_text("w")
    (out / "judge.jsonl").write_text("judged\n")
    _write_pair(out, 1)
    with atomic_dir(out, keep_others=True) as tmp:
        _write_pair(tmp, 2)
    assert _files(out) == {
        "items.jsonl": "items 2\n", "judge.jsonl": "judged\n", "labels.jsonl": "labels 2\n"
    }  # fmt: skip
    assert (out / "model" / "weights.bin").read_text() == "w"


def test_a_whole_folder_output_drops_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "model"
    with atomic_dir(out) as tmp:
        (tmp / "weights.bin").write_text("old")
        (tmp / "calibration.json").write_text("{}")
    with atomic_dir(out) as tmp:
        (tmp / "weights.bin").write_text("new")
    assert _files(out) == {"weights.bin": "new"}


def test_a_file_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x")
    with pytest.raises(TinyjudgeError, match="out is a file; give a folder to write into"):
        with atomic_dir(tmp_path / "out"):
            pass


def test_a_kill_mid_write_leaves_the_old_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic_dir(out) as tmp:
        _write_pair(tmp, 500)
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from tinyjudge._atomic import atomic_dir
        with atomic_dir({str(out)!r}) as tmp:
            (tmp / "items.jsonl").write_text("items 129\\n")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert _files(out) == {"items.jsonl": "items 500\n", "labels.jsonl": "labels 500\n"}


@pytest.mark.parametrize(
    "second,expected",
    [("same", True), ("link", True), ("dotted", True), ("other", False), ("missing", False)],
    ids=["same", "symlink", "dotted_path", "other_file", "missing"],
)
def test_same_file(tmp_path: Path, second: str, expected: bool) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text("x")
    b = {
        "same": a, "link": tmp_path / "l.jsonl", "dotted": tmp_path / "." / "a.jsonl",
        "other": tmp_path / "b.jsonl", "missing": tmp_path / "c.jsonl",
    }[second]  # fmt: skip
    if second == "link":
        b.symlink_to(a)
    if second == "other":
        b.write_text("x")
    assert same_file(a, b) is expected
