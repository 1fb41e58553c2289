"""The labels file beside the store: appended a line at a time, never left with a torn one.

The store (SQLite) holds the answers; the file is what ``calibrate`` and ``audit`` read.
A write that a full disk or a crash cut short would leave a last line that is not JSON,
which every reader then refuses; here such a line is cut off (truncating needs no free
space) and the store writes its answers back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["append_line", "cut_to", "lines_except", "mend_tail", "read_objects"]


def append_line(path: Path, line: bytes) -> int:
    """Append ``line`` (ending in a newline) durably; return the file's length before it.

    A torn last line is cut off first (:func:`mend_tail`); a write that fails
    part-way is cut off again before the error goes on.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as fh:
        before = _mend(fh)
        try:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        except BaseException:
            fh.truncate(before)
            raise
    return before


def cut_to(path: Path, length: int) -> None:
    """Truncate ``path`` back to ``length`` bytes (an append undone)."""
    with path.open("r+b") as fh:
        fh.truncate(length)
        os.fsync(fh.fileno())


def mend_tail(path: Path) -> bool:
    """Cut a torn last line off ``path``; True when there was one (see :func:`_mend`)."""
    with path.open("r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        return _mend(fh) < size


def lines_except(path: Path, owned: Callable[[object], bool]) -> list[str]:
    """The lines of ``path`` (each ending in a newline) but those whose record is ``owned``.

    Only a line naming a human source can be the store's, so only those are parsed;
    a line that is not JSON is not ours to judge and is kept byte for byte.
    """
    keep: list[str] = []
    if not path.exists():
        return keep
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj = None
            if '"human:' in line:
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):
                    pass
            if not owned(obj):
                keep.append(line if line.endswith("\n") else line + "\n")
    return keep


def read_objects(path: Path) -> Iterator[object]:
    """The JSON value of each line of ``path`` that holds one."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    yield json.loads(line)
                except (ValueError, RecursionError):
                    continue


def _mend(fh: BinaryIO) -> int:
    """Make a labels file opened for update end with a newline; return its length then.

    A last line without one is a label that a write cut short (the start of a
    label record, not JSON): it is cut off. Any other (a record typed without the
    final newline, or a line that is not ours to judge) gets its newline.
    """
    size = fh.seek(0, os.SEEK_END)
    if not size:
        return 0
    fh.seek(size - 1)
    if fh.read(1) == b"\n":
        return size
    start = _last_line_start(fh, size)
    fh.seek(start)
    if _torn_label(fh.read(size - start)):
        fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())
        return start
    fh.seek(size)
    fh.write(b"\n")
    fh.flush()
    return size + 1


# How every label record tinyjudge writes begins (Label's first field)
_LABEL_START = b'{"item_id":'


def _torn_label(line: bytes) -> bool:
    """Whether ``line`` is the start of a label record that was never finished."""
    if not (line.startswith(_LABEL_START) or _LABEL_START.startswith(line.rstrip())):
        return False
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return True
    return False


def _last_line_start(fh: BinaryIO, size: int, block: int = 1 << 16) -> int:
    """Where the last line of a file begins (after its last newline), reading backwards."""
    end = size
    while end > 0:
        begin = max(0, end - block)
        fh.seek(begin)
        at = fh.read(end - begin).rfind(b"\n")
        if at >= 0:
            return begin + at + 1
        end = begin
    return 0
