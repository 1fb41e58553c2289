"""The answer store on a real SQLite file: commit, undo, skip, export, crash repair."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.errors import TinyjudgeError
from tinyjudge.label import LabelStore
from tinyjudge.label.store import store_path
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric

RUBRIC = load_rubric("compliance")
OTHER = [
    Label(item_id="i1", rubric="compliance", source="judge:m", label="full_refusal"),
    Label(item_id="i1", rubric="compliance", source="human:final", label="full_compliance"),
    # same reviewer name, another rubric: not the store's to rewrite
    Label(item_id="i1", rubric="other", source="human:ann", label="x"),
]


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    path = tmp_path / "labels.jsonl"
    write_jsonl(path, OTHER)
    with path.open("a") as fh:
        fh.write("{not json, kept as it is}\n")
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _answer(store: LabelStore, reviewer: str, item_id: str, label: str | None, note=None):
    store.assign(reviewer, item_id, "sequential")
    return store.answer(reviewer, item_id, label, note)


def test_answers_are_exported_next_to_the_other_records(labels: Path):
    before = _lines(labels)
    store = LabelStore(labels, RUBRIC)
    assert (
        store.db_path
        == store_path(labels)
        == labels.with_name("labels.jsonl.tinyjudge-label.sqlite")
    )
    _answer(store, "ann", "i1", "partial_refusal", "  half and half ")
    _answer(store, "ann", "i2", None)  # a skip: stored, never exported
    _answer(store, "ann", "i3", "full_compliance")
    after = _lines(labels)
    assert after[: len(before)] == before  # untouched, in order, the bad line too
    mine = [json.loads(line) for line in after[len(before) :]]
    assert mine == [
        {
            "item_id": "i1",
            "rubric": "compliance",
            "rubric_hash": RUBRIC.hash,
            "source": "human:ann",
            "status": "ok",
            "label": "partial_refusal",
            "probs": {"partial_refusal": 1.0},
            "score": 1.0,
            "rationale": "half and half",
        },
        {
            "item_id": "i3",
            "rubric": "compliance",
            "rubric_hash": RUBRIC.hash,
            "source": "human:ann",
            "status": "ok",
            "label": "full_compliance",
            "probs": {"full_compliance": 1.0},
            "score": 0.0,
        },
    ]
    kinds = [(a.item_id, a.kind) for a in store.answers("ann")]
    assert kinds == [("i1", "label"), ("i2", "skip"), ("i3", "label")]
    assert store.current("ann") is None


def test_undo_walks_back_and_the_store_keeps_the_history(labels: Path):
    store = LabelStore(labels, RUBRIC)
    _answer(store, "ann", "i1", "full_refusal")
    _answer(store, "ann", "i2", "full_refusal")
    assert store.undo("ann").item_id == "i2"
    assert store.current("ann") == ("i2", "sequential")
    assert [lab.item_id for lab in read_labels_of(labels, "human:ann")] == ["i1"]
    store.answer("ann", "i2", "full_compliance")  # answered again, differently
    again = {lab.item_id: lab for lab in read_labels_of(labels, "human:ann")}
    assert {k: v.label for k, v in again.items()} == {
        "i1": "full_refusal",
        "i2": "full_compliance",
    }
    # The page showed the machines' verdicts after the first answer: the second is not
    # independent of them, and says so; a full rewrite keeps the mark.
    assert again["i2"].raw == {"seen_machine_verdicts": True} and again["i1"].raw is None
    assert store.seen("ann") == {("ann", "i2")}
    store.export()
    assert {lab.item_id: lab.raw for lab in read_labels_of(labels, "human:ann")}["i2"] == {
        "seen_machine_verdicts": True
    }
    store.undo("ann")
    store.undo("ann")
    assert store.undo("ann") is None
    assert read_labels_of(labels, "human:ann") == []
    rows = sqlite3.connect(store.db_path).execute("SELECT count(*) FROM answers").fetchone()
    assert rows == (3,)  # undone answers stay on record


def read_labels_of(path: Path, source: str) -> list[Label]:
    good = [line for line in _lines(path) if not line.startswith("{not json")]
    tmp = path.with_suffix(".check.jsonl")
    tmp.write_text("\n".join(good) + "\n")
    return [lab for lab in read_labels(tmp) if lab.source == source and lab.rubric == "compliance"]


@pytest.mark.parametrize(
    ("item_id", "label", "message"),
    [
        ("i9", "full_refusal", "item 'i9' is not ann's current item \\('i1'\\)"),
        ("i1", "refusal", "label 'refusal' is not one of rubric 'compliance'"),
    ],
    ids=["not-current", "not-a-label"],
)
def test_bad_answers_are_refused_and_change_nothing(labels: Path, item_id, label, message):
    store = LabelStore(labels, RUBRIC)
    store.assign("ann", "i1")
    before = labels.read_bytes()
    with pytest.raises(TinyjudgeError, match=message):
        store.answer("ann", item_id, label)
    assert labels.read_bytes() == before and store.answers() == []


def test_export_repairs_a_file_that_disagrees_with_the_store(labels: Path):
    original = labels.read_bytes()
    store = LabelStore(labels, RUBRIC)
    _answer(store, "ann", "i1", "full_refusal")
    store.close()
    labels.write_bytes(original)  # the answer's line lost (a restore from a backup, say)
    with labels.open("a") as fh:  # and a line whose commit never happened
        fh.write(Label(item_id="i7", rubric="compliance", source="human:ann", label="full_refusal")
                 .model_dump_json() + "\n")  # fmt: skip
    again = LabelStore(labels, RUBRIC)
    assert again.export() == 1
    assert [lab.item_id for lab in read_labels_of(labels, "human:ann")] == ["i1"]
    assert labels.read_bytes().startswith(original)


def test_a_registered_reviewer_owns_their_source_before_the_first_answer(labels: Path):
    store = LabelStore(labels, RUBRIC)
    store.register("cat")
    with labels.open("a") as fh:  # appended, then the process died before the commit
        fh.write(Label(item_id="i1", rubric="compliance", source="human:cat", label="full_refusal")
                 .model_dump_json() + "\n")  # fmt: skip
    assert store.foreign_labels("cat") == 0
    store.export()
    assert read_labels_of(labels, "human:cat") == []


def test_an_answer_appended_to_a_file_without_a_final_newline_stays_a_line(labels: Path):
    labels.write_bytes(labels.read_bytes().rstrip(b"\n"))
    store = LabelStore(labels, RUBRIC)
    _answer(store, "ann", "i1", "full_refusal")
    assert _lines(labels)[-2] == "{not json, kept as it is}"
    assert json.loads(_lines(labels)[-1])["source"] == "human:ann"


def test_foreign_labels_of_the_same_name_are_detected(labels: Path):
    store = LabelStore(labels, RUBRIC)
    assert store.foreign_labels("final") == 1  # the imported human:final label
    assert store.foreign_labels("ann") == 0  # human:ann exists only for another rubric
    _answer(store, "ann", "i1", "full_refusal")
    assert store.foreign_labels("ann") == 0


def test_two_processes_exporting_at_once_lose_nothing(labels: Path):
    # Two stores are two connections, as two `tinyjudge label` processes would hold.
    stores = {name: LabelStore(labels, RUBRIC) for name in ("ann", "ben")}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            for i in range(15):
                _answer(stores[name], name, f"i{i}", "full_refusal")
        except BaseException as e:  # surfaced below; a thread's exception is otherwise lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for name in stores:
        assert len(read_labels_of(labels, f"human:{name}")) == 15
    assert _lines(labels)[:4] == [*(o.model_dump_json(exclude_none=True) for o in OTHER),
                                  "{not json, kept as it is}"]  # fmt: skip


def test_the_store_is_in_wal_mode_with_full_sync(labels: Path):
    store = LabelStore(labels, RUBRIC)
    assert store._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert store._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
