"""A Bradley-Terry model trained on HH-RLHF pairs rewards each rollout on its own, at any
batch size, in-process and served; a base that already has a classification head is re-headed."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest
from support import real_data

from tinyjudge.datasets.importers import import_chat
from tinyjudge.distill import TransformerRM, load_model
from tinyjudge.integrations.trl import reward_func
from tinyjudge.records import Item

FAST = {"max_length": 256, "epochs": 4, "lr": 3e-3, "batch_size": 8}


@pytest.fixture(scope="module")
def hh() -> tuple[list[Item], list[str]]:
    src = real_data("hh-rlhf")
    if src is None:
        pytest.skip("no HH-RLHF data")
    got = import_chat(src / "harmless-base" / "test.jsonl.gz", rubric="instruction_following",
                      source="human:hh-rlhf", limit=24)  # fmt: skip
    return got.items, [lab.label for lab in got.labels]


@pytest.fixture(scope="module")
def bt_dir(tiny_bert: Path, hh, tmp_path_factory: pytest.TempPathFactory) -> Path:
    items, labels = hh
    model = TransformerRM("instruction_following", base=str(tiny_bert), **FAST).fit(items, labels)
    assert isinstance(model.card_["reward_reference"], float)
    return model.save(tmp_path_factory.mktemp("bt") / "bt")


def _sides(items: list[Item]) -> list[Item]:
    out = []
    for it in items:
        for side, response in (("a", it.response_a), ("b", it.response_b)):
            out.append(Item(id=f"{it.id}:{side}", messages=[*(it.context or []), *response]))
    return out


def test_each_rollout_gets_its_own_reward_at_any_batch_size(bt_dir: Path, hh) -> None:
    model = load_model(bt_dir)
    singles = _sides(hh[0][:3])
    alone = [model.score_items([it])[0] for it in singles]
    assert all(lab.status == "ok" and lab.label is None for lab in alone)
    scores = [lab.score for lab in alone]
    assert len(set(scores)) == len(scores)  # no two rollouts share a reward
    for k in (1, 2, 3, 4, 5, 6):
        for size in (1, 2, 64):
            got = [lab.score for lab in model.score_items(singles[:k], batch_size=size)]
            assert got == pytest.approx(scores[:k], abs=1e-6), (k, size)
    ref = model.card_["reward_reference"]
    for lab in alone:
        assert lab.score == pytest.approx(1 / (1 + np.exp(-(lab.raw["reward"] - ref))), abs=1e-12)
    # a pair's P(a) is the sigmoid of its two sides' rewards, each scored alone
    P = model.predict_proba(hh[0][:3])
    r = np.array([lab.raw["reward"] for lab in alone])
    p_a = 1 / (1 + np.exp(-(r[0::2] - r[1::2])))
    np.testing.assert_allclose(P[:, model.classes_.index("a")], p_a, atol=1e-5)


def test_a_pairwise_model_served_and_in_trl(bt_dir: Path, hh) -> None:
    from tinyjudge.serve import create_app

    from ..serve.conftest import running

    model = load_model(bt_dir)
    singles = _sides(hh[0][:2])[:3]
    expected = [lab.score for lab in model.score_items(singles)]
    queries = [
        [m.model_dump(mode="json", exclude_none=True) for m in it.messages] for it in singles
    ]
    with running(create_app(model)) as url:
        one = httpx.post(f"{url}/get_reward", json={"query": queries[:1]}, timeout=60)
        three = httpx.post(f"{url}/get_reward", json={"query": queries}, timeout=60)
    assert one.json()["rewards"] == pytest.approx(expected[:1], abs=1e-6)
    assert three.json()["rewards"] == pytest.approx(expected, abs=1e-6)
    trl = reward_func(bt_dir)(
        prompts=[q[:-1] for q in queries], completions=[q[-1:] for q in queries]
    )
    assert trl == pytest.approx(expected, abs=1e-6)


def test_a_base_with_a_classification_head_is_reheaded(tiny_bert: Path, hh, tmp_path: Path) -> None:
    from tinyjudge.distill.hf import load_classifier

    classifier, tok = load_classifier(str(tiny_bert), {0: "x", 1: "y", 2: "z"})
    classifier.save_pretrained(tmp_path / "clf")
    tok.save_pretrained(tmp_path / "clf")
    items, labels = hh
    model = TransformerRM("instruction_following", base=str(tmp_path / "clf"),
                          **{**FAST, "epochs": 1}).fit(items[:8], labels[:8])  # fmt: skip
    assert model.model_.config.num_labels == 1
    assert [lab.status for lab in model.score_items(_sides(items[:1]))] == ["ok", "ok"]
