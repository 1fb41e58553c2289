"""The ``answer`` view and ``reward_model.references``: every tier reads the references on
the context side; the linear tier as a block of its own, the probe as pair features; the card
says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import make_item, real_data

from tinyjudge.datasets.importers.sycon import import_sycon
from tinyjudge.distill import TrainingSet, item_views, load_model, make_model, training_set
from tinyjudge.distill._text import View
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric


def _rubric(view: str = "answer", references: bool = True, combine: str = "last") -> Rubric:
    base = load_rubric("pushback_under_pressure")
    spec = base.reward_model.model_copy(
        update={"view": view, "references": references, "combine": combine}
    )
    return base.model_copy(update={"reward_model": spec})


def _dialogue(**metadata: object) -> Item:
    return make_item("Q", "A1", "P1", "A2", item_id="d", metadata=metadata)


@pytest.fixture(scope="module")
def sycon() -> TrainingSet:
    root = real_data("sycon")
    if root is None:
        pytest.skip("no SYCON-Bench data, shared or bundled")
    imported = import_sycon(root)
    keep = [it for it in imported.items if it.metadata["question_id"] <= 10]
    return training_set(keep, imported.labels, "judge:gpt-4o", "pushback_under_pressure")


def test_the_answer_view_is_the_last_answer_alone() -> None:
    (v,) = item_views(_dialogue(), "answer")
    assert v == View("", "A2", "start", "")


def test_references_go_on_the_context_side_only_when_the_rubric_says_so() -> None:
    item = _dialogue(presupposition="cold is higher", correction="faster is higher")
    (on,) = item_views(item, "answer", _rubric())
    assert on.references == "false_premise: cold is higher\ncorrect_information: faster is higher"
    assert on.response == "A2" and "faster" not in on.context + on.response
    (window,) = item_views(item, "window", _rubric("window"))
    assert window.references == on.references and window.context.startswith("user: Q")
    (off,) = item_views(item, "answer", _rubric(references=False))
    assert off.references == ""


def test_the_linear_tier_reads_the_references_as_a_block_of_its_own(
    sycon: TrainingSet, tmp_path: Path
) -> None:
    with_refs = make_model("linear", _rubric()).fit(sycon.items, sycon.y_soft)
    plain = make_model("linear", _rubric(references=False)).fit(sycon.items, sycon.y_soft)
    vocab = with_refs.features_.vocab_
    assert "reference_words" in vocab and "reference_words" not in plain.features_.vocab_
    assert "context_words" not in vocab  # the answer view has no context but the references
    assert any(w in vocab["reference_words"] for w in ("cold", "virus", "wind"))
    P1, P0 = with_refs.predict_proba(sycon.items), plain.predict_proba(sycon.items)
    assert not np.allclose(P1, P0)
    # Another item's references change its score: the block is read at scoring time.
    item = sycon.items[0]
    swapped = item.model_copy(update={"metadata": sycon.items[-1].metadata})
    assert not np.allclose(with_refs.predict_proba([item]), with_refs.predict_proba([swapped]))

    with_refs.save(tmp_path / "rm")
    loaded = load_model(tmp_path / "rm")
    assert np.allclose(loaded.predict_proba(sycon.items[:20]), P1[:20])
    card = (tmp_path / "rm" / "README.md").read_text()
    assert "view `answer`" in card
    assert "with the references `false_premise`, `correct_information`" in card
    assert loaded.card_["references"] == ["false_premise", "correct_information"]


def test_the_probe_compares_the_references_with_the_reply(sycon: TrainingSet) -> None:
    items = sycon.items[:40]
    with_refs = make_model("probe", _rubric())
    plain = make_model("probe", _rubric(references=False))
    E1, E0 = with_refs._embeddings(items), plain._embeddings(items)
    dim = E0.shape[1] // 2  # opening and response blocks
    assert E1.shape[1] == E0.shape[1] + dim + 1
    # The last column is the cosine of references and reply (times emb_weight).
    enc = with_refs._encoder()
    views = with_refs.views_of(items)
    cos = np.sum(
        enc.embed([v.references for v in views]) * enc.embed([v.response for v in views]), 1
    )
    assert np.allclose(E1[:, -1], cos * with_refs.emb_weight, atol=1e-5)
