"""A rater's row against ``human:final`` reads the final label of the other raters."""

from __future__ import annotations

import pytest
from support import XSTEST_SAMPLE, make_label

from tinyjudge.audit import AuditReport, PairRow, audit
from tinyjudge.audit._consensus import final_without
from tinyjudge.audit._kappa import cohen_kappa
from tinyjudge.datasets.importers import run_import
from tinyjudge.records import Label, index_labels, join_sources

#            i1   i2   i3   i4
VOTES = {
    "human:a": ["y", "y", "n", "n"],
    "human:b": ["y", "n", "n", "y"],
    "human:c": ["y", "n", "y", "y"],
}
FINAL = ["y", "n", "n", "y"]  # the majority of all three
JUDGE = ["y", "y", "y", "y"]


def _labels() -> list[Label]:
    out = []
    for source, values in [*VOTES.items(), ("human:final", FINAL), ("judge:j", JUDGE)]:
        out += [make_label(f"i{k + 1}", source, v) for k, v in enumerate(values)]
    return out


def _rows(report: AuditReport) -> dict[tuple[str, str], PairRow]:
    return {(r.a, r.b): r for r in report.pairs}


def test_final_without_a_rater_is_the_others_majority_and_a_tie_is_unscored() -> None:
    got = final_without(index_labels(_labels()), "human:a", ["n", "y"])
    assert {i: lab.label for i, lab in got.items()} == {"i1": "y", "i2": "n", "i3": None, "i4": "y"}
    assert got["i3"].status == "unscored" and got["i3"].reason == "tie: n, y"
    assert "human:a left out" in (got["i1"].rationale or "")


def test_each_rater_row_leaves_the_rater_out_and_other_sources_keep_the_final() -> None:
    report = audit(_labels(), reference="human:final", order=None, n_boot=20)
    rows = _rows(report)
    a = rows[("human:final", "human:a")]
    # with its own vote in the final label, human:a would agree on 2 of 4 (i1, i3)
    assert a.n == 3 and a.unscored == 1 and a.accuracy.value == pytest.approx(1 / 3)
    assert a.reference_without == "human:a" and a.reference_of == "human:b, human:c"
    b = rows[("human:final", "human:b")]  # A and C tie on i2, i3, i4
    assert (b.n, b.unscored, b.accuracy.value) == (1, 3, 1.0)
    judge = rows[("human:final", "judge:j")]
    assert judge.n == 4 and judge.accuracy.value == pytest.approx(0.5)
    assert judge.reference_without is None and "reference_without" not in judge.to_dict()


def test_with_two_raters_the_row_is_rater_against_rater_on_xstest() -> None:
    data = run_import("xstest", XSTEST_SAMPLE)
    sources = {lab.source for lab in data.labels}
    raters = sorted(s for s in sources if s.startswith("human:") and s != "human:final")
    assert raters == ["human:annotator_1", "human:annotator_2"]
    report = audit(data.labels, data.items, reference="human:final", n_boot=20)
    rows = _rows(report)
    table = index_labels(data.labels)
    for rater, other in (raters, raters[::-1]):
        row = rows[("human:final", rater)]
        pairs = join_sources(table, other, rater).pairs
        expected = cohen_kappa([x.label for x, _ in pairs], [y.label for _, y in pairs])
        assert row.kappa.value == pytest.approx(expected) and row.n == len(pairs)
        own = join_sources(table, "human:final", rater).pairs
        with_own_vote = cohen_kappa([x.label for x, _ in own], [y.label for _, y in own])
        assert row.kappa.value < with_own_vote  # 0.93 against 0.99 on the sample
