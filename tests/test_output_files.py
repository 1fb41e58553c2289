"""Output files under a user's umask, signals, kill -9 and a full disk.

- Folders and weights are readable by group and others as the umask says (a service
  account or Ray workers running as another user can load the model).
- SIGTERM and SIGINT remove temporary files as an error does; a ``kill -9`` leaves
  one, which the next write of that output removes (a live writer's is kept).
- A full disk is one line, and the old output stays as it was.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import XSTEST_SAMPLE, run_tinyjudge, tinyjudge_command

from tinyjudge._atomic import atomic_dir, atomic_writer
from tinyjudge.errors import DiskFull, StorageError


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _umask(mask: int):
    return lambda: os.umask(mask)


def _cli(*args: object, mask: int = 0o022, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tinyjudge_command(), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_umask(mask),
        **kw,
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``import xstest`` and a linear ``distill`` into runs/x, under umask 022."""
    root = tmp_path_factory.mktemp("umask")
    runs = root / "runs" / "x"
    done = _cli("import", "xstest", XSTEST_SAMPLE, "--out", runs)
    assert done.returncode == 0, done.stderr
    done = _cli(
        "distill", runs / "items.jsonl", runs / "labels.jsonl", "--source", "judge:gpt-4",
        "--rubric", "compliance", "--out", runs / "rm",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return runs


@pytest.mark.parametrize("mask", [0o022, 0o027], ids=["umask_022", "umask_027"])
def test_import_and_distill_honour_the_umask(tmp_path: Path, mask: int) -> None:
    runs = tmp_path / "runs" / "x"
    assert _cli("import", "xstest", XSTEST_SAMPLE, "--out", runs, mask=mask).returncode == 0
    done = _cli(
        "distill", runs / "items.jsonl", runs / "labels.jsonl", "--source", "judge:gpt-4",
        "--rubric", "compliance", "--out", runs / "rm", mask=mask,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    folder, file = 0o777 & ~mask, 0o666 & ~mask
    for path in [runs, runs / "rm"]:
        assert _mode(path) == folder, (path, oct(_mode(path)))
    written = [p for p in [*runs.iterdir(), *(runs / "rm").iterdir()] if p.is_file()]
    assert {p.name for p in written} >= {"items.jsonl", "labels.jsonl", "weights.safetensors"}
    for path in written:
        assert _mode(path) == file, (path, oct(_mode(path)))


def test_a_workspace_keeps_its_own_mode(tmp_path: Path) -> None:
    out = tmp_path / "private"
    out.mkdir(mode=0o700)
    os.chmod(out, 0o700)
    with atomic_dir(out, keep_others=True) as tmp:
        (tmp / "items.jsonl").write_text("{}\n")
    assert _mode(out) == 0o700


def _big_items(workspace: Path, tmp_path: Path, copies: int = 80) -> Path:
    """The workspace's items many times over (new ids): a score that takes seconds."""
    lines = (workspace / "items.jsonl").read_text().splitlines()
    path = tmp_path / "items.jsonl"
    with path.open("w") as fh:
        for c in range(copies):
            for line in lines:
                obj = json.loads(line)
                obj["id"] = f"{obj['id']}-{c}"
                fh.write(json.dumps(obj) + "\n")
    return path


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _start_score(workspace: Path, items: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*tinyjudge_command(), "score", workspace / "rm", items, "--out", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_temporary(proc: subprocess.Popen[str], folder: Path) -> None:
    deadline = time.monotonic() + 120
    while not any(n.endswith(".tmp") for n in _temporaries(folder)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "score never started writing"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_during_score_leaves_no_temporary_file(
    workspace: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    items = _big_items(workspace, tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "scores.jsonl"
    # the old output: a person's label, which score keeps (issue 33) and a signal must not lose
    old = '{"item_id":"x","rubric":"compliance","source":"human:alice","label":"full_refusal"}\n'
    out.write_text(old)
    proc = _start_score(workspace, items, out)
    _wait_for_temporary(proc, out_dir)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err
    assert "Traceback" not in err
    assert _temporaries(out_dir) == []
    assert out.read_text() == old


def test_a_kill_9_leftover_is_swept_by_the_next_write(workspace: Path, tmp_path: Path) -> None:
    items = _big_items(workspace, tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "scores.jsonl"
    proc = _start_score(workspace, items, out)
    _wait_for_temporary(proc, out_dir)
    proc.kill()
    proc.communicate()
    [left] = _temporaries(out_dir)
    # Another output's temporary file in the same folder is not this output's to remove.
    other = out_dir / ".other.jsonl.abc.tmp"
    other.write_text("x")
    done = run_tinyjudge("score", workspace / "rm", workspace / "items.jsonl", "--out", out)
    assert done.returncode == 0, done.stderr
    assert _temporaries(out_dir) == [other.name], left
    assert len(out.read_text().splitlines()) == 500


def test_a_live_writers_temporary_file_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    # A writer in another process, mid-write: its temporary file is old but locked.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys, time\n"
         "from tinyjudge._atomic import atomic_writer\n"
         f"with atomic_writer({str(out)!r}) as fh:\n"
         "    fh.write('a'); fh.flush(); print('writing', flush=True); time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "writing"
        [live] = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        os.utime(live, (time.time() - 7200, time.time() - 7200))
        dead = tmp_path / ".labels.jsonl.dead.tmp"
        dead.write_text("from a killed run")
        os.utime(dead, (time.time() - 5, time.time() - 5))
        with atomic_writer(out) as fh:
            fh.write("mine\n")
        assert live.exists() and not dead.exists()
        assert out.read_text() == "mine\n"
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_staging_folder_is_swept_by_the_next_write(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    left = tmp_path / ".runs.abc123.new"
    left.mkdir()
    (left / "items.jsonl").write_text("half\n")
    os.utime(left, (time.time() - 5, time.time() - 5))
    with atomic_dir(out, keep_others=True) as tmp:
        (tmp / "items.jsonl").write_text("whole\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_distill_on_a_full_disk_is_one_line(small_disk, workspace: Path) -> None:
    disk = small_disk("300k")
    out = disk / "rm"
    done = _cli(
        "distill", workspace / "items.jsonl", workspace / "labels.jsonl", "--source",
        "judge:gpt-4", "--rubric", "compliance", "--out", out,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "SafetensorError" not in done.stderr.split(":")[0]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and str(out) in line and "no space left" in line
    assert list(disk.iterdir()) == []  # nothing half-written left on the disk


def test_import_on_a_full_disk_keeps_the_old_output(small_disk, workspace: Path) -> None:
    disk = small_disk("700k")
    out = disk / "x"
    out.mkdir()
    (out / "items.jsonl").write_text("old items\n")
    done = _cli("import", "xstest", XSTEST_SAMPLE, "--out", out)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "no space left" in line
    assert (out / "items.jsonl").read_text() == "old items\n"
    assert sorted(p.name for p in disk.iterdir()) == ["x"]


def test_a_full_disk_in_the_library_is_disk_full(small_disk) -> None:
    disk = small_disk("64k")
    with pytest.raises(DiskFull, match=r"big\.jsonl: no space left") as caught:
        with atomic_writer(disk / "big.jsonl") as fh:
            for _ in range(200):
                fh.write("x" * 1024)
    assert isinstance(caught.value, StorageError) and isinstance(caught.value, OSError)
    assert caught.value.errno == 28
    assert list(disk.iterdir()) == []
