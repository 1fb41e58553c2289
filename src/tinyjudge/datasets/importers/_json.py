"""JSON and JSON Lines reading for importers, with the line each record starts on.

Public releases ship whole-file JSON arrays as often as JSON Lines; either way a
bad record must be reported as ``file:line``, so arrays are decoded element by
element instead of with one ``json.load``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tinyjudge.errors import DataError

from ._common import not_utf8_message

__all__ = ["load_json", "read_json_array", "read_jsonl_objects", "need"]

_WS = " \t\n\r"


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def load_json(raw: bytes, path: Path, line: int = 1) -> Any:
    """Decode JSON bytes that start on ``line`` of ``path`` (a whole file, or one line of one).

    Raises:
        DataError: at ``path:line`` for every way decoding fails: bytes that are
            not UTF-8, malformed JSON, nesting too deep for Python's decoder, an
            integer of more than 4,300 digits, a lone surrogate escape (``\\ud800``,
            text that no file or hash can hold). A byte-order mark on line 1 is read.
    """
    try:
        obj = json.loads(raw.decode("utf-8-sig" if line == 1 else "utf-8"))
    except UnicodeDecodeError as e:
        where = line + raw.count(b"\n", 0, e.start)
        raise DataError(str(path), where, not_utf8_message(raw[e.start])) from None
    except json.JSONDecodeError as e:
        where, problem = line + e.lineno - 1, f"malformed JSON ({e.msg} at column {e.colno})"
        raise DataError(str(path), where, problem) from None
    except (ValueError, RecursionError) as e:
        raise DataError(str(path), line, _undecodable(e)) from None
    if b"\\ud" in raw.lower():
        _refuse_lone_surrogates(obj, path, line)
    return obj


def _refuse_lone_surrogates(obj: Any, path: Path, line: int) -> None:
    from tinyjudge.datasets.jsonl import lone_surrogate

    if problem := lone_surrogate(obj):
        raise DataError(str(path), line, problem)


def _undecodable(e: ValueError | RecursionError) -> str:
    """Valid JSON that Python will not decode: nesting too deep, an integer too long."""
    if isinstance(e, RecursionError):
        return "JSON nested too deep to read"
    what = "a number of more than 4,300 digits" if "digits" in str(e) else str(e)[:120]
    return f"malformed JSON ({what})"


def read_json_array(path: Path) -> list[tuple[int, Any]]:
    """Decode a file holding one JSON array into ``(line, element)`` pairs.

    Raises:
        DataError: the file is missing, is not valid JSON, or is not an array;
            the error names the line where decoding failed.
    """
    if not path.is_file():
        raise DataError(str(path), None, "no such file; is this the right folder?")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(str(path), line, not_utf8_message(data[e.start])) from None
    decoder = json.JSONDecoder()
    i = _skip_ws(text, 0)
    if not text.startswith("[", i):
        found = repr(text[i : i + 20]) if i < len(text) else "an empty file"
        raise DataError(str(path), 1, f"expected a JSON array, found {found}")
    out: list[tuple[int, Any]] = []
    line, counted = 1, 0
    i = _skip_ws(text, i + 1)
    if text.startswith("]", i):
        return out
    while True:
        line += text.count("\n", counted, i)
        counted = i
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise DataError(str(path), e.lineno, f"malformed JSON ({e.msg})") from None
        except (ValueError, RecursionError) as e:
            raise DataError(str(path), line, _undecodable(e)) from None
        if "\\ud" in text[counted:i].lower():
            _refuse_lone_surrogates(obj, path, line)
        out.append((line, obj))
        i = _skip_ws(text, i)
        if text.startswith("]", i):
            return out
        if not text.startswith(",", i):
            bad_line = line + text.count("\n", counted, i)
            raise DataError(str(path), bad_line, "malformed JSON (expected ',' or ']')")
        i = _skip_ws(text, i + 1)


def read_jsonl_objects(
    path: Path, on_error: Callable[[DataError], None] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, object)`` for each non-empty line of a JSON Lines file.

    Args:
        path: the ``.jsonl`` file.
        on_error: called with each malformed line's error, and reading goes on;
            without it the first malformed line raises.
    """
    # Binary lines, as tinyjudge.datasets.jsonl reads them: a line that is not
    # UTF-8 is one bad record, not the end of the import.
    opened = gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb")
    with opened as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = load_json(raw.rstrip(b"\r\n"), path, line)
            except DataError as e:
                err = e
            else:
                if isinstance(obj, dict):
                    yield line, obj
                    continue
                err = DataError(str(path), line, f"expected an object, got {type(obj).__name__}")
            if on_error is None:
                raise err
            on_error(err)


def need(row: Any, key: str, path: Path, line: int | None) -> Any:
    """``row[key]``, or a :class:`DataError` naming the missing field and those present."""
    if not isinstance(row, dict):
        raise DataError(str(path), line, f"expected an object, got {type(row).__name__}")
    if key not in row:
        raise DataError(str(path), line, f'missing field "{key}"; found {sorted(row)}')
    return row[key]
