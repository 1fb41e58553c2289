"""Distilling from a judge's labels and people's together (XSTest sample, real labels)."""

from __future__ import annotations

import numpy as np
import pytest

from tinyjudge.distill import LinearRM, distill
from tinyjudge.distill._people import (
    PEOPLE_METHODS,
    fit_with_people,
    judge_confusion,
    people_targets,
)
from tinyjudge.errors import TinyjudgeError, UsageError

NAMES = ["full_compliance", "full_refusal", "partial_refusal"]


def _with_people_on(xs, n_prompts: int):
    """GPT-4's labels on every item; people's (final and both raters) on n_prompts prompts."""
    prompts = sorted({it.get("metadata.prompt_id") for it in xs.items})[:n_prompts]
    keep = {it.id for it in xs.items if it.get("metadata.prompt_id") in prompts}
    return [
        lab
        for lab in xs.labels
        if lab.source == "judge:gpt-4" or (lab.source.startswith("human:") and lab.item_id in keep)
    ], keep


@pytest.mark.parametrize("method", PEOPLE_METHODS, ids=list(PEOPLE_METHODS))
def test_people_targets_by_method(xs, method: str) -> None:
    labels, keep = _with_people_on(xs, 20)
    pt = people_targets(
        xs.items, labels, "judge:gpt-4", "human:final", "compliance", method,
        raters=("human:annotator_1", "human:annotator_2"),
    )  # fmt: skip
    assert pt.Y.shape == (len(pt.items), 3)
    np.testing.assert_allclose(pt.Y.sum(axis=1), 1.0)
    assert pt.n_human == len(keep) == int(pt.is_human.sum())
    human = {lab.item_id: lab.label for lab in labels if lab.source == "human:final"}
    rows = np.flatnonzero(pt.is_human)
    if method != "dawid-skene":  # people's labels are the targets where they exist
        assert [NAMES[j] for j in pt.Y[rows].argmax(axis=1)] == [
            human[pt.items[i].id] for i in rows
        ]
        assert np.all(pt.Y[rows].max(axis=1) == 1.0)
    assert len(pt.items) == len(xs.items) and pt.n_judge == 500
    assert pt.method == ("people" if method == "auto" else method)  # 100 labels: people
    if pt.method == "people":  # every item's text, people's labels only
        np.testing.assert_array_equal(pt.weight, pt.is_human.astype(float))
    if method == "weighted":
        n_judge_only = len(pt.items) - pt.n_human
        np.testing.assert_allclose(pt.weight[pt.is_human], n_judge_only / pt.n_human)
        np.testing.assert_allclose(pt.weight[~pt.is_human], 1.0)
    if method in ("posterior", "forward"):
        # a judge-only row's target is P(person | judge's label): the same for equal labels
        judge_only = np.flatnonzero(~pt.is_human)
        said = pt.judge[judge_only].argmax(axis=1)
        for j in np.unique(said):
            rows_j = pt.Y[judge_only[said == j]]
            np.testing.assert_allclose(rows_j, np.broadcast_to(rows_j[0], rows_j.shape))
            joint = pt.confusion[:, j] * (pt.Y[pt.is_human].sum(axis=0) + 0.5)
            np.testing.assert_allclose(rows_j[0], joint / joint.sum())


def test_judge_confusion_counts_with_smoothing() -> None:
    judge = np.eye(3)[[0, 0, 1, 0]]
    person = np.array([0, 2, 1, 2])
    C = judge_confusion(judge, person, smoothing=0.5)
    np.testing.assert_allclose(C[2], np.array([2.5, 0.5, 0.5]) / 3.5)
    np.testing.assert_allclose(C.sum(axis=1), 1.0)


def test_forward_runs_em_rounds_and_the_card_says_how(xs) -> None:
    labels, keep = _with_people_on(xs, 20)
    pt = people_targets(xs.items, labels, "judge:gpt-4", "human:final", "compliance", "forward")
    model = fit_with_people(LinearRM("compliance"), pt, rounds=1)
    assert model.card_["human_method"] == "forward"
    assert model.card_["n_human_labels"] == len(keep)
    assert model.card_["n_judge_labels"] == 500
    P = model.predict_proba(xs.items[:5])
    assert P.shape == (5, 3) and (P > 0).all()


@pytest.mark.slow  # the default now cross-validates four heads: about 100 s on 2 loaded cores
def test_distill_with_people_validates_against_people(xs, tmp_path) -> None:
    labels, _ = _with_people_on(xs, 60)
    res = distill(
        xs.items, labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id",
        human="human:final",
    )  # fmt: skip
    v = res.validation
    assert {"cohen_kappa_vs_people", "cohen_kappa_vs_judge", "n_val_people", "n_val_judge"} <= set(
        v
    )
    assert 0 < v["n_val_people"] < v["n_val_judge"]
    assert v["cohen_kappa_vs_people"] > 0.3
    res.model.save(tmp_path / "m")
    card = (tmp_path / "m" / "README.md").read_text()
    assert "people (label source): `human:final`" in card and "method `auto`" in card
    assert "| candidate | kappa with people (CV) | log loss (CV) |" in card
    assert "agreement with the teacher and with people" in card
    # people's labels on the validation prompts are never in the training targets
    assert res.model.card_["n_human_labels"] + v["n_val_people"] == 300


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "magic"}, "unknown human_method 'magic'"),
        ({"human": "human:nobody"}, r"no labels with source 'human:nobody'"),
        ({"weight": -3.0}, r"human_weight must be a positive number .*, got -3\.0"),
        ({"weight": 0.0}, r"human_weight must be a positive number"),
        ({"weight": float("nan")}, r"human_weight must be a positive number .*, got nan"),
    ],
    ids=["method", "source", "negative-weight", "zero-weight", "nan-weight"],
)
def test_people_targets_errors(xs, kwargs, match: str) -> None:
    args = {"method": "weighted", "human": "human:final", "weight": None} | kwargs
    with pytest.raises(TinyjudgeError, match=match):
        people_targets(xs.items, xs.labels, "judge:gpt-4", args["human"], "compliance",
                       args["method"], args["weight"])  # fmt: skip


@pytest.mark.parametrize(
    ("method", "weight", "param"),
    [("magic", None, "human_method"), ("weighted", -3.0, "human_weight")],
    ids=["method", "weight"],
)
def test_people_targets_usage_errors_name_the_parameter(xs, method, weight, param) -> None:
    with pytest.raises(UsageError) as caught:
        people_targets(xs.items, xs.labels, "judge:gpt-4", "human:final", "compliance",
                       method, weight)  # fmt: skip
    assert caught.value.param == param


def test_no_item_labelled_by_people_is_one_line(xs) -> None:
    labels, _ = _with_people_on(xs, 5)
    items = [it for it in xs.items if it.id not in {lab.item_id for lab in labels
             if lab.source == "human:final"}]  # fmt: skip
    with pytest.raises(TinyjudgeError, match="none of the items has a 'human:final' label"):
        people_targets(items, labels, "judge:gpt-4", "human:final", "compliance")


def test_sample_weight_errors(xs) -> None:
    with pytest.raises(TinyjudgeError, match="sample_weight must hold 3 finite, non-negative"):
        LinearRM("compliance").fit(xs.items[:3], ["full_compliance"] * 3, [1.0, -1.0, 1.0])


@pytest.mark.parametrize(("n_prompts", "resolved"), [(5, "weighted"), (20, "people")],
                         ids=["25-labels", "100-labels"])  # fmt: skip
def test_auto_uses_people_from_100_labels_else_weighted(xs, n_prompts: int, resolved: str) -> None:
    labels, keep = _with_people_on(xs, n_prompts)
    pt = people_targets(xs.items, labels, "judge:gpt-4", "human:final", "compliance")
    assert pt.method == resolved and pt.card()["human_method"] == resolved


@pytest.mark.parametrize("method", sorted(set(PEOPLE_METHODS) - {"auto"}))
def test_the_model_card_describes_each_method_from_the_one_table(method: str) -> None:
    from tinyjudge.distill._card import _people_lines

    card = {"human_source": "human:final", "human_method": method, "human_weight": 2.5}
    (line,) = _people_lines(card)
    assert line.endswith(f"method `{method}`: {PEOPLE_METHODS[method].card.format(weight=2.5)}")


def test_the_cli_lists_every_people_method() -> None:
    from support import run_tinyjudge

    done = run_tinyjudge("distill", "--help", env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert all(f"{name} ({how.brief})" in text for name, how in PEOPLE_METHODS.items())
