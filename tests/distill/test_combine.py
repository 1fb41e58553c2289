"""Judge and people combined by grouped cross-validation (XSTest sample, real labels)."""

from __future__ import annotations

import numpy as np
import pytest

from tinyjudge.distill import LinearRM
from tinyjudge.distill._combine import CANDIDATES, _stacked, combine_heads, merge_stacked
from tinyjudge.distill._linear import SoftLogistic, TextFeatures
from tinyjudge.distill._people import fit_with_people, people_targets
from tinyjudge.errors import UsageError

NAMES = ["full_compliance", "full_refusal", "partial_refusal"]


@pytest.fixture(scope="module")
def small(xs):
    """150 items of 30 prompts; GPT-4 on all, people's labels on the first 12 prompts."""
    prompts = sorted({it.get("metadata.prompt_id") for it in xs.items})[:30]
    items = [it for it in xs.items if it.get("metadata.prompt_id") in prompts]
    people = {it.id for it in items if it.get("metadata.prompt_id") in prompts[:12]}
    ids = {it.id for it in items}
    labels = [
        lab
        for lab in xs.labels
        if lab.item_id in ids
        and (lab.source == "judge:gpt-4" or (lab.source == "human:final" and lab.item_id in people))
    ]
    return items, labels


def _inputs(items, labels):
    pt = people_targets(items, labels, "judge:gpt-4", "human:final", "compliance", "auto")
    X = TextFeatures().fit(pt.items).transform(pt.items)
    groups = [it.get("metadata.prompt_id") for it in pt.items]
    return pt, X, groups


def test_the_stacked_head_folds_into_one_head_of_the_tier(small) -> None:
    pt, X, _ = _inputs(*small)
    has_judge = pt.judge.sum(axis=1) > 0
    judge = SoftLogistic(C=10.0).fit(X[has_judge], pt.judge[has_judge])
    L = np.asarray(X @ judge.coef_.T) + judge.intercept_
    Z = L - L.mean(axis=1, keepdims=True)
    rows = np.flatnonzero(pt.is_human)
    stacked = SoftLogistic(C=10.0).fit(_stacked(X[rows], Z[rows]), pt.Y[rows])
    merged = merge_stacked(stacked, judge, X.shape[1])
    # the one head on X alone scores every item as the stacked head on [X, judge logits]
    np.testing.assert_allclose(
        merged.predict_proba(X), stacked.predict_proba(_stacked(X, Z)), atol=1e-5
    )


@pytest.mark.slow
def test_the_choice_is_the_best_cross_validated_candidate_people_among_them(small) -> None:
    pt, X, groups = _inputs(*small)
    has_judge = pt.judge.sum(axis=1) > 0
    judge = SoftLogistic(C=10.0).fit(X[has_judge], pt.judge[has_judge])
    head, combo = combine_heads(
        X, pt.Y, pt.is_human, pt.judge, groups, lambda: SoftLogistic(C=10.0), judge
    )
    assert set(combo.table) == set(CANDIDATES) and "people" in combo.table
    assert combo.folds == 5
    best = max(combo.table.values(), key=lambda r: (r["kappa"], -r["log_loss"]))
    assert combo.table[combo.chosen] == best
    assert 0.05 < combo.temperature < 20
    P = head.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    card = combo.card()
    assert card["chosen"] == combo.chosen and set(card["cv"]) == set(CANDIDATES)


@pytest.mark.slow
def test_people_of_one_class_leave_the_judge(small) -> None:
    items, labels = small
    # people agree on one class only: no head can learn from them, the judge's is kept
    labels = [
        lab.model_copy(update={"label": "full_refusal"}) if lab.source == "human:final" else lab
        for lab in labels
    ]
    pt, X, groups = _inputs(items, labels)
    has_judge = pt.judge.sum(axis=1) > 0
    judge = SoftLogistic(C=10.0).fit(X[has_judge], pt.judge[has_judge])
    _, combo = combine_heads(
        X, pt.Y, pt.is_human, pt.judge, groups, lambda: SoftLogistic(C=10.0), judge
    )
    assert combo.chosen == "judge"


class _NoHead(LinearRM):
    """The linear tier with its capability withdrawn: what a tier without a linear head gets."""

    linear_head = False


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "method"), [(LinearRM, "auto"), (_NoHead, "weighted")], ids=["linear", "no-head"]
)
def test_auto_combines_on_a_tier_that_declares_a_linear_head(small, model, method) -> None:
    items, labels = small
    pt = people_targets(items, labels, "judge:gpt-4", "human:final", "compliance", "auto")
    fitted = fit_with_people(
        model("compliance"), pt, groups=[it.get("metadata.prompt_id") for it in pt.items]
    )
    assert fitted.card_["human_method"] == method
    assert ("combination" in fitted.card_) == (method == "auto")


def test_groups_must_be_one_per_item(small) -> None:
    items, labels = small
    pt = people_targets(items, labels, "judge:gpt-4", "human:final", "compliance", "auto")
    with pytest.raises(UsageError, match=r"groups has 3 keys for 150 items; give one per item"):
        fit_with_people(LinearRM("compliance"), pt, groups=["a", "b", "c"])


def test_the_card_shows_the_cross_validation_table() -> None:
    from tinyjudge.distill._card import _people_lines

    cv = {name: {"kappa": 0.5, "log_loss": 0.7} for name in CANDIDATES}
    card = {
        "human_source": "human:final", "human_method": "auto", "group_by": "metadata.prompt_id",
        "combination": {"chosen": "stack", "folds": 5, "temperature": 1.2, "cv": cv},
    }  # fmt: skip
    text = "\n".join(_people_lines(card))
    assert "chosen: `stack`" in text and "grouped by `metadata.prompt_id`" in text
    assert "| people | 0.500 | 0.700 |" in text
