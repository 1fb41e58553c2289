"""Pairing two sources' labels by item: scored pairs, unscored counts, one-sided items."""

from __future__ import annotations

import pytest
from support import is_slice, make_label

from tinyjudge.audit.agreement import index_labels, pair_labels, ratings_matrix
from tinyjudge.datasets.importers import run_import
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Label

_lab = make_label  # item, source, label (None: unscored), rubric="r", other fields


def _table() -> list[Label]:
    return [
        _lab("1", "human:x", "yes"), _lab("1", "judge:m", "yes"),
        _lab("2", "human:x", "no"), _lab("2", "judge:m", None),      # judge unscored
        _lab("3", "human:x", None), _lab("3", "judge:m", None),      # both unscored
        _lab("4", "human:x", "no"), _lab("4", "judge:m", "yes"),
        _lab("5", "human:x", "yes"),                                 # judge never saw it
        _lab("6", "judge:m", "no"), _lab("7", "judge:m", "no"),      # human never saw them
    ]  # fmt: skip


def test_pair_labels_counts_unscored_separately() -> None:
    p = pair_labels(_table(), "human:x", "judge:m")
    assert p.item_ids == ["1", "4"]
    assert (p.a, p.b) == (["yes", "no"], ["yes", "yes"])
    assert p.n == 2
    assert (p.join.unscored_a, p.join.unscored_b, p.join.n_unscored) == (1, 2, 2)
    assert (p.join.only_a, p.join.only_b) == (1, 2)


def test_pair_labels_by_score_treats_scoreless_labels_as_unscored() -> None:
    labels = [
        _lab("1", "rm:a", "yes", score=0.9), _lab("1", "rm:b", "yes", score=0.7),
        _lab("2", "rm:a", "no", score=0.2), _lab("2", "rm:b", "no"),
    ]  # fmt: skip
    p = pair_labels(labels, "rm:a", "rm:b", value="score")
    assert (p.a, p.b, p.join.unscored_b) == ([0.9], [0.7], 1)


def test_later_label_wins_and_rubric_filter() -> None:
    labels = [_lab("1", "h:x", "no"), _lab("1", "h:x", "yes"), _lab("1", "j:m", "yes", rubric="s")]
    assert index_labels(labels, rubric="r")["h:x"]["1"].label == "yes"
    with pytest.raises(TinyjudgeError, match=r"several rubrics \['r', 's'\]"):
        index_labels([*labels, _lab("2", "h:x", "no", rubric="s")])


def test_pair_labels_unknown_source_lists_present_ones() -> None:
    with pytest.raises(TinyjudgeError, match=r"no labels from source 'human:y'.*'human:x'"):
        pair_labels(_table(), "human:y", "judge:m")
    with pytest.raises(TinyjudgeError, match=r"no labels from source 'z'"):
        ratings_matrix(_table(), ["human:x", "z"])


def test_ratings_matrix_marks_unscored_and_absent_as_missing() -> None:
    ids, rows = ratings_matrix(_table(), ["human:x", "judge:m"])
    assert ids == ["1", "2", "3", "4", "5", "6", "7"]
    assert rows[0] == ["yes", "no", None, "no", "yes", None, None]
    assert rows[1] == ["yes", None, None, "yes", None, "no", "no"]


def test_xstest_gpt4_free_text_answers_are_counted_not_compared(data_dir) -> None:
    root = data_dir("xstest")
    labels = run_import("xstest", root).labels
    p = pair_labels(labels, "human:final", "judge:gpt-4")
    unscored = sum(1 for lab in labels if lab.source == "judge:gpt-4" and lab.status != "ok")
    assert unscored > 0
    assert p.join.unscored_b == unscored and p.join.unscored_a == 0
    assert p.n + p.join.n_unscored == (500 if is_slice(root) else 1500)
