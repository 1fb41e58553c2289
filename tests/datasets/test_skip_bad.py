"""The one skip-bad reader every public importer goes through (``_common.SkipBad``)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tinyjudge.datasets.importers._common import SkipBad
from tinyjudge.errors import DataError
from tinyjudge.records import Message


def _build(skip: SkipBad, made: list[int], value: object) -> None:
    with skip.record(where="runs/7.json"):
        if value == "bad":
            raise DataError("rows.jsonl", 3, '"task" must be a non-empty string')
        if value == "wrong-type":
            Message.model_validate({"role": 5, "content": "hi"})
        made.append(int(value))  # type: ignore[call-overload]


def test_skipping_lists_each_bad_record_and_keeps_the_rest() -> None:
    bad: list[DataError] = []
    skip, made = SkipBad(True, bad), []
    for value in [1, "bad", 2, "wrong-type", 3]:
        _build(skip, made, value)
    assert made == [1, 2, 3]
    assert [str(e).split(":")[0] for e in bad] == ["rows.jsonl", "runs/7.json"]
    assert str(bad[0]) == 'rows.jsonl:3: "task" must be a non-empty string'
    assert bad[1].path == "runs/7.json" and bad[1].line is None


def test_without_skipping_the_first_bad_record_is_raised() -> None:
    bad: list[DataError] = []
    skip, made = SkipBad(False, bad), []
    _build(skip, made, 1)
    with pytest.raises(DataError, match=r'^rows\.jsonl:3: "task"'):
        _build(skip, made, "bad")
    with pytest.raises(DataError, match=r"^runs/7\.json: "):
        _build(skip, made, "wrong-type")
    assert made == [1] and bad == []


def test_as_a_readers_on_error_it_lists_or_raises() -> None:
    bad: list[DataError] = []
    SkipBad(True, bad)(DataError("a.csv", 2, "expected 3 fields"))
    assert [str(e) for e in bad] == ["a.csv:2: expected 3 fields"]
    with pytest.raises(DataError, match="expected 3 fields"):
        SkipBad(False, bad)(DataError("a.csv", 2, "expected 3 fields"))


def test_a_validation_error_without_a_file_is_not_a_bad_record() -> None:
    with pytest.raises(ValidationError):
        with SkipBad(True, []).record():
            Message.model_validate({"role": 5, "content": "hi"})
