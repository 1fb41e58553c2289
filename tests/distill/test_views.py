"""What a reward model reads: the rubric's reward_model view and worst-answer combine,
honoured when fitting, scoring (score_file), serving and saving; on real SYCON dialogues."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import httpx
import numpy as np
import pytest
from support import make_item, real_data

from tinyjudge.datasets.importers.sycon import import_sycon
from tinyjudge.distill import (
    EncoderRM,
    LinearRM,
    TrainingSet,
    item_views,
    load_model,
    make_model,
    score_file,
    training_set,
)
from tinyjudge.distill._text import View, answer_prefixes
from tinyjudge.distill.hf import PairCodec
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric
from tinyjudge.serve import create_app

from ..serve.conftest import running

FAST = {"max_length": 64, "epochs": 2, "lr": 3e-3, "batch_size": 16}


_dialogue = partial(make_item, item_id="d")  # user, assistant, user ... over the texts


def _rubric(view: str, combine: str = "last", **params: dict) -> Rubric:
    base = load_rubric("pushback_under_pressure")
    spec = base.reward_model.model_copy(update={"view": view, "combine": combine, "params": params})
    return base.model_copy(update={"reward_model": spec})


@pytest.mark.parametrize(
    ("view", "context", "keep"),
    [
        ("window", "user: Q\nassistant: A1\nuser: P1", "end"),
        ("first_user_last_answer", "user: Q", "start"),
        ("first_user_first_last_answer", "user: Q\nassistant: A1", "start"),
    ],
    ids=["window", "first-user-last-answer", "first-user-first-last-answer"],
)
def test_each_view_keeps_the_last_answer_as_the_reply(view: str, context: str, keep: str) -> None:
    (v,) = item_views(_dialogue("Q", "A1", "P1", "A2"), view)
    assert v == View(context, "A2", keep)


def test_a_first_turn_is_not_read_twice() -> None:
    (v,) = item_views(_dialogue("Q", "A1"), "first_user_first_last_answer")
    assert v == View("user: Q", "A1", "start")


def test_an_unknown_view_is_refused() -> None:
    with pytest.raises(TinyjudgeError, match="unknown reward-model view 'last'; views are"):
        item_views(_dialogue("Q", "A1"), "last")


def test_answer_prefixes_cut_after_each_answer() -> None:
    item = _dialogue("Q", "A1", "P1", "A2", "P2", "A3")
    prefixes = answer_prefixes(item)
    assert [len(p.messages) for p in prefixes] == [2, 4, 6]
    assert prefixes[-1] is item
    assert [item_views(p, "first_user_last_answer")[0].response for p in prefixes] == [
        "A1",
        "A2",
        "A3",
    ]


def test_a_narrowed_context_keeps_its_start(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    ctx = "user: why is the sky green " + "and more words " * 40
    views = [View(ctx, "it is not green", "start"), View(ctx, "it is not green", "end")]
    enc = PairCodec(tok, token_types=True).encode(views, 32)
    head = tok("user: why is the sky green", add_special_tokens=False)["input_ids"]
    assert enc.ids[0][1 : 1 + len(head)] == head
    assert enc.ids[1][1 : 1 + len(head)] != head
    assert enc.ids[0][-6:] == enc.ids[1][-6:]  # the reply is the same in both


def test_reward_model_spec_leaves_the_rubric_hash_alone() -> None:
    base = load_rubric("pushback_under_pressure")
    other = _rubric("first_user_first_last_answer", "worst_answer", encoder={"epochs": 9})
    assert other.hash == base.hash
    assert other.reward_model.view == "first_user_first_last_answer"


@pytest.mark.parametrize(
    ("rubric", "update"),
    [("compliance", {"positive": []}), ("instruction_following", {})],
    ids=["no-positive-labels", "pairwise"],
)
def test_worst_answer_needs_positive_labels(rubric: str, update: dict) -> None:
    data = load_rubric(rubric).model_dump(mode="json") | update
    data["reward_model"] = {"combine": "worst_answer"}
    with pytest.raises(ValueError, match="worst_answer needs a nominal or ordinal rubric"):
        Rubric.model_validate(data)


def test_tier_options_default_to_the_rubric_and_yield_to_given_ones() -> None:
    rubric = _rubric("window", encoder={"epochs": 7, "max_length": 96})
    model = make_model("encoder", rubric, max_length=64)
    assert (model.epochs, model.max_length) == (7, 64)
    with pytest.raises(TinyjudgeError, match="unknown option.*'epoch'.*reward_model.params"):
        make_model("encoder", _rubric("window", encoder={"epoch": 2}))


@pytest.fixture(scope="module")
def sycon_set() -> TrainingSet:
    """The first 10 questions' dialogues of all four answering models (40 dialogues, 200
    turns: all of the bundled slice), GPT-4o's per-turn labels."""
    root = real_data("sycon")
    if root is None:
        pytest.skip("no SYCON-Bench data, shared or bundled")
    imported = import_sycon(root)
    keep = [it for it in imported.items if it.metadata["question_id"] <= 10]
    assert len(keep) == 200
    return training_set(keep, imported.labels, "judge:gpt-4o", "pushback_under_pressure")


def _dialogues(items: list[Item], labels: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for it, lab in sorted(zip(items, labels, strict=True), key=lambda p: p[0].metadata["turn"]):
        out.setdefault(it.metadata["dialogue_id"], []).append(lab)
    return out


def test_worst_answer_fits_own_verdicts_and_predicts_no_recovery(
    sycon_set: TrainingSet, tiny_bert: Path, tmp_path: Path
) -> None:
    rubric = _rubric("first_user_last_answer", "worst_answer")
    model = EncoderRM(rubric, name="enc-view", base=str(tiny_bert), **FAST)
    model.fit(sycon_set.items, sycon_set.y_hard)
    # Turns after a dialogue's first `caves` inherit it: they are left out of training.
    inherited = sum(
        len(labs) - labs.index("caves") - 1
        for labs in _dialogues(sycon_set.items, sycon_set.y_hard).values()
        if "caves" in labs
    )
    assert inherited > 0
    assert model.card_["n_left_out_inherited"] == inherited
    assert model.card_["n_train"] == len(sycon_set.items) - inherited
    assert (model.card_["view"], model.card_["combine"]) == (
        "first_user_last_answer",
        "worst_answer",
    )
    pred = model.predict(sycon_set.items)
    for labs in _dialogues(sycon_set.items, pred).values():
        first = labs.index("caves") if "caves" in labs else len(labs)
        assert set(labs[first:]) <= {"caves"}  # a dialogue that caved stays caved
    saved = model.save(tmp_path / "rm")
    meta = json.loads((saved / "tinyjudge.json").read_text())
    assert meta["rubric"]["reward_model"]["view"] == "first_user_last_answer"
    assert (
        "reads: view `first_user_last_answer`, combined `worst_answer`"
        in (saved / "README.md").read_text()
    )
    again = load_model(saved)
    np.testing.assert_array_equal(
        again.set_params(precision="fp32").predict_proba(sycon_set.items),
        model.set_params(precision="fp32").predict_proba(sycon_set.items),
    )


def test_the_view_changes_what_the_model_reads(sycon_set: TrainingSet) -> None:
    window = LinearRM(_rubric("window")).fit(sycon_set.items, sycon_set.y_hard)
    narrow = LinearRM(_rubric("first_user_last_answer")).fit(sycon_set.items, sycon_set.y_hard)
    pushed = sycon_set.items[4]  # turn 5: four push-backs in the window
    assert item_views(pushed, "window")[0].context.count("user:") == 5
    assert narrow.views_of([pushed])[0].context == "user: " + pushed.messages[0].text
    assert window.features_.vocab_["context_words"] != narrow.features_.vocab_["context_words"]


@pytest.fixture(scope="module")
def worst_linear(sycon_set: TrainingSet) -> LinearRM:
    rubric = _rubric("first_user_first_last_answer", "worst_answer")
    return LinearRM(rubric).fit(sycon_set.items, sycon_set.y_hard)


def test_score_file_honours_the_view(
    worst_linear: LinearRM, sycon_set: TrainingSet, tmp_path: Path
) -> None:
    from tinyjudge.datasets.jsonl import read_jsonl, write_jsonl
    from tinyjudge.records import Label

    write_jsonl(tmp_path / "items.jsonl", sycon_set.items)
    score_file(worst_linear, tmp_path / "items.jsonl", tmp_path / "out.jsonl", batch_size=7)
    got = list(read_jsonl(tmp_path / "out.jsonl", Label))
    expected = worst_linear.score_items(sycon_set.items)
    assert [g.label for g in got] == [e.label for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert g.probs == pytest.approx(e.probs, abs=1e-9)


def test_serve_honours_the_view(worst_linear: LinearRM, sycon_set: TrainingSet) -> None:
    items = sycon_set.items[:10]
    expected = worst_linear.score_items(items)
    payload = {"items": [it.model_dump(mode="json", exclude_none=True) for it in items]}
    with running(create_app(worst_linear)) as url:
        r = httpx.post(f"{url}/score", json=payload, timeout=30)
    assert r.status_code == 200, r.text
    for g, e in zip(r.json()["labels"], expected, strict=True):
        assert g["label"] == e.label
        assert g["probs"] == pytest.approx(e.probs, abs=1e-9)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_length": 64.5}, r"max_length must be a whole number .*got 64\.5"),
        ({"lr": "fast"}, r"lr must be a number .*got 'fast'"),
    ],
    ids=["fraction-for-a-count", "text-for-a-rate"],
)
def test_tier_options_of_the_wrong_kind_are_one_line(params: dict, message: str) -> None:
    with pytest.raises(TinyjudgeError, match=message):
        make_model("encoder", load_rubric("pushback_under_pressure"), **params)
    with pytest.raises(TinyjudgeError, match=message):  # the rubric's defaults are checked too
        make_model("encoder", _rubric("window", encoder=params))
