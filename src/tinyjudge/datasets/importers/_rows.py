"""Rows of a user's own file: JSONL, a JSON array, CSV, Parquet, a ``datasets`` folder.

Each row comes with where it is (the file, and the line of a text file or the
1-based row of a Parquet file or a ``datasets`` split), so a bad row is reported
as ``file:line``. Values are made JSON-ready (dates as ISO text, bytes noted by
size), since they end up in items' metadata.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tinyjudge.errors import DataError

from ._common import read_csv_rows
from ._json import load_json, read_json_array, read_jsonl_objects
from ._logs import eval_zip_rows, json_array_rows, json_object_rows

__all__ = ["Row", "read_rows", "jsonable", "ROW_FORMATS"]

ROW_FORMATS = (
    ".jsonl (or .jsonl.gz), .ndjson, .json (an object, an array or lines), .csv, .tsv, .parquet, "
    "Inspect AI .eval, SWE-agent .traj, or a folder"
)
_TEXT_SUFFIXES = {".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".pq", ".eval", ".traj"}


class Row(NamedTuple):
    """One record of a user's file and where it is."""

    where: str
    line: int
    data: dict[str, Any]


def jsonable(value: Any) -> Any:
    """A value as JSON can hold it: dates as ISO text, bytes noted, NaN as None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):  # an image or audio column: noted, not copied
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist())
    return value


def read_rows(path: Path, on_error: Callable[[DataError], None] | None = None) -> Iterator[Row]:
    """Yield each row of a file or folder of rows.

    Args:
        path: a ``.jsonl``/``.ndjson`` file, a ``.json`` file (one object or
            one array however indented, or JSON Lines; an Inspect AI ``EvalLog``
            is a row per sample, an OpenHands event array one row), an Inspect
            AI ``.eval`` file (a row per sample and epoch), a SWE-agent
            ``.traj`` file (one row), a ``.csv``/``.tsv`` file with a header, a ``.parquet``
            file, a folder written by ``datasets``' ``save_to_disk`` (every
            split, each row's split in the ``split`` column), or a folder of
            such files (read in name order).
        on_error: called with each malformed row's error, and reading goes
            on; without it the first one raises.

    Raises:
        DataError: a missing path, a format it cannot read, or (without
            ``on_error``) a malformed row.
    """
    if path.is_dir():
        if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            yield from _saved_dataset(path)
            return
        files = sorted(
            p for p in path.rglob("*") if p.suffix.lower() in _TEXT_SUFFIXES or _gzipped_lines(p)
        )
        if not files:
            raise DataError(str(path), None, f"a folder with no rows in it; expected {ROW_FORMATS}")
        for f in files:
            yield from read_rows(f, on_error)
        return
    if not path.is_file():
        raise DataError(str(path), None, "no such file")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        yield from _parquet(path)
    elif suffix in (".csv", ".tsv"):
        for line, row in read_csv_rows(
            path, [], on_error, delimiter="\t" if suffix == ".tsv" else ","
        ):
            yield Row(str(path), line, dict(row))
    elif suffix == ".eval":
        for where, line, row in eval_zip_rows(path):
            yield Row(where, line, row)
    elif suffix == ".traj" or (
        suffix == ".json" and _starts_with(path, b"{") and _one_object(path)
    ):
        for where, line, row in json_object_rows(path, load_json(path.read_bytes(), path)):
            yield Row(where, line, row)
    elif suffix == ".json" and _starts_with(path, b"["):
        for line, obj in json_array_rows(path, read_json_array(path)):
            if isinstance(obj, dict):
                yield Row(str(path), line, obj)
                continue
            err = DataError(str(path), line, f"expected an object, got {type(obj).__name__}")
            if on_error is None:
                raise err
            on_error(err)
    elif suffix in (".jsonl", ".ndjson", ".json", ".txt", "") or _gzipped_lines(path):
        for line, obj in read_jsonl_objects(path, on_error):
            yield Row(str(path), line, obj)
    else:
        raise DataError(str(path), None, f"cannot read {suffix!r} files; expected {ROW_FORMATS}")


def _gzipped_lines(path: Path) -> bool:
    """A gzipped JSON Lines file (``test.jsonl.gz``, as HH-RLHF ships)."""
    return path.name.lower().endswith((".jsonl.gz", ".ndjson.gz"))


def _one_object(path: Path) -> bool:
    """Whether a ``.json`` file starting with ``{`` is one object (however indented), not
    JSON Lines: it is, unless its first line is a whole object by itself and more follows."""
    with path.open("rb") as fh:
        first = fh.readline().lstrip(b"\xef\xbb\xbf \t")
        rest = fh.read(1 << 16).strip()
    if not rest:
        return True
    try:
        return not isinstance(json.loads(first.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return True


def _starts_with(path: Path, prefix: bytes) -> bool:
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(prefix)


def _parquet(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq

    try:
        reader = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a file that is not Parquet
        raise DataError(str(path), None, f"not a Parquet file ({e})") from None
    n = 0
    for batch in reader.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            n += 1
            yield Row(str(path), n, row)


def _saved_dataset(path: Path) -> Iterator[Row]:
    from datasets import DatasetDict, load_from_disk

    try:
        loaded = load_from_disk(str(path))
    except Exception as e:  # datasets raises FileNotFoundError, ValueError, ...
        raise DataError(str(path), None, f"not a readable `datasets` folder ({e})") from None
    splits = loaded.items() if isinstance(loaded, DatasetDict) else [(None, loaded)]
    for split, ds in splits:
        where = str(path / split) if split else str(path)
        for n, row in enumerate(ds, start=1):
            row = dict(row)
            if split is not None:
                row.setdefault("split", split)
            yield Row(where, n, row)
