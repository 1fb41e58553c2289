"""The model card is one the Hugging Face Hub reads: YAML front matter with the library,
the base model, tags, the data's licence and ``model-index`` with the validation figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard
from support import XSTEST_SAMPLE

from tinyjudge.datasets.importers import Imported, run_import
from tinyjudge.distill import LinearRM, distill
from tinyjudge.distill._card import front_matter

GROUP = "metadata.prompt_id"


@pytest.fixture(scope="module")
def xs() -> Imported:
    return run_import("xstest", XSTEST_SAMPLE)


def _front(card_path: Path) -> dict:
    text = card_path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_a_saved_card_parses_as_a_hub_model_card(xs: Imported, tmp_path: Path) -> None:
    result = distill(xs.items, xs.labels, source="judge:gpt-4", rubric="compliance", group_by=GROUP)
    d = result.model.save(tmp_path / "rm")
    card = ModelCard.load(d / "README.md")
    data = card.data.to_dict()
    assert data["library_name"] == "tinyjudge"
    assert {"tinyjudge", "reward-model", "tier-linear", "rubric-compliance"} <= set(data["tags"])
    assert "base_model" not in data  # the linear tier builds on no model
    assert "license" not in data  # XSTest's items name no licence: none is guessed
    floats = {k: v for k, v in result.validation.items() if isinstance(v, float)}
    assert {"accuracy", "cohen_kappa"} <= set(floats)
    assert {r.task_type for r in card.data.eval_results} == {"text-classification"}
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == floats
    front = _front(d / "README.md")
    (entry,) = front["model-index"]
    assert entry["name"] == result.model.name
    metrics = {m["type"]: m["value"] for m in entry["results"][0]["metrics"]}
    assert metrics == floats
    assert "# compliance-linear: a tinyjudge reward model" in card.text


@pytest.mark.parametrize(
    ("licences", "expected"),
    [(["CC-BY-4.0"] * 2, "cc-by-4.0"), (["cc-by-4.0", "mit"], "other"), (["mit", None], None)],
    ids=["one", "mixed", "some-unknown"],
)
def test_the_licence_is_the_datas(xs: Imported, licences, expected, tmp_path: Path) -> None:
    items = [
        it.model_copy(update={"metadata": {**it.metadata, "license": licences[i % 2]}})
        if licences[i % 2] is not None
        else it
        for i, it in enumerate(xs.items[:200])
    ]
    by_id = {lab.item_id: lab for lab in xs.labels if lab.source == "judge:gpt-4"}
    kept = [it for it in items if by_id.get(it.id) and by_id[it.id].label]
    model = LinearRM("compliance").fit(kept, [by_id[it.id].label for it in kept])
    front = _front(model.save(tmp_path / "rm") / "README.md")
    assert front.get("license") == expected


def _meta(params: dict, card: dict | None = None, tier: str = "probe") -> dict:
    rubric = {"id": "compliance"}
    return {"name": "m", "tier": tier, "rubric": rubric, "params": params, "card": card or {}}


@pytest.mark.parametrize(
    ("params", "card", "base"),
    [
        ({"encoder": "all-MiniLM-L6-v2"}, {}, "sentence-transformers/all-MiniLM-L6-v2"),
        ({"base": "Qwen/Qwen2.5-0.5B"}, {}, "Qwen/Qwen2.5-0.5B"),
        ({}, {"base": "answerdotai/ModernBERT-base"}, "answerdotai/ModernBERT-base"),
        ({"base": "/models/my-encoder"}, {}, None),
        ({"encoder": "./local"}, {}, None),
    ],
    ids=["probe-minilm", "transformer-hub", "card-base", "local-path", "relative-path"],
)
def test_base_model_is_a_hub_id_or_left_out(params: dict, card: dict, base: str | None) -> None:
    front = front_matter(_meta(params, card))
    assert front.get("base_model") == base
    assert ModelCard(f"---\n{yaml.safe_dump(front)}---\n# m\n").data.base_model == base


def test_no_validation_no_model_index() -> None:
    assert "model-index" not in front_matter(_meta({}, {"validation": None}, tier="linear"))
