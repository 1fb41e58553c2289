"""training_set, grouped_split and data_hash on the real XSTest sample."""

from __future__ import annotations

import numpy as np
import pytest
from support import make_item

from tinyjudge.datasets.importers import Imported
from tinyjudge.distill import grouped_split, training_set
from tinyjudge.distill._data import data_hash
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Label


def test_training_set_pairs_items_with_one_source(xs: Imported) -> None:
    ts = training_set(xs.items, xs.labels, "human:final", "compliance")
    assert len(ts.items) == len(ts.y_hard) == ts.y_soft.shape[0] == 500
    assert ts.y_soft.shape[1] == 3
    np.testing.assert_allclose(ts.y_soft.sum(axis=1), 1.0)
    names = ["full_compliance", "full_refusal", "partial_refusal"]
    assert [names[j] for j in ts.y_soft.argmax(axis=1)] == ts.y_hard


def test_unscored_labels_are_counted_not_trained_on(xs: Imported) -> None:
    first = xs.items[0].id
    bad = Label(
        item_id=first,
        rubric="compliance",
        source="judge:x",
        status="unscored",
        raw="I think it's fine",
        reason="unparseable",
    )
    ok = [
        Label(item_id=lab.item_id, rubric="compliance", source="judge:x", label=lab.label)
        for lab in xs.labels
        if lab.source == "human:final" and lab.item_id != first
    ]
    ts = training_set(xs.items, [bad, *ok], "judge:x", "compliance")
    assert ts.n_unscored == 1
    assert first not in {it.id for it in ts.items}
    assert len(ts.items) == 499


def test_teacher_probs_become_soft_targets(xs: Imported) -> None:
    labels = [
        Label(
            item_id=it.id,
            rubric="compliance",
            source="judge:soft",
            label="full_refusal" if i % 2 else "full_compliance",
            probs={"full_refusal": 0.7, "full_compliance": 0.3}
            if i % 2
            else {"full_compliance": 0.9, "partial_refusal": 0.1},
        )
        for i, it in enumerate(xs.items[:10])
    ]
    ts = training_set(xs.items, labels, "judge:soft", "compliance")
    np.testing.assert_allclose(ts.y_soft[0], [0.9, 0.0, 0.1])
    np.testing.assert_allclose(ts.y_soft[1], [0.3, 0.7, 0.0])


def _relabel(xs: Imported, **change: object) -> list[Label]:
    return [lab.model_copy(update=change) for lab in xs.labels if lab.source == "human:final"]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda xs: xs.labels,
            r"no labels with source 'judge:nobody'.*human:final.*; pass one with source$",
        ),
        (
            lambda xs: [
                lab.model_copy(update={"source": "judge:nobody", "label": "full_refusal"})
                for lab in xs.labels
                if lab.source == "human:final"
            ],
            r"single class \['full_refusal'\]",
        ),
        (
            lambda xs: _relabel(xs, source="judge:nobody", rubric="helpfulness"),
            r"written under rubric 'helpfulness', not 'compliance'; pass rubric helpfulness \(",
        ),
        (
            lambda xs: _relabel(xs, source="judge:nobody", label="maybe"),
            r"label 'maybe' .* not offered by rubric 'compliance'",
        ),
        (
            lambda xs: _relabel(xs, source="judge:nobody", item_id="elsewhere:1"),
            r"none of the 1 labels .* names an item",
        ),
    ],
    ids=[
        "no-labels-for-source",
        "single-class",
        "rubric-mismatch",
        "label-not-in-rubric",
        "labels-for-other-items",
    ],
)
def test_training_set_errors(xs: Imported, make, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        training_set(xs.items, make(xs), "judge:nobody", "compliance")


def test_grouped_split_keeps_each_prompt_on_one_side(xs: Imported) -> None:
    train, val = grouped_split(xs.items, "metadata.prompt_id", val_fraction=0.25, seed=1)
    assert len(train) + len(val) == len(xs.items)
    assert not set(train) & set(val)
    prompts = lambda idx: {xs.items[i].metadata["prompt_id"] for i in idx}  # noqa: E731
    assert not prompts(train) & prompts(val)
    assert 0.15 < len(val) / len(xs.items) < 0.35


def test_grouped_split_without_key_groups_by_item(xs: Imported) -> None:
    train, val = grouped_split(xs.items[:100], None, val_fraction=0.2)
    assert len(val) == 20 and len(train) == 80


@pytest.mark.parametrize(
    ("key", "n", "match"),
    [
        ("metadata.nope", 50, r"has no 'metadata.nope'; group_by needs a key every item has"),
        ("metadata.answering_model", 1, r"only 1 distinct"),
    ],
    ids=["missing-key", "one-group"],
)
def test_grouped_split_errors(xs: Imported, key: str, n: int, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        grouped_split(xs.items[:n], key)


def test_data_hash_changes_with_items_and_targets(xs: Imported) -> None:
    y = np.eye(3, dtype=np.float32)[[0, 1, 0]]
    h = data_hash(xs.items[:3], y)
    assert h == data_hash(xs.items[:3], y.copy())
    assert h != data_hash(xs.items[1:4], y)
    assert h != data_hash(xs.items[:3], np.eye(3, dtype=np.float32)[[1, 1, 0]])


@pytest.mark.parametrize(
    ("metadata", "key"),
    [
        ([{"question_id": 1, "dialogue_id": "d1"}, {"question_id": 2, "dialogue_id": "d2"}],
         "metadata.question_id"),
        ([{"prompt_id": "p", "dialogue_id": "d1"}, {"dialogue_id": "d2"}], "metadata.dialogue_id"),
        ([{"task_id": True}, {"task_id": False}], None),
        ([{"answering_model": "m"}, {}], None),
    ],
    ids=["coarsest-first", "every-item-has-it", "flags-are-not-keys", "none"],
)  # fmt: skip
def test_find_group_key_takes_the_first_shared_key_every_item_has(
    metadata: list[dict], key: str | None
) -> None:
    from tinyjudge.distill import find_group_key

    items = [make_item(item_id=f"i{n}", metadata=m) for n, m in enumerate(metadata)]
    assert find_group_key(items) == key
