"""Step localisation metrics on hand-checked cases and on the real Who&When labels."""

from __future__ import annotations

import math

import pytest
from support import is_slice, make_label

from tinyjudge.audit.steps import (
    agent_accuracy,
    compare_step_sources,
    same_agent,
    step_accuracy,
    step_agreement,
    step_table,
)
from tinyjudge.datasets.importers.who_and_when import import_who_and_when
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Label

H, J = "human:who_and_when", "judge:test"


def _lab(item: str, source: str, step: int | None, agent: str | None, **kw) -> Label:
    return make_label(item, source, agent, rubric="failure_step", step=step, **kw)


# Hand-checked: i1 exact; i2 one step off (agent in other spelling); i3 three off;
# i4 five off with the wrong agent; i5 the judge is unscored; i6 only people; i7 only the judge.
CASES = [
    _lab("i1", H, 3, "Planner"), _lab("i1", J, 3, "Planner"),
    _lab("i2", H, 5, "Web_Surfer"), _lab("i2", J, 6, "web surfer"),
    _lab("i3", H, 0, "Coder"), _lab("i3", J, 3, "Coder"),
    _lab("i4", H, 7, "Coder"), _lab("i4", J, 2, "Planner"),
    _lab("i5", H, 4, "Planner"),
    _lab("i5", J, None, None, status="unscored", raw="step 99", reason="i5: step 99 outside"),
    _lab("i6", H, 2, "Coder"),
    _lab("i7", J, 1, "Coder"),
]  # fmt: skip


def test_step_agreement_on_hand_checked_cases() -> None:
    r = step_agreement(CASES, J, H, n_boot=200)
    assert r.n == 4
    assert r.exact.estimate == pytest.approx(1 / 4)
    assert r.within_1.estimate == pytest.approx(2 / 4)
    assert r.within_3.estimate == pytest.approx(3 / 4)
    assert r.agent.estimate == pytest.approx(3 / 4)
    assert (r.n_unscored, r.only_reference, r.only_source) == (1, 1, 1)
    for ci in (r.exact, r.within_1, r.within_3, r.agent):
        assert 0.0 <= ci.low <= ci.estimate <= ci.high <= 1.0
        assert ci.n_clusters == 4
    d = r.as_dict()
    assert d["exact"]["value"] == pytest.approx(0.25) and set(d["exact"]) == {
        "value",
        "low",
        "high",
    }


@pytest.mark.parametrize(
    ("true", "pred", "tol", "expected"),
    [
        ([3, 5, 0, 7], [3, 6, 3, 2], 0, 0.25),
        ([3, 5, 0, 7], [3, 6, 3, 2], 1, 0.5),
        ([3, 5, 0, 7], [3, 6, 3, 2], 3, 0.75),
        ([3, 5, 0, 7], [3, 6, 3, 2], 5, 1.0),
        ([2], [1], 0, 0.0),
    ],
    ids=["exact", "within-1", "within-3", "within-5", "one-miss"],
)
def test_step_accuracy(true: list[int], pred: list[int], tol: int, expected: float) -> None:
    assert step_accuracy(true, pred, tol) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Verification_Expert", "verification expert", True),
        ("Web-Surfer", "web_surfer", True),
        ("Coder", "Planner", False),
        ("Coder", None, False),
        ("Orchestrator (thought)", "orchestrator  (thought)", True),
    ],
    ids=["underscore-space-case", "hyphen", "different", "missing", "spaces-inside"],
)
def test_same_agent(a: str, b: str | None, same: bool) -> None:
    assert same_agent(a, b) is same


def test_metrics_reject_bad_input() -> None:
    with pytest.raises(TinyjudgeError, match="equally long, got 2 and 1"):
        step_accuracy([1, 2], [1])
    with pytest.raises(TinyjudgeError, match="tolerance must be >= 0, got -1"):
        step_accuracy([1], [1], tolerance=-1)
    with pytest.raises(TinyjudgeError, match="agent arrays must be equally long"):
        agent_accuracy(["a"], [])
    assert math.isnan(step_accuracy([], []))
    with pytest.raises(TinyjudgeError, match=r"no labels from source 'judge:nobody'.*human"):
        step_agreement(CASES, "judge:nobody", H)


def test_a_source_with_nothing_comparable_gives_nan_not_zero() -> None:
    labels = [
        _lab("i1", H, 3, "Planner"),
        _lab("i1", J, None, None, status="unscored", raw="?", reason="i1: unparseable"),
    ]
    r = step_agreement(labels, J, H, n_boot=50)
    assert r.n == 0 and r.n_unscored == 1
    assert math.isnan(r.exact.estimate) and r.as_dict()["exact"]["value"] is None
    assert "n/a" in step_table([r])


def test_compare_sources_on_real_who_and_when(data_dir) -> None:
    root = data_dir("who_and_when")
    runs = 8 if is_slice(root) else 126  # the slice: 8 runs (its SOURCE.md)
    people = import_who_and_when(root).labels
    items = {lab.item_id: lab for lab in people}
    # Two hand-made sources with known answers: one step late, and the run's first step.
    late = [lab.model_copy(update={"source": "rule:one_late", "step": lab.step + 1})
            for lab in people]  # fmt: skip
    first = [lab.model_copy(update={"source": "rule:step0", "step": 0}) for lab in people]
    rows = compare_step_sources(people + late + first, n_boot=300)
    assert [r.source for r in rows] == ["rule:one_late", "rule:step0"]
    one_late, step0 = rows
    assert one_late.n == len(items) == runs
    assert one_late.exact.estimate == 0.0
    assert one_late.within_1.estimate == 1.0 == one_late.agent.estimate
    expected0 = sum(lab.step == 0 for lab in people) / runs
    assert step0.exact.estimate == pytest.approx(expected0)
    assert step0.within_3.estimate == pytest.approx(sum(lab.step <= 3 for lab in people) / runs)
    assert step0.exact.low < expected0 < step0.exact.high
    table = step_table(rows)
    assert table.count("\n| rule:") == 2 and "human:who_and_when" in table
