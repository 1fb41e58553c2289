"""The importers' JSON readers: every bad record is ``file:line``, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.importers._json import read_json_array, read_jsonl_objects
from tinyjudge.errors import DataError


def test_json_array_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'[\n  {"x": 1},\n  {"x": "caf\xe9"}\n]\n')
    with pytest.raises(DataError, match=r"a\.json:3: not UTF-8 text \(byte 0xe9\)"):
        read_json_array(path)


def test_json_array_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf[{"x": 1},\n{"x": 2}]')
    assert read_json_array(path) == [(1, {"x": 1}), (2, {"x": 2})]


def test_jsonl_line_that_is_not_utf8_is_one_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"x": 1}\n{"x": "caf\xe9"}\n\n{"x": 3}\n')
    bad: list[DataError] = []
    assert list(read_jsonl_objects(path, on_error=bad.append)) == [(1, {"x": 1}), (4, {"x": 3})]
    assert [str(e) for e in bad] == [
        f"{path}:2: not UTF-8 text (byte 0xe9); save the file as UTF-8"
    ]
    with pytest.raises(DataError, match=r"a\.jsonl:2: not UTF-8"):
        list(read_jsonl_objects(path))
