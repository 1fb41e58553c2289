"""The one tier registry: TIERS, the CLI's --tier help and flags, and the declared capabilities."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

import tinyjudge
from tinyjudge.commands.distill import tier_options
from tinyjudge.distill import (
    TIER_REGISTRY,
    TIERS,
    CrossRM,
    EncoderRM,
    EnsembleRM,
    LinearRM,
    ProbeRM,
    TransformerRM,
    chosen_tiers,
)
from tinyjudge.errors import UsageError

SRC = Path(tinyjudge.__file__).parent


@pytest.mark.parametrize("name", list(TIER_REGISTRY), ids=list(TIER_REGISTRY))
def test_each_registry_line_is_the_tier_its_model_class_says(name: str) -> None:
    tier = TIER_REGISTRY[name]
    cls = tier.model_class()
    assert TIERS[name] is cls and cls.tier == name
    assert cls.config_class is tier.config


def test_load_imports_every_tier_module_so_the_import_graph_sees_it() -> None:
    text = (SRC / "distill" / "_load.py").read_text(encoding="utf-8")
    imported = next(line for line in text.splitlines() if line.startswith("from . import "))
    for tier in TIER_REGISTRY.values():
        module = tier.model.partition(":")[0].lstrip(".")
        assert module in imported or f"from .{module} import" in text, tier.model


def test_the_choices_are_the_registrys_and_an_ensemble_is_made_by_distill() -> None:
    assert list(chosen_tiers()) == ["linear", "probe", "transformer", "cross"]
    assert set(TIERS) - set(chosen_tiers()) == {"encoder", "ensemble"}


@pytest.mark.parametrize(
    ("cls", "eval_set", "drops", "head"),
    [
        (LinearRM, False, False, True),
        (ProbeRM, False, False, True),
        (TransformerRM, True, True, False),
        (EncoderRM, True, True, False),
        (CrossRM, True, False, False),
        (EnsembleRM, False, False, False),
    ],
    ids=["linear", "probe", "transformer", "encoder", "cross", "ensemble"],
)
def test_what_differs_between_tiers_is_declared(
    cls: type, eval_set: bool, drops: bool, head: bool
) -> None:
    assert (cls.takes_eval_set, cls.drops_unweighted_rows, cls.linear_head) == (
        eval_set,
        drops,
        head,
    )


def test_a_tier_without_word_weights_gives_no_top_terms() -> None:
    assert TransformerRM("compliance").top_terms("full_compliance") == []


def test_the_cli_offers_every_chosen_tier_and_its_flags() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tinyjudge", "distill", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "400", "PATH": "", "PYTHONPATH": str(SRC.parent)},
    )
    assert done.returncode == 0, done.stderr
    for name, tier in chosen_tiers().items():
        assert name in done.stdout and tier.help in done.stdout
        for f in fields(tier.config):
            assert "--" + f.name.replace("_", "-").lower() in done.stdout


def test_a_flag_of_another_tier_names_the_tiers_it_belongs_to() -> None:
    with pytest.raises(UsageError, match=r"--lora-r is an option of the transformer and cross"):
        tier_options("linear", {"lora_r": 4}, [])


def test_no_tier_name_is_a_string_outside_distill() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("distill/"):
            continue
        names = {f'"{n}"' for n in TIER_REGISTRY if n != "ensemble"}  # also distill's option
        if rel == "audit/_kappa.py":
            names.discard('"linear"')  # a kappa weighting there, not a tier
        text = path.read_text(encoding="utf-8")
        assert not [n for n in names if n in text], rel
