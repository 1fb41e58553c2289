"""Which item comes next: file order, a fixed shuffle per reviewer, or active selection."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from support import make_label

from tinyjudge.errors import TinyjudgeError
from tinyjudge.label.select import Selector, cheap_scores, label_value
from tinyjudge.rubric import load_rubric

RUBRIC = load_rubric("compliance")
IDS = [f"i{i}" for i in range(40)]
R = "full_refusal"


def _drain(sel: Selector) -> list[str]:
    done: list[str] = []
    while (nxt := sel.next_item(set(done))) is not None:
        done.append(nxt[0])
    return done


def test_sequential_follows_the_file_and_skips_what_is_done():
    sel = Selector(IDS, "sequential")
    assert sel.next_item({"i0", "i2"}) == ("i1", "sequential")
    assert _drain(sel) == IDS


def test_random_is_one_fixed_shuffle_so_reviewers_overlap():
    sel = Selector(IDS, "random")
    order = _drain(sel)
    assert sorted(order) == sorted(IDS) and order != IDS
    # A restart, or a second reviewer, gets the same order: their labels overlap.
    assert _drain(Selector(IDS, "random")) == order
    # A reviewer who skipped item 2 goes on with the rest of the same order.
    assert sel.next_item({*order[:2], order[2]}) == (order[3], "random")


def test_active_covers_every_item_once_and_never_repeats():
    cheap = np.linspace(0.0, 1.0, len(IDS))
    sel = Selector(IDS, "active", cheap)
    order = _drain(sel)
    assert sorted(order) == sorted(IDS)
    first = sel.next_item(set())
    assert first is not None and first[1] == "active"
    # The same labelled set offers the same item: a second reviewer follows the first.
    assert Selector(IDS, "active", cheap).next_item(set()) == first
    assert _drain(Selector(IDS, "active", cheap)) == order


def test_active_labels_every_cheap_score_bin_first():
    # select_for_labelling's design: every non-empty bin of the cheap score gets two labels
    # before Neyman allocation starts, so the stratified estimate exists early.
    cheap = np.array([0.05] * 20 + [0.5] * 10 + [0.95] * 10)
    sel = Selector(IDS, "active", cheap)
    order = _drain(sel)
    bins = [int(cheap[IDS.index(i)] * 5) for i in order[:6]]
    assert sorted(bins) == [0, 0, 2, 2, 4, 4]


def test_active_without_cheap_scores_is_refused():
    with pytest.raises(
        TinyjudgeError, match=r"^active selection needs a cheap score per item.*use select random$"
    ):
        Selector(IDS, "active")
    with pytest.raises(TinyjudgeError, match="^select 'smart' is not one of"):
        Selector(IDS, "smart")  # type: ignore[arg-type]


_lab = partial(make_label, rubric="compliance")  # item, source, then label=, probs=, score=


@pytest.mark.parametrize(
    ("label", "value"),
    [
        (_lab("i0", "rm:x", score=0.3), 0.3),
        (_lab("i0", "rm:x", label=R, probs={R: 0.7, "full_compliance": 0.3}), 0.7),
        (_lab("i0", "rm:x", label="partial_refusal"), 1.0),
        (_lab("i0", "rm:x", label="full_compliance"), 0.0),
        (_lab("i0", "judge:x", status="unscored", raw="??", reason="unparseable"), None),
    ],
    ids=["score", "positive-mass", "positive-label", "negative-label", "unscored"],
)  # fmt: skip
def test_label_value(label, value):
    assert label_value(label, RUBRIC) == value


def test_cheap_scores_take_the_first_scored_machine_source():
    labels = [
        _lab("i0", "human:final", label="full_refusal"),
        _lab("i0", "classifier:kw", label="full_refusal", probs={"full_refusal": 1.0}),
        _lab("i0", "judge:big", status="unscored", raw="", reason="refused"),
        _lab("i1", "rm:small", score=0.25),
        _lab("i1", "judge:big", label="full_compliance", probs={"full_compliance": 1.0}),
    ]
    source, scores = cheap_scores(labels, RUBRIC, ["i0", "i1", "i2"])
    assert source == "rm:small"  # judge:big's first label is unscored, so rm:small came first
    np.testing.assert_allclose(scores, [0.5, 0.25, 0.5])  # missing: 0.5, most uncertain
    source, scores = cheap_scores(labels, RUBRIC, ["i0", "i1", "i2"], "judge:big")
    np.testing.assert_allclose(scores, [0.5, 0.0, 0.5])
    assert cheap_scores(labels[:1], RUBRIC, ["i0"])[0] is None
    with pytest.raises(TinyjudgeError, match="^cheap 'judge:none' has no scored label"):
        cheap_scores(labels, RUBRIC, ["i0"], "judge:none")


def test_teach_picks_where_the_model_doubts_the_judge_most():
    from tinyjudge.label.select import teach_values

    C, P = "full_compliance", "partial_refusal"
    labels = [
        _lab("i0", "judge:big", label=C),
        _lab("i0", "rm:small", label=C, probs={C: 0.9, R: 0.05, P: 0.05}),  # agrees: 0.1
        _lab("i1", "judge:big", label=C),
        _lab("i1", "rm:small", label=P, probs={C: 0.2, R: 0.1, P: 0.7}),  # doubts: 0.8
        _lab("i2", "rm:small", label=R, probs={C: 0.3, R: 0.4, P: 0.3}),  # no judge: 1 - 0.4
        _lab("i3", "human:ann", label=R),  # no model probs: 0
    ]
    model, judge, values = teach_values(labels, RUBRIC, ["i0", "i1", "i2", "i3"])
    assert (model, judge) == ("rm:small", "judge:big")
    np.testing.assert_allclose(values, [0.1, 0.8, 0.6, 0.0])
    sel = Selector(["i0", "i1", "i2", "i3"], "teach", teach=values)
    assert _drain(sel) == ["i1", "i2", "i0", "i3"]
    assert sel.next_item({"i1"}) == ("i2", "teach")


def test_teach_without_a_reward_model_is_refused():
    from tinyjudge.label.select import teach_values

    labels = [_lab("i0", "judge:big", label="full_compliance")]
    with pytest.raises(TinyjudgeError, match="^select teach needs a reward model's prob"):
        teach_values(labels, RUBRIC, ["i0"])
    with pytest.raises(TinyjudgeError, match="^select teach needs a reward model's prob"):
        Selector(IDS, "teach")


def test_teach_asks_where_people_overturned_the_judge_before():
    from tinyjudge.label.select import teach_values

    C, P = "full_compliance", "partial_refusal"
    rm = {"i0": {R: 0.6, C: 0.2, P: 0.2}, "i1": {C: 0.6, R: 0.2, P: 0.2}}  # the same doubt
    labels = [_lab("i0", "judge:big", label=R), _lab("i1", "judge:big", label=C)]
    labels += [_lab(i, "rm:small", label=max(p, key=p.__getitem__), probs=p) for i, p in rm.items()]
    values = teach_values(labels, RUBRIC, ["i0", "i1"])[2]
    np.testing.assert_allclose(values, [0.4, 0.4])  # nobody has labelled: 1 - p(judge's label)
    # people said partial refusal where the judge said compliance, four times; agreed on refusals
    for k in range(6):
        said = C if k < 4 else R
        labels += [
            _lab(f"h{k}", "judge:big", label=said),
            _lab(f"h{k}", "human:ann", label=P if k < 4 else R),
        ]
    values = teach_values(labels, RUBRIC, ["i0", "i1"])[2]
    # P(h | x, judge) ~ p(h | x) C[h, judge]: C[P, C] = 4.5/5.5, C[R, C] = 0.5/3.5, C[C, C] = 1/3
    post_c = 0.2 / (0.2 + 0.2 * 0.5 / 3.5 + 0.2 * 4.5 / 5.5)
    post_r = 0.6 * 2.5 / 3.5 / (0.2 / 3 + 0.6 * 2.5 / 3.5 + 0.2 * 0.5 / 5.5)
    np.testing.assert_allclose(values, [1 - post_r, 1 - post_c])
    assert _drain(Selector(["i0", "i1"], "teach", teach=values)) == ["i1", "i0"]


def test_teach_takes_the_doubt_alone_when_the_model_read_the_judge():
    from tinyjudge.label.select import teach_values

    C, P = "full_compliance", "partial_refusal"
    rm = {"i0": {R: 0.6, C: 0.2, P: 0.2}, "i1": {C: 0.6, R: 0.2, P: 0.2}}
    labels = [_lab("i0", "judge:big", label=R), _lab("i1", "judge:big", label=C)]
    labels += [_lab(i, "rm:small", label=max(p, key=p.__getitem__), probs=p) for i, p in rm.items()]
    for k in range(6):  # people overturn the judge's compliances, as above
        said = C if k < 4 else R
        labels += [
            _lab(f"h{k}", "judge:big", label=said),
            _lab(f"h{k}", "human:ann", label=P if k < 4 else R),
        ]
    assert not np.allclose(teach_values(labels, RUBRIC, ["i0", "i1"])[2], [0.4, 0.4])
    # a stacked head already read the judge: its doubt alone, people's overlap not added
    values = teach_values(labels, RUBRIC, ["i0", "i1"], reads_judge=True)[2]
    np.testing.assert_allclose(values, [0.4, 0.4])
