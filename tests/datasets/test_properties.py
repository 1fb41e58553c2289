"""Properties of the readers: any file either reads or fails with one DataError line.

Items and labels JSON Lines, and ``import chat``'s rows of messages, drawn by
hypothesis from the formats' own keys with values of every JSON type (and lines
that are not JSON or not UTF-8). Nothing else may escape: no ``TypeError``,
``RecursionError`` or pydantic ``ValidationError`` from a user's file.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from strategies import FAST, ITEM, JSON, LABEL, MESSAGES, jsonl_lines

from tinyjudge.datasets.importers import import_chat
from tinyjudge.datasets.jsonl import read_items, read_labels
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Item, Label


def _one_line(e: TinyjudgeError, path: Path) -> None:
    text = str(e)
    assert "\n" not in text and "\r" not in text, text
    assert text.startswith(str(path)), text


def _file(body: bytes, name: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="tj-prop-"))
    path = folder / name
    path.write_bytes(body)
    return path


@FAST
@given(body=jsonl_lines(ITEM))
def test_any_items_file_reads_or_fails_with_one_line(body: bytes) -> None:
    path = _file(body, "items.jsonl")
    errors: list[DataError] = []
    kept = read_items(path, on_error=errors.append)
    assert all(isinstance(it, Item) for it in kept)
    for e in errors:
        _one_line(e, path)
    try:
        assert read_items(path) == kept and not errors
    except DataError as e:
        _one_line(e, path)
        assert errors, "the strict read failed where the lenient one saw no error"


@FAST
@given(body=jsonl_lines(LABEL), with_rubric=st.booleans())
@example(body=b'{"item_id": "i", "label": "x", "probs": {"\\r": null}}\n', with_rubric=False)
def test_any_labels_file_reads_or_fails_with_one_line(body: bytes, with_rubric: bool) -> None:
    path = _file(body, "labels.jsonl")
    rubric = "compliance" if with_rubric else None
    errors: list[DataError] = []
    kept = read_labels(path, rubric=rubric, on_error=errors.append)
    assert all(isinstance(lab, Label) for lab in kept)
    for e in errors:
        _one_line(e, path)
    for lab in kept:  # what was read can be written back
        Label.model_validate_json(lab.model_dump_json())


@FAST
@given(
    rows=st.lists(
        st.fixed_dictionaries({"messages": MESSAGES | st.text(max_size=40)}, optional={"id": JSON})
        | st.fixed_dictionaries({"prompt": JSON, "completion": JSON}),
        min_size=1,
        max_size=4,
    ),
)
@example(rows=[{"messages": {"": False, "extra": True}}])  # was a TypeError
def test_any_chat_file_imports_or_fails_with_one_line(rows: list) -> None:
    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8", "surrogatepass") for r in rows]
    path = _file(b"\n".join(lines) + b"\n", "chat.jsonl")
    try:
        got = import_chat(path, skip_bad=True)
    except DataError as e:  # a duplicate id stops the import even with skip_bad
        _one_line(e, path)
        assert "duplicate id" in str(e)
        return
    for e in got.bad:
        _one_line(e, path)
    assert len(got.items) + len(got.bad) == len(rows)
    for item in got.items:
        Item.model_validate_json(item.model_dump_json())


SHEET_ROW = st.fixed_dictionaries(
    {"item": JSON | st.text(max_size=4), "label": JSON | st.sampled_from(["full_refusal", "x"])},
    optional={"rater": JSON | st.sampled_from(["ann", "bo"]), "alice": JSON, "bob": JSON},
)


@FAST
@given(rows=st.lists(SHEET_ROW, min_size=1, max_size=5), wide=st.booleans())
@example(rows=[{"item": "", "label": "full_refusal"}], wide=False)  # Dawid-Skene over nothing
def test_any_label_sheet_imports_or_fails_with_one_line(rows: list, wide: bool) -> None:
    from tinyjudge.datasets.importers import import_labels

    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8", "surrogatepass") for r in rows]
    path = _file(b"\n".join(lines) + b"\n", "sheet.jsonl")
    fields, rater = (["alice", "bob"], None) if wide else (["label"], "rater")
    for aggregate in ("majority", "dawid-skene"):
        try:
            got = import_labels(path, "compliance", "item", fields, rater, None, aggregate, True)
        except TinyjudgeError as e:  # a rater labelling an item twice stops it
            assert "\n" not in str(e), str(e)
            continue
        for e in got.bad:
            _one_line(e, path)
        for lab in got.labels:
            Label.model_validate_json(lab.model_dump_json())
