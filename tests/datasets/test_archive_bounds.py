"""Archives and attachments read with bounds (issue 33): a small Inspect AI log cannot
inflate to gigabytes, in memory or in ``items.jsonl``.

The bombs are built here as an attacker would: a real ``.eval`` (the fixture written by
inspect_ai) whose sample member is replaced by a zstd or deflate stream of 1 GiB, and an
``EvalLog`` whose one attachment 800 messages name.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support import REPO, tinyjudge_command

from tinyjudge.datasets.importers import _logs, import_chat
from tinyjudge.errors import DataError

FIXTURES = REPO / "tests" / "fixtures" / "transcripts"
GIB = 2**30


def _zstd_bomb(size: int) -> bytes:
    import zstandard

    out = zstandard.ZstdCompressor(level=3).compressobj()
    chunk = b" " * (1 << 20)
    parts = [out.compress(b'{"id": 1, "pad": "')]
    parts += [out.compress(chunk) for _ in range(size >> 20)]
    parts.append(out.compress(b'"}') + out.flush())
    return b"".join(parts)


def _set_method(path: Path, name: str, method: int) -> None:
    """Mark member ``name`` as compressed with ``method`` in its local and central headers."""
    raw = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).getinfo(name)
    struct.pack_into("<H", raw, info.header_offset + 8, method)
    eocd = raw.rindex(b"PK\x05\x06")
    pos = struct.unpack_from("<I", raw, eocd + 16)[0]  # the central directory
    while raw[pos : pos + 4] == b"PK\x01\x02":
        n, extra, comment = struct.unpack_from("<HHH", raw, pos + 28)
        if raw[pos + 46 : pos + 46 + n] == name.encode():
            struct.pack_into("<H", raw, pos + 10, method)
        pos += 46 + n + extra + comment
    path.write_bytes(bytes(raw))


def _eval_with(tmp_path: Path, kind: str, size: int) -> Path:
    """The fixture's log with its first sample replaced by ``size`` bytes once inflated."""
    src = zipfile.ZipFile(FIXTURES / "agent.eval")
    path = tmp_path / f"bomb-{kind}.eval"
    member = "samples/swe-17_epoch_1.json"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            if info.filename == member:
                continue
            z.writestr(info.filename, _logs._member(src, info, FIXTURES / "agent.eval",
                                                    _logs._Budget(path)))  # fmt: skip
        if kind == "zstd":
            z.writestr(member, _zstd_bomb(size), compress_type=zipfile.ZIP_STORED)
        else:
            with z.open(member, "w", force_zip64=True) as fh:
                fh.write(b'{"id": 1, "pad": "')
                for _ in range(size >> 20):
                    fh.write(b" " * (1 << 20))
                fh.write(b'"}')
    if kind == "zstd":
        _set_method(path, member, 93)
    return path


@pytest.mark.parametrize("kind", ["zstd", "deflate"])
def test_a_member_that_inflates_to_a_gibibyte_is_one_line(tmp_path: Path, kind: str) -> None:
    bomb = _eval_with(tmp_path, kind, GIB)
    assert bomb.stat().st_size < 2 * 2**20  # a small file
    # run under a parent of its own, whose children's peak RSS is this command's alone
    measure = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stderr.write(done.stderr); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.exit(done.returncode)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, *tinyjudge_command(), "import", "chat", str(bomb),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    peak_kib = int(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "samples/swe-17_epoch_1.json: inflates to more than 128 MiB" in line
    assert "limit per member" in line
    assert not (tmp_path / "out" / "items.jsonl").exists()
    # read up to the limit and no further (before: 2.1 GB, then an abort)
    assert peak_kib < 512 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"  # measured: 169 MiB


def test_members_together_are_bounded_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Limits lowered so that four small members pass one and the file's total passes the other.
    monkeypatch.setattr(_logs, "MAX_MEMBER_BYTES", 3 * 2**20)
    monkeypatch.setattr(_logs, "MAX_ARCHIVE_BYTES", 5 * 2**20)
    path = tmp_path / "many.eval"
    pad = " " * (2 * 2**20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        for i in range(4):
            z.writestr(f"samples/{i}_epoch_1.json", json.dumps({"id": i, "pad": pad}))
    with pytest.raises(DataError, match=r"many\.eval: its members inflate to more than 5 MiB") as e:
        import_chat(path)
    assert "limit per file" in str(e.value)


def test_an_attachment_named_800_times_is_expanded_within_a_budget(tmp_path: Path) -> None:
    log = json.loads((FIXTURES / "agent.json").read_text())
    sample = log["samples"][0]
    text = "the same long tool output." * 10_000  # 260 KB
    sample["attachments"] = {"big": text}
    sample["messages"] = [sample["messages"][1]] + [
        {"role": "assistant" if i % 2 else "user", "content": "attachment://big"}
        for i in range(800)
    ]
    log["samples"] = [sample]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    got = import_chat(path)
    [item] = got.items
    total = sum(len(m.text) for m in item.messages)
    assert total < 6 * len(text) + 2**20  # before: 800 copies, 208 MB
    assert item.messages[1].text == text  # shown in full where first named
    assert "attachment big: the same 260000 characters as shown earlier" in item.messages[-1].text
