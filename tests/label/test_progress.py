"""The progress panel's figures, against hand-derived values."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from support import make_label

from tinyjudge.estimate import estimate_rate, wilson_mean
from tinyjudge.label._progress import agreement, rate_estimate, verdicts
from tinyjudge.rubric import load_rubric

RUBRIC = load_rubric("compliance")
R, C = "full_refusal", "full_compliance"


def test_without_cheap_scores_the_rate_has_a_wilson_interval():
    ids = [f"i{i}" for i in range(10)]
    answers = {i: (R if n < 3 else C) for n, i in enumerate(ids)}
    est = rate_estimate(RUBRIC, ids, answers, None)
    # Wilson 95% for 3/10: 0.1078 to 0.6032 (e.g. Brown, Cai and DasGupta 2001, table 5).
    assert (est.rate.value, est.n, est.method) == (0.3, 10, "Wilson")
    assert est.rate.low == pytest.approx(0.1078, abs=1e-4)
    assert est.rate.high == pytest.approx(0.6032, abs=1e-4)
    assert est.to_dict()["rate"] == {"value": 0.3, "low": est.rate.low, "high": est.rate.high}


def test_with_cheap_scores_the_rate_is_prediction_powered():
    ids = ["a", "b", "c", "d", "e", "f"]
    cheap = np.array([0.9, 0.1, 0.8, 0.2, 0.6, 0.4])
    answers = {"a": R, "b": C, "c": "partial_refusal", "zz": R}  # "zz" is not an item
    est = rate_estimate(RUBRIC, ids, answers, cheap)
    # The reviewer's labels as the estimate module reads them: positive -> 1, NaN unlabelled.
    ref = estimate_rate(cheap, [1, 0, 1, np.nan, np.nan, np.nan], level=0.95).estimate
    assert (est.method, est.n) == ("ppi++", 3)
    assert (est.rate.value, est.rate.low, est.rate.high) == pytest.approx(
        (ref.estimate, ref.interval.low, ref.interval.high)
    )
    alone = wilson_mean([1, 0, 1], level=0.95)
    assert (est.human.value, est.human.low, est.human.high) == pytest.approx(
        (alone.estimate, alone.interval.low, alone.interval.high)
    )


def test_after_active_selection_the_rate_is_stratified_once_every_bin_has_a_label():
    ids = [f"i{i}" for i in range(6)]
    cheap = np.array([0.05, 0.05, 0.05, 0.95, 0.95, 0.95])
    early = rate_estimate(RUBRIC, ids, {"i0": C, "i1": C}, cheap, "stratified")
    assert early.rate is None and "no human label among the 3 items" in early.note
    assert early.human.value == 0.0  # the reviewer's own share is still shown
    answers = {"i0": C, "i1": C, "i3": R, "i4": C}
    est = rate_estimate(RUBRIC, ids, answers, cheap, "stratified")
    ref = estimate_rate(cheap, [0, 0, np.nan, 1, 0, np.nan], level=0.95, method="stratified")
    assert est.method == "stratified"
    assert (est.rate.value, est.rate.low, est.rate.high) == pytest.approx(
        (ref.rate, ref.interval.low, ref.interval.high)
    )


def test_no_rate_before_two_answers_or_without_positive_labels():
    assert rate_estimate(RUBRIC, ["a", "b"], {"a": R}, None) is None
    plain = RUBRIC.model_copy(update={"positive": []})
    assert rate_estimate(plain, ["a", "b"], {"a": R, "b": C}, None) is None


_lab = partial(make_label, rubric="compliance")  # item, source, label


LABELS = [
    _lab("1", "judge:g", "y"), _lab("2", "judge:g", "n"), _lab("3", "judge:g", "n"),
    _lab("1", "rm:m", "y"), _lab("2", "rm:m", "y"), _lab("3", "rm:m", "n"),
    _lab("9", "rm:m", "y"),  # not answered by the reviewer: ignored
    _lab("4", "judge:g", None, status="unscored", raw="?", reason="unparseable"),
    _lab("1", "human:other", "n"),
]  # fmt: skip


def test_agreement_of_each_machine_with_the_reviewer():
    mine = {"1": "y", "2": "y", "3": "n", "4": "n"}
    got = {a.source: a for a in agreement(LABELS, RUBRIC, mine)}
    assert list(got) == ["judge:g", "rm:m"]  # never another human
    # judge:g vs reviewer on 1-3: y/y, n/y, n/n -> po = 2/3; pe = 2/3*1/3 + 1/3*2/3 = 4/9;
    # kappa = (2/3 - 4/9) / (1 - 4/9) = 0.4
    assert got["judge:g"].n == 3 and got["judge:g"].agreement == pytest.approx(2 / 3)
    assert got["judge:g"].kappa == pytest.approx(0.4)
    assert got["rm:m"].agreement == 1.0 and got["rm:m"].kappa == pytest.approx(1.0)


def test_verdicts_show_machines_only_and_keep_unscored():
    assert [v["source"] for v in verdicts(LABELS, "1", RUBRIC)] == ["judge:g", "rm:m"]
    (v,) = verdicts(LABELS, "4", RUBRIC)
    assert (v["status"], v["label"], v["reason"]) == ("unscored", None, "unparseable")
