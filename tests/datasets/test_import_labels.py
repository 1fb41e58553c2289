"""``import_labels`` on sheets as people keep them: CSV from pandas, Parquet, JSONL;
long form (a rater column) and wide form (a column per rater); majority and Dawid-Skene."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tinyjudge._aggregate import dawid_skene, majority, vote_counts
from tinyjudge.datasets.importers.label_sheet import import_labels
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Item, Message

LONG = [
    ("i1", "alice", "full_refusal"),
    ("i1", "bob", "full_refusal"),
    ("i1", "carol", "full_compliance"),
    ("i2", "alice", "full_compliance"),
    ("i2", "bob", "partial_refusal"),
    ("i3", "alice", "Full Compliance"),
]


def _frame() -> pd.DataFrame:
    return pd.DataFrame(LONG, columns=["item", "rater", "label"])


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"], ids=["csv", "parquet", "jsonl"])
def test_long_sheet_gives_rater_and_final_labels(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"sheet{suffix}"
    frame = _frame()
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)

    got = import_labels(path, "compliance", "item", ["label"], rater_field="rater")

    assert got.raters == {"human:alice": 3, "human:bob": 2, "human:carol": 1}
    final = {lab.item_id: lab for lab in got.labels if lab.source == "human:final"}
    assert final["i1"].label == "full_refusal"
    assert final["i1"].probs == pytest.approx(
        {"full_compliance": 1 / 3, "full_refusal": 2 / 3, "partial_refusal": 0.0}
    )
    assert final["i1"].score == pytest.approx(2 / 3)  # the rubric's positive labels
    assert final["i2"].status == "unscored"
    assert final["i2"].reason == "tie: full_compliance 1, partial_refusal 1"
    assert final["i3"].label == "full_compliance"  # spelled as people write it
    assert got.ties == 1 and got.labels[0].rubric_hash is not None


def test_wide_sheet_one_column_per_rater(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("id,alice,bob,carol\nx,full_refusal,full_refusal,\ny,full_compliance,,\n")
    got = import_labels(path, "compliance", "id", ["alice", "bob", "carol"])
    assert got.raters == {"human:alice": 2, "human:bob": 1}
    final = {lab.item_id: lab.label for lab in got.labels if lab.source == "human:final"}
    assert final == {"x": "full_refusal", "y": "full_compliance"}


def test_without_a_rater_column_rows_are_numbered_raters(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("id,label\nx,full_refusal\nx,full_refusal\nx,full_compliance\n")
    got = import_labels(path, "compliance", "id", ["label"])
    assert sorted(got.raters) == ["human:1", "human:2", "human:3"]
    assert got.labels[-1].label == "full_refusal"


def test_items_that_match_nothing_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    _frame().to_csv(path, index=False)
    items = [Item(id="i1", messages=[Message(role="user", content="q")])]
    got = import_labels(path, "compliance", "item", ["label"], rater_field="rater", items=items)
    assert got.unmatched == ["i2", "i3"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "item,rater,label\ni1,alice,maybe\n",
            r"sheet\.csv:2: label: label \"maybe\" is not one of "
            r"\['full_compliance', 'full_refusal', 'partial_refusal'\]",
        ),
        (
            "item,rater,verdict\ni1,alice,full_refusal\n",
            r"sheet\.csv:2: missing column \['label'\]",
        ),
        ("item,rater,label\n,alice,full_refusal\n", r'sheet\.csv:2: empty "item"'),
        ("item,rater,label\ni1,,full_refusal\n", r'sheet\.csv:2: empty "rater"'),
    ],
    ids=["label-outside-rubric", "missing-column", "empty-item", "empty-rater"],
)
def test_bad_rows(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text(text + "i9,bob,full_refusal\n" if "verdict" not in text else text)
    with pytest.raises(DataError, match=match):
        import_labels(path, "compliance", "item", ["label"], rater_field="rater")


def test_skip_bad_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text("item,rater,label\ni1,alice,maybe\ni2,bob,full_refusal\n")
    got = import_labels(path, "compliance", "item", ["label"], rater_field="rater", skip_bad=True)
    assert [e.line for e in got.bad] == [2] and got.raters == {"human:bob": 1}


@pytest.mark.parametrize("aggregate", ["majority", "dawid-skene"])
def test_a_sheet_whose_rows_are_all_bad_imports_nothing(tmp_path: Path, aggregate: str) -> None:
    from support import run_tinyjudge

    path = tmp_path / "sheet.csv"
    path.write_text("item,rater,label\n,alice,full_refusal\ni2,bob,maybe\n")
    got = import_labels(path, "compliance", "item", ["label"], "rater", None, aggregate, True)  # type: ignore[arg-type]
    assert got.labels == [] and [e.line for e in got.bad] == [2, 3]
    out = tmp_path / "labels.jsonl"
    out.write_text("earlier\n")
    proc = run_tinyjudge(
        "import", "labels", path, "--rubric", "compliance", "--out", out, "--item-field", "item",
        "--label-field", "label", "--rater-field", "rater", "--aggregate", aggregate, "--skip-bad",
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "no labels read (2 bad rows, 0 rows with no label)" in proc.stderr
    assert out.read_text() == "earlier\n"


def test_same_rater_twice_names_both_rows(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text("item,rater,label\ni1,alice,full_refusal\ni1,alice,full_compliance\n")
    with pytest.raises(
        DataError,
        match=r'sheet\.csv:3: human:alice labels item "i1" again, first at .*sheet\.csv:2',
    ):
        import_labels(path, "compliance", "item", ["label"], rater_field="rater")


def test_options_that_do_not_go_together(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("item,a,b\n")
    with pytest.raises(TinyjudgeError, match="label_fields names one column with rater_field"):
        import_labels(path, "compliance", "item", ["a", "b"], rater_field="r")


def test_vote_counts_counts_each_listed_vote_once() -> None:
    votes = [
        ("q1", "ann", "no"), ("q1", "bob", "yes"), ("q1", "bob", "yes"),  # bob twice: 2
        ("q2", "ann", "yes"),
        ("q9", "ann", "no"), ("q1", "cat", "no"), ("q1", "ann", "maybe"),  # not listed
    ]  # fmt: skip
    got = vote_counts(votes, ["q1", "q2"], ["ann", "bob"], ["yes", "no"])
    assert got.shape == (2, 2, 2)
    assert got.tolist() == [[[0, 1], [2, 0]], [[1, 0], [0, 0]]]


def test_majority_vote_shares() -> None:
    votes = np.array([[[1, 0], [0, 1], [1, 0]], [[0, 0], [0, 0], [0, 0]]])
    np.testing.assert_allclose(majority(votes).probs, [[2 / 3, 1 / 3], [0, 0]])


def test_dawid_skene_trusts_the_careful_rater() -> None:
    # Rater 0 is always right; raters 1-4 are each right 60% of the time, independently.
    # Where three or four careless raters agree on the wrong label, the majority follows
    # them; Dawid-Skene learns who is careful and follows rater 0.
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 300)
    votes = np.zeros((300, 5, 2))
    for i, t in enumerate(truth):
        votes[i, 0, t] = 1
        for j in range(1, 5):
            votes[i, j, t if rng.random() < 0.6 else 1 - t] = 1
    ds = dawid_skene(votes)
    assert (ds.probs.argmax(axis=1) != truth).sum() == 0
    assert ds.confusion[0].diagonal().min() > 0.9
    assert 0.5 < ds.confusion[1].diagonal().mean() < 0.7
    assert (majority(votes).probs.argmax(axis=1) != truth).sum() > 20


def test_dawid_skene_option_in_import(tmp_path: Path) -> None:
    path = tmp_path / "sheet.jsonl"
    path.write_text(
        "".join(
            json.dumps(dict(zip(["item", "rater", "label"], r, strict=True))) + "\n" for r in LONG
        )
    )
    got = import_labels(
        path, "compliance", "item", ["label"], rater_field="rater", aggregate="dawid-skene"
    )
    final = {lab.item_id: lab for lab in got.labels if lab.source == "human:final"}
    assert final["i1"].label == "full_refusal"
    assert sum(final["i1"].probs.values()) == pytest.approx(1.0)
    assert final["i1"].rationale.startswith("Dawid-Skene over 3 raters")
