"""Agent frameworks' log files as rows: Inspect AI logs, SWE-agent trajectories, OpenHands streams.

Each yields one row per transcript: an Inspect AI ``.eval`` file (a zip of
``header.json`` and ``samples/*.json``) or ``EvalLog`` ``.json`` one row per
sample and epoch; a SWE-agent ``.traj`` one row; a JSON array of OpenHands
events one row (``{"events": [...]}``), and so is a JSON array of messages. The rows are read by
:func:`tinyjudge.records.read_transcript` like any other.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tinyjudge.errors import DataError
from tinyjudge.records import is_eval_log, is_message_record, is_openhands_event, sample_rows

__all__ = [
    "MAX_MEMBER_BYTES",
    "MAX_ARCHIVE_BYTES",
    "eval_zip_rows",
    "json_object_rows",
    "json_array_rows",
]


_ZSTD = 93  # the zip compression method Inspect AI writes since 2025 (older logs: deflate)
# What one member, and all of a file's members together, may inflate to: a log of a
# few kilobytes can claim (or hold) gigabytes. A real sample is far below either.
MAX_MEMBER_BYTES = 128 * 2**20
MAX_ARCHIVE_BYTES = 512 * 2**20
_CHUNK = 1 << 20


def _mb(n: int) -> str:
    return f"{n / 2**20:g} MiB"


class _Budget:
    """The bytes a file's members may still inflate to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.left = MAX_ARCHIVE_BYTES

    def read(self, stream: IO[bytes], where: str) -> bytes:
        """``stream`` read to its end, refused as soon as it passes a limit."""
        limit = min(MAX_MEMBER_BYTES, self.left)
        chunks: list[bytes] = []
        total = 0
        while chunk := stream.read(min(_CHUNK, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                if limit < MAX_MEMBER_BYTES:
                    raise DataError(
                        str(self.path), None,
                        f"its members inflate to more than {_mb(MAX_ARCHIVE_BYTES)} together "
                        f"(the limit per file; passed at {where.rsplit('/', 1)[-1]}); "
                        "split the log, or import its samples as .json",
                    )  # fmt: skip
                raise DataError(
                    where, None,
                    f"inflates to more than {_mb(MAX_MEMBER_BYTES)} (the limit per member); "
                    "not a sample Inspect AI writes: check where the log came from",
                )  # fmt: skip
        self.left -= total
        return b"".join(chunks)


def _zstd(raw: bytes, where: str, budget: _Budget) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise DataError(
            where, None, "this .eval file is compressed with zstd: pip install zstandard"
        ) from None
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
        return budget.read(reader, where)


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, budget: _Budget) -> bytes:
    """A member's bytes, within the budget; zstd members (which Python's zipfile reads
    only from 3.14) by hand."""
    where = f"{path}/{info.filename}"
    if info.compress_type != _ZSTD:
        with archive.open(info) as stream:
            return budget.read(stream, where)
    with path.open("rb") as fh:  # the local header's name and extra lengths, then the data
        fh.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", fh.read(4))
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(info.compress_size)
    return _zstd(raw, where, budget)


def _zip_json(archive: zipfile.ZipFile, name: str, path: Path, budget: _Budget) -> Any:
    try:
        return json.loads(_member(archive, archive.getinfo(name), path, budget).decode("utf-8"))
    except DataError:
        raise
    except (UnicodeDecodeError, json.JSONDecodeError, zipfile.BadZipFile, NotImplementedError) as e:
        raise DataError(f"{path}/{name}", None, f"unreadable member of the log ({e})") from None
    except Exception as e:  # zstandard's ZstdError, zlib.error: a damaged member
        raise DataError(f"{path}/{name}", None, f"unreadable member of the log ({e})") from None


def eval_zip_rows(path: Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """``(where, line, row)`` for each sample of an Inspect AI ``.eval`` file."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise DataError(str(path), None, "not an Inspect AI .eval file (not a zip)") from None
    with archive:
        names = archive.namelist()
        header_name = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
        if header_name is None:
            raise DataError(str(path), None, "not an Inspect AI .eval file (no header.json)")
        budget = _Budget(path)
        header = _zip_json(archive, header_name, path, budget)
        found = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
        read = [(n, _zip_json(archive, n, path, budget)) for n in found]
    pairs = [(n, s) for n, s in read if isinstance(s, dict)]
    sample_names, samples = [n for n, _ in pairs], [s for _, s in pairs]
    if not isinstance(header, dict):
        raise DataError(f"{path}/{header_name}", None, "not an Inspect AI log header (no object)")
    if not samples:
        raise DataError(str(path), None, "an Inspect AI log with no samples in it")
    for name, row in zip(sample_names, sample_rows(header, samples), strict=True):
        yield f"{path}/{name}", 1, row


def json_object_rows(path: Path, obj: Any) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """The rows of a ``.json`` file holding one object: an Inspect ``EvalLog``'s samples,
    else the object itself (a SWE-agent trajectory, one transcript)."""
    if is_eval_log(obj):
        samples = [s for s in obj.get("samples") or [] if isinstance(s, dict)]
        if not samples:
            raise DataError(str(path), None, "an Inspect AI log with no samples in it")
        for n, row in enumerate(sample_rows(obj, samples), start=1):
            yield f"{path} sample", n, row
        return
    if not isinstance(obj, dict):
        raise DataError(str(path), 1, f"expected an object, got {type(obj).__name__}")
    yield str(path), 1, obj


def json_array_rows(path: Path, elements: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The rows of a ``.json`` array: one row for an array of messages (one conversation, in
    any shape the reader knows) or an OpenHands event stream, else each element."""
    objs = [obj for _, obj in elements]
    if objs and all(isinstance(o, dict) and is_openhands_event(o) for o in objs):
        return [(1, {"events": objs})]
    if objs and all(is_message_record(o) for o in objs):
        return [(1, {"messages": objs})]
    return elements
