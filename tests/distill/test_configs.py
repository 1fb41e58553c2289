"""One config per tier: the library takes it whole or as keyword options, the CLI's flags
come from its fields (``--lora-r 16`` and ``--param lora_r=16`` alike), and ``distill``
reads the teacher and the rubric from the labels when there is one of each."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from support import run_tinyjudge

from tinyjudge.commands.distill import tier_options
from tinyjudge.datasets.importers import Imported
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.distill import (
    LinearConfig,
    LinearRM,
    ProbeConfig,
    TransformerConfig,
    TransformerRM,
    distill,
    tier_config,
)
from tinyjudge.errors import RubricError, UsageError


@pytest.fixture(scope="module")
def judge_labels(xs: Imported) -> list:
    """GPT-4's labels on the bundled XSTest sample: one teacher, one rubric."""
    return [lab for lab in xs.labels if lab.source == "judge:gpt-4"]


def test_distill_reads_the_teacher_and_the_rubric_from_the_labels(
    xs: Imported, judge_labels: list
) -> None:
    got = distill(xs.items, judge_labels, group_by="metadata.prompt_id")
    model = got.model
    assert isinstance(model, LinearRM) and model.rubric.id == "compliance"
    assert model.card_["teacher_source"] == "judge:gpt-4"
    named = distill(xs.items, xs.labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id")
    assert got.validation == named.validation
    np.testing.assert_array_equal(
        model.predict_proba(xs.items[:50]), named.model.predict_proba(xs.items[:50])
    )


def test_several_teachers_among_the_labels_ask_for_source(xs: Imported) -> None:
    with pytest.raises(UsageError, match=r"5 sources \(.*judge:gpt-4.*\); pass .*source=") as e:
        distill(xs.items, xs.labels)
    assert e.value.param == "source"
    # people learnt too are not teachers: the rest must still be one source
    with pytest.raises(UsageError, match=r"4 sources") as e:
        distill(xs.items, xs.labels, human="human:final")


def test_a_config_is_the_keyword_options_whole(xs: Imported, judge_labels: list) -> None:
    split = {"group_by": "metadata.prompt_id"}
    by_config = distill(xs.items, judge_labels, config=LinearConfig(C=0.5), **split).model
    by_keyword = distill(xs.items, judge_labels, C=0.5, **split).model
    assert by_config.config == by_keyword.config == LinearConfig(C=0.5)
    assert by_config.get_params() == by_keyword.get_params()
    np.testing.assert_array_equal(
        by_config.predict_proba(xs.items[:50]), by_keyword.predict_proba(xs.items[:50])
    )
    # the config names the tier; a keyword option sits over it
    over = distill(xs.items, judge_labels, config=LinearConfig(C=0.5), C=2.0, **split)
    assert over.model.C == 2.0
    with pytest.raises(UsageError, match=r"a LinearConfig is not the probe tier's config"):
        distill(xs.items, judge_labels, tier="probe", config=LinearConfig())


@pytest.mark.parametrize(
    ("make", "param", "match"),
    [
        (lambda: LinearConfig(C=-1), "C", r"^C must be > 0, got -1; allowed: \(0, 1e\+09\]$"),
        (lambda: TransformerConfig(lr=0.0), "lr", r"^lr must be > 0"),
        (lambda: TransformerConfig(epochs=2.5), "epochs", r"epochs must be a whole number"),
        (lambda: ProbeConfig(views="opening,title"), "views", r"subset of opening,response"),
        (lambda: TransformerConfig(device="tpu"), "device", r"device must be one of 'auto'"),
        (lambda: LinearConfig.options(depth=3), "depth", r"unknown option 'depth' for the linear"),
    ],
    ids=["C-negative", "lr-zero", "epochs-fraction", "probe-view", "device", "unknown"],
)
def test_a_bad_option_is_refused_naming_its_field(make, param: str, match: str) -> None:
    with pytest.raises(UsageError, match=match) as caught:
        make()
    assert caught.value.param == param


def test_the_rubric_defaults_apply_and_a_fault_there_names_the_rubric() -> None:
    # pushback_under_pressure ships reward_model.params: encoder: {epochs: 3, max_length: 256}
    config = tier_config("transformer", "pushback_under_pressure", max_length=64, epochs=5)
    assert (config.epochs, config.max_length) == (5, 64)
    given = TransformerConfig(max_length=96)
    assert tier_config("transformer", "pushback_under_pressure", given) is not None
    assert tier_config("transformer", "pushback_under_pressure", given).max_length == 96
    from tinyjudge.rubric import load_rubric

    rubric = load_rubric("compliance")
    spec = rubric.reward_model.model_copy(update={"params": {"linear": {"C": -2}}})
    bad = rubric.model_copy(update={"reward_model": spec})
    with pytest.raises(RubricError, match=r"C must be > 0.*rubric compliance's reward_model"):
        tier_config("linear", bad)


def test_a_model_takes_its_config_and_stays_a_scikit_learn_estimator() -> None:
    from sklearn.base import clone

    model = TransformerRM("compliance", config=TransformerConfig(lora_r=8), epochs=1)
    assert (model.config.lora_r, model.epochs, model.get_params()["lora_r"]) == (8, 1, 8)
    twin = clone(model)
    assert twin.config == model.config and twin.config is not model.config
    assert model.set_params(lora_r=4).config.lora_r == 4
    plan = model.train_plan()
    assert (plan.epochs, plan.lr, plan.batch_size, plan.seed) == (1, 5e-5, 16, 0)
    with pytest.raises(UsageError, match=r"the linear tier takes a LinearConfig"):
        LinearRM("compliance", config=TransformerConfig())


def test_the_flag_and_its_param_synonym_give_one_config() -> None:
    flags = {"lora_r": 16, "lora_target_modules": ["query,value"]}  # as typer hands them
    by_flag = tier_options("transformer", flags, [])
    by_param = tier_options("transformer", {}, ["lora_r=16", "lora_target_modules=query,value"])
    assert TransformerConfig.options(**by_flag) == TransformerConfig.options(**by_param)
    assert TransformerConfig.options(**by_param).lora_target_modules == ["query", "value"]


def test_a_flag_of_another_tier_is_refused_in_one_line(tmp_path: Path) -> None:
    res = run_tinyjudge(
        "distill", tmp_path / "items.jsonl", tmp_path / "labels.jsonl", "--tier", "linear",
        "--lora-r", "16", "--out", tmp_path / "m",
    )  # fmt: skip
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    # the cross tier is the transformer tier over other pairs: it has the flag too
    assert "--lora-r is an option of the transformer and cross tiers, not of --tier linear" in line
    assert not (tmp_path / "m").exists()


def test_lora_r_from_the_cli_is_the_config_of_its_param_synonym(
    xs: Imported, judge_labels: list, tiny_bert: Path, tmp_path: Path
) -> None:
    """One tiny fit: ``--lora-r 16`` and friends as flags, saved; the same as ``--param``."""
    write_jsonl(tmp_path / "items.jsonl", xs.items[:120])
    write_jsonl(tmp_path / "labels.jsonl", [lab for lab in judge_labels if lab.item_id in
                                            {it.id for it in xs.items[:120]}])  # fmt: skip
    flags = ["--lora-r", "16", "--base", str(tiny_bert), "--epochs", "1", "--max-length", "32"]
    res = run_tinyjudge(
        "distill", tmp_path / "items.jsonl", tmp_path / "labels.jsonl", "--tier", "transformer",
        *flags, "--out", tmp_path / "m", "--quiet",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    meta = json.loads((tmp_path / "m" / "tinyjudge.json").read_text())
    pairs = ["lora_r=16", f"base={tiny_bert}", "epochs=1", "max_length=32"]
    synonym = tier_config("transformer", "compliance", **tier_options("transformer", {}, pairs))
    assert meta["params"] == json.loads(json.dumps(dataclasses.asdict(synonym)))
    assert meta["params"]["lora_r"] == 16 and "base" not in meta["card"]  # base stored once


def test_distills_own_keywords_are_the_fields_of_its_config() -> None:
    # the CLI's flags come from DistillConfig and are handed to distill() by field name:
    # a field distill() does not take, or a keyword the config forgets, would drift apart
    import inspect

    from tinyjudge.distill import DistillConfig

    taken = set(inspect.signature(distill).parameters)
    own = {f.name for f in dataclasses.fields(DistillConfig)}
    assert own <= taken
    not_flags = {"items", "labels", "rubric", "harden", "ensemble", "config", "options"}
    assert taken - own == not_flags


def test_the_split_seed_is_distills_and_seed_is_the_tiers(xs: Imported, judge_labels) -> None:
    # --seed of the transformer tier once fell into distill's split seed
    with pytest.raises(UsageError, match="unknown option 'seed' for the linear tier"):
        distill(xs.items, judge_labels, seed=3)
    a = distill(xs.items, judge_labels, split_seed=1, group_by="metadata.prompt_id")
    b = distill(xs.items, judge_labels, split_seed=2, group_by="metadata.prompt_id")
    assert a.n_val > 0 and b.n_val > 0
    assert a.model.card_["validation"] != b.model.card_["validation"]
