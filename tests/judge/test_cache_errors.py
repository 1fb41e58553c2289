"""The judge cache on a bad day: full, read-only, corrupt, garbage, locked, or named as an output.

Each is one line naming the file and what to do, exit 2; the judgments finished
before it stay in the cache, and a re-run resumes from them.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_helpers import single, verdict
from support import remount, run_tinyjudge

from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.errors import StorageError
from tinyjudge.judge import Judge
from tinyjudge.judge._store import Store
from tinyjudge.testing import Reply

LONG = "x" * 2000  # a rationale that makes each stored judgment ~2 KB


def _judge_cli(items: Path, out: Path, url: str, *more: object) -> subprocess.CompletedProcess[str]:
    return run_tinyjudge(
        "judge", items, "--rubric", "compliance", "--model", "m", "--base-url", url,
        "--out", out, "--no-progress", "--concurrency", "1", *more,
        env={"OPENAI_API_KEY": "k"},
    )  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    write_jsonl(path, [single(i) for i in range(40)])
    return path


@pytest.fixture
def endpoint(serve):
    return serve(lambda req: Reply(verdict("full_refusal", LONG)))


def test_a_full_disk_stops_with_one_line_and_keeps_what_was_finished(
    small_disk, endpoint, items_file: Path, tmp_path: Path
) -> None:
    disk = small_disk("160k")
    cache = disk / "judge.sqlite"
    out = tmp_path / "labels.jsonl"
    done = _judge_cli(items_file, out, endpoint.base_url, "--cache", cache)
    line = _one_line(done)
    assert str(cache) in line and "full" in line and "free space" in line
    assert not out.exists()
    with Store(cache) as store:
        kept = len(store)
    assert 0 < kept < 40
    # Space comes back: the re-run asks only for what the cache does not hold.
    remount(disk, "size=16m")
    calls_before = endpoint.calls
    done = _judge_cli(items_file, out, endpoint.base_url, "--cache", cache)
    assert done.returncode == 0, done.stderr
    assert endpoint.calls - calls_before == 40 - kept


@pytest.mark.parametrize("where", ["cache", "out"])
def test_a_read_only_disk_is_one_line_before_any_call(
    small_disk, endpoint, items_file: Path, tmp_path: Path, where: str
) -> None:
    disk = small_disk("1m")
    remount(disk, "ro")
    cache, out = disk / "judge.sqlite", tmp_path / "labels.jsonl"
    if where == "out":
        cache, out = tmp_path / "judge.sqlite", disk / "labels.jsonl"
    line = _one_line(_judge_cli(items_file, out, endpoint.base_url, "--cache", cache))
    assert str(cache if where == "cache" else out) in line and "read-only" in line.lower()
    assert endpoint.calls == 0


def test_a_cache_on_a_folder_made_read_only_is_one_line(
    small_disk, endpoint, items_file: Path, tmp_path: Path
) -> None:
    disk = small_disk("4m")
    cache = disk / "judge.sqlite"
    assert (
        _judge_cli(items_file, tmp_path / "a.jsonl", endpoint.base_url, "--cache", cache).returncode
        == 0
    )
    remount(disk, "ro")
    line = _one_line(
        _judge_cli(items_file, tmp_path / "b.jsonl", endpoint.base_url, "--cache", cache)
    )
    assert str(cache) in line and "read-only" in line


@pytest.mark.parametrize(
    "content",
    [b"not a database at all\n" * 100, b"SQLite format 3\x00" + b"\xff" * 8000],
    ids=["garbage", "bad_header"],
)
def test_a_garbage_cache_is_one_line_and_left_alone(
    endpoint, items_file: Path, tmp_path: Path, content: bytes
) -> None:
    cache = tmp_path / "judge.sqlite"
    cache.write_bytes(content)
    line = _one_line(
        _judge_cli(items_file, tmp_path / "l.jsonl", endpoint.base_url, "--cache", cache)
    )
    assert str(cache) in line and "not a readable judge cache" in line and "move it aside" in line
    assert cache.read_bytes() == content
    assert endpoint.calls == 0


def test_a_corrupt_cache_is_one_line(endpoint, items_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "judge.sqlite"
    assert (
        _judge_cli(items_file, tmp_path / "a.jsonl", endpoint.base_url, "--cache", cache).returncode
        == 0
    )
    data = bytearray(cache.read_bytes())
    for i in range(4096, len(data), 7):  # keep the header, break the pages
        data[i] = 0xAB
    cache.write_bytes(bytes(data))
    line = _one_line(
        _judge_cli(items_file, tmp_path / "b.jsonl", endpoint.base_url, "--cache", cache)
    )
    assert str(cache) in line and "malformed" in line


def test_another_sqlite_file_is_not_taken_for_a_cache(
    endpoint, items_file: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "mine.sqlite"
    db = sqlite3.connect(cache)
    db.execute("CREATE TABLE judgments (who TEXT, what TEXT)")
    db.commit()
    db.close()
    line = _one_line(
        _judge_cli(items_file, tmp_path / "l.jsonl", endpoint.base_url, "--cache", cache)
    )
    assert "not a judge cache" in line and "['who', 'what']" in line


def test_a_cache_locked_by_another_process_is_one_line_before_any_call(
    endpoint, items_file: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "judge.sqlite"
    Store(cache).close()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         f"db = sqlite3.connect({str(cache)!r}, isolation_level=None)\n"
         "db.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        done = _judge_cli(items_file, tmp_path / "l.jsonl", endpoint.base_url, "--cache", cache)
        took = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    line = _one_line(done)
    assert str(cache) in line and "locked by another process" in line
    assert endpoint.calls == 0  # refused before a call was paid for
    assert took < 20, took


def test_a_store_error_in_the_library_is_a_storage_error(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    cache.write_bytes(b"garbage" * 1000)
    with pytest.raises(StorageError, match=r"c\.sqlite is not a readable judge cache"):
        Judge("compliance", "m", base_url="http://127.0.0.1:9/v1", cache=cache).run([single(1)])
    folder = tmp_path / "d.sqlite"
    folder.mkdir()
    with pytest.raises(StorageError, match="is a folder"):
        Store(folder)


CACHE_CLASHES = {
    "out_is_cache": (["--out", "{d}/x.jsonl", "--cache", "{d}/x.jsonl"], "is also the --out"),
    "summary_is_default_cache": (
        ["--out", "{d}/x.jsonl", "--summary", "{d}/x.jsonl.cache.sqlite"],
        "is also the cache path",
    ),
    "summary_is_wal": (
        ["--out", "{d}/x.jsonl", "--cache", "{d}/c.sqlite", "--summary", "{d}/c.sqlite-wal"],
        "--summary {d}/c.sqlite-wal is also the --cache's wal file path",
    ),
    "out_is_shm": (["--out", "{d}/c.sqlite-shm", "--cache", "{d}/c.sqlite"], "also the --out"),
    "cache_is_items": (["--out", "{d}/x.jsonl", "--cache", "{d}/items.jsonl"], "is the ITEMS"),
}


@pytest.mark.parametrize(("args", "message"), CACHE_CLASHES.values(), ids=CACHE_CLASHES.keys())
def test_no_output_may_be_the_cache(
    endpoint, tmp_path: Path, args: list[str], message: str
) -> None:
    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(1)])
    given = [a.format(d=tmp_path) for a in args]
    done = run_tinyjudge(
        "judge", items, "--rubric", "compliance", "--model", "m", "--base-url",
        endpoint.base_url, *given, env={"OPENAI_API_KEY": "k"},
    )  # fmt: skip
    line = _one_line(done)
    assert message.format(d=tmp_path) in line, line
    assert endpoint.calls == 0
    assert items.read_text().count("\n") == 1
