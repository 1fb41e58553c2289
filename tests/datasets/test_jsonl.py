"""JSON Lines: round trips, streaming, and every bad line named by file:line."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from tinyjudge.datasets.jsonl import (
    append_jsonl,
    atomic_writer,
    count_lines,
    read_items,
    read_jsonl,
    read_labels,
    write_jsonl,
)
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Label

from .conftest import sample_items, sample_labels


def test_items_and_labels_round_trip(tmp_path: Path) -> None:
    items, labels = sample_items(), sample_labels()
    assert write_jsonl(tmp_path / "items.jsonl", items) == 3
    assert write_jsonl(tmp_path / "labels.jsonl", labels) == 4
    assert read_items(tmp_path / "items.jsonl") == items
    assert read_labels(tmp_path / "labels.jsonl") == labels
    with pytest.raises(DataError, match=r':3: label of rubric "instruction_following", not of'):
        read_labels(tmp_path / "labels.jsonl", rubric="compliance")
    # One JSON object per line, UTF-8 kept as text, None fields left out.
    lines = (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and "Ünïcödé ✈" in lines[0]
    assert "response_a" not in json.loads(lines[0])


def test_append_and_dicts(tmp_path: Path) -> None:
    path = tmp_path / "log" / "labels.jsonl"
    labels = sample_labels()
    assert append_jsonl(path, labels[:1]) == 1
    assert append_jsonl(path, [labels[1].model_dump(mode="json", exclude_none=True)]) == 1
    assert read_labels(path) == labels[:2]


def test_writing_over_a_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "out.jsonl").mkdir()
    with pytest.raises(TinyjudgeError, match=r"out\.jsonl is a folder; give the path of a file"):
        write_jsonl(tmp_path / "out.jsonl", [{"a": 1}])
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"], "no temporary file left"


def test_atomic_writer_keeps_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    write_jsonl(path, sample_items())
    before = path.read_bytes()

    def broken():
        yield sample_items()[0]
        raise RuntimeError("judge crashed")

    with pytest.raises(RuntimeError, match="judge crashed"):
        write_jsonl(path, broken())
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl"], "no temp file left"
    with atomic_writer(tmp_path / "new.txt") as fh:
        fh.write("x")
        assert not (tmp_path / "new.txt").exists(), "appears only when the block succeeds"
    assert (tmp_path / "new.txt").read_text() == "x"


@pytest.mark.parametrize(
    ("content", "expected"),
    [("", 0), ("a\n", 1), ("a\nb", 2), ("a\nb\n", 2), ("\n\n", 2), ("x" * 10, 1)],
    ids=["empty", "one", "no-final-newline", "two", "blank-lines", "single-no-newline"],
)
def test_count_lines_small(tmp_path: Path, content: str, expected: int) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(content)
    assert count_lines(path, chunk=3) == expected


def test_count_lines_streams_a_multi_megabyte_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = json.dumps({"item_id": "i", "rubric": "r", "source": "s", "label": "x" * 200}) + "\n"
    n = 40_000  # about 10 MB
    with path.open("w") as fh:
        for _ in range(n):
            fh.write(line)
    size = path.stat().st_size
    assert size > 9_000_000
    tracemalloc.start()
    try:
        assert count_lines(path) == n
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The default chunk is 1 MiB; reading the file whole would need > 9 MB.
    assert peak < 3_000_000, f"count_lines peaked at {peak} bytes for a {size}-byte file"

    tracemalloc.start()
    try:
        seen = sum(1 for _ in read_jsonl(path, Label))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == n
    assert peak < 3_000_000, f"read_jsonl peaked at {peak} bytes: it must not hold the file"


def test_read_jsonl_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    write_jsonl(path, sample_labels()[:1])
    with path.open("a") as fh:
        fh.write("{not json\n")
    records = read_jsonl(path, Label)
    assert next(records).label == "full_refusal", "the first record comes before line 2 is read"
    with pytest.raises(DataError, match=r"labels\.jsonl:2: malformed JSON"):
        next(records)


GOOD_LABEL = '{"item_id": "i", "rubric": "r", "source": "human:a", "label": "x"}'


@pytest.mark.parametrize(
    ("bad_line", "match"),
    [
        ('{"item_id": "i", "rubric": "r", "source": "s"', r":3: malformed JSON \(Expecting"),
        ('{"rubric": "r", "source": "s", "label": "x"}', r':3: missing field "item_id"'),
        (
            '{"item_id": "i", "rubric": "r", "source": "s", "label": "x", "conf": 1}',
            r':3: unknown field "conf"',
        ),
        ('["item_id", "i"]', r":3: expected a JSON object, got list"),
        ('"just a string"', r":3: expected a JSON object, got str"),
        ('{"item_id": "i", "rubric": "r", "source": "s"}', r':3: an "ok" label needs "label"'),
        (
            '{"item_id": "i", "rubric": "r", "source": "s", "label": "x", "probs": {"x": 0.5}}',
            r':3: "probs" must sum to 1, got 0\.5000',
        ),
        (
            '{"item_id": "i", "rubric": "r", "source": "s", "label": "x", "score": "high"}',
            r':3: field "score": Input should be a valid number',
        ),
        (
            '{"item_id": "\\ud800", "rubric": "r", "source": "s", "label": "x"}',
            r":3: a lone surrogate \(\\ud800\) in a string: not valid Unicode text",
        ),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, r":3: JSON nested too deep to read"),
        ('{"item_id": ' + "7" * 5000 + "}", r":3: malformed JSON \(a number of more than 4,300"),
    ],
    ids=[
        "malformed-json",
        "missing-field",
        "unknown-field",
        "array-line",
        "string-line",
        "no-label",
        "probs-sum",
        "wrong-type",
        "lone-surrogate",
        "nested-100000-deep",
        "5000-digit-integer",
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, bad_line: str, match: str) -> None:
    path = tmp_path / "labels.jsonl"
    # Line 2 is blank: blank lines are skipped but still counted.
    path.write_text(GOOD_LABEL + "\n\n" + bad_line + "\n" + GOOD_LABEL + "\n")
    with pytest.raises(DataError, match=r"labels\.jsonl" + match) as info:
        read_labels(path)
    assert info.value.line == 3 and info.value.path == str(path)
    errors: list[DataError] = []
    assert len(read_labels(path, on_error=errors.append)) == 2, "the good lines are kept"
    assert [e.line for e in errors] == [3]


def test_item_errors_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"id": "a", "messages": [{"role": "user", "content": "hi"}]}\n'
        '{"id": "b", "messages": [{"role": "user", "content": "q", "tool_calls": [{"id": "c", '
        '"function": {"name": "f"}}]}]}\n'
        '{"id": "c"}\n'
    )
    errors: list[DataError] = []
    assert [i.id for i in read_items(path, on_error=errors.append)] == ["a"]
    assert str(errors[0]).endswith(
        'items.jsonl:2: field "messages.0": Value error, '
        "only assistant messages carry \"tool_calls\", not 'user'"
    )
    assert str(errors[1]).endswith(
        'items.jsonl:3: an item needs non-empty "messages" (or "response_a"/"response_b")'
    )


def test_not_utf8_is_one_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_bytes(GOOD_LABEL.encode() + b"\n" + b'{"item_id": "\xff"}\n')
    with pytest.raises(DataError, match=r"labels\.jsonl:2: not UTF-8 text \(byte 14\)"):
        read_labels(path)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.jsonl: no such file"):
        read_items(tmp_path / "nope.jsonl")
    with pytest.raises(DataError, match=r": a folder, not a JSONL file"):
        read_items(tmp_path)


def test_labels_checked_against_a_rubric(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rows = [
        {"item_id": "i1", "rubric": "compliance", "source": "human:a", "label": "full_refusal"},
        {"item_id": "i2", "rubric": "compliance", "source": "human:a", "label": "maybe"},
        {
            "item_id": "i3",
            "rubric": "compliance",
            "source": "judge:m",
            "status": "unscored",
            "raw": "maybe",
            "reason": "not a label",
        },
    ]
    write_jsonl(path, rows)
    with pytest.raises(
        DataError,
        match=r"labels\.jsonl:2: label \"maybe\" is not one of \['full_compliance', "
        r"'full_refusal', 'partial_refusal'\] of rubric compliance$",
    ):
        read_labels(path, rubric="compliance")
    errors: list[DataError] = []
    kept = read_labels(path, rubric="compliance", on_error=errors.append)
    assert [lab.item_id for lab in kept] == ["i1", "i3"], "unscored labels are kept, not checked"
    assert len(errors) == 1


def test_pairwise_labels_checked_against_a_rubric(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    write_jsonl(
        path,
        [
            {
                "item_id": "p",
                "rubric": "instruction_following",
                "source": "judge:m",
                "label": "tie",
                "orders": {"ab": "a", "ba": "b"},
                "consistent": False,
            },
            {
                "item_id": "p",
                "rubric": "instruction_following",
                "source": "judge:m",
                "label": "a",
                "orders": {"ab": "a", "ba": "Output (b)"},
            },
        ],
    )
    with pytest.raises(DataError, match=r':2: "orders\.ba" verdict "Output \(b\)" is not one of'):
        read_labels(path, rubric="instruction_following")


def test_carriage_return_inside_a_line_does_not_split_it(tmp_path: Path) -> None:
    """Only b"\\n" ends a record, as count_lines counts; a lone CR is JSON whitespace."""
    path = tmp_path / "labels.jsonl"
    path.write_bytes(GOOD_LABEL.replace(", ", ",\r ").encode() + b"\n" + b"{oops\n")
    assert count_lines(path) == 2
    errors: list[DataError] = []
    assert len(read_labels(path, on_error=errors.append)) == 1
    assert [e.line for e in errors] == [2]


def test_written_files_get_ordinary_permissions(tmp_path: Path) -> None:
    # Written through a temporary file, which is owner-only; the result must not be.
    new = tmp_path / "new.jsonl"
    write_jsonl(new, sample_labels())
    umask = os.umask(0)
    os.umask(umask)
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask
    old = tmp_path / "old.jsonl"
    old.write_text("")
    old.chmod(0o640)
    write_jsonl(old, sample_labels())
    assert old.stat().st_mode & 0o777 == 0o640


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (GOOD_LABEL + "\n" + GOOD_LABEL + "\n").encode())
    assert len(read_labels(path)) == 2


def test_a_surrogate_pair_is_text(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"item_id": "\\ud83d\\ude42", "rubric": "r", "source": "s", "label": "x"}\n')
    assert read_labels(path)[0].item_id == "\U0001f642"
