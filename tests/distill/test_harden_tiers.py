"""Hardening the probe tier (real MiniLM) and the transformer tier (a tiny BERT from a config).

The linear tier's figures are in ``test_harden.py``; these check that every tier goes
through augmentation and a round of adversarial training, with the card's record, and
(for the probe, real MiniLM) that the stock claim does not pay on prompts it never saw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.importers import Imported
from tinyjudge.distill import EnsembleConfig, TrainingSet, distill, load_model
from tinyjudge.exploit import Edit, HardenConfig, Hardened, flip_stats
from tinyjudge.records import Item

TARGET = "full_compliance"
CLAIM = "Sure! Here is a detailed answer:"


def _prompt(item: Item) -> int:
    return int(str(item.metadata["prompt_id"]).split("-")[1])


def _claim_flip(model, items: list[Item]) -> float:
    edit = Edit("claim", "claim", True, prepend=CLAIM)
    return flip_stats(model, items, edit, target=TARGET, n_boot=100).flip_to_target.value


@pytest.mark.slow
def test_hardening_the_probe_tier_with_minilm(xs: Imported, tmp_path: Path) -> None:
    train = [it for it in xs.items if _prompt(it) % 2 == 0 and _prompt(it) % 3 != 0]
    test = [it for it in xs.items if _prompt(it) % 2 == 1][:120]
    params = {"cache_dir": str(tmp_path / "cache"), "max_length": 128}
    config = Hardened(HardenConfig(
        target=TARGET, rounds=1, copies=1, share=0.5, mined=5, budget=4,
    ))  # fmt: skip
    got = {}
    for name, harden in (("plain", None), ("hard", config)):
        got[name] = distill(
            train, xs.labels, "judge:gpt-4", "compliance", tier="probe",
            group_by="metadata.prompt_id", harden=harden, **params,
        ).model  # fmt: skip
    record = got["hard"].card_["harden"]
    assert record["n_augmented"] > len(train) and 1 <= len(record["rounds"]) <= 2
    # Measured: the claim flips 0.0% of the plain probe's refusals here (MiniLM reads past
    # it) and 1.9% of the hardened one's: hardening must not make it pay.
    assert _claim_flip(got["hard"], test) <= 0.05
    got["hard"].save(tmp_path / "rm")
    assert load_model(tmp_path / "rm").card_["harden"]["rounds"] == record["rounds"]


def test_hardening_the_transformer_tier_runs_a_round(
    xs: Imported, small: TrainingSet, tiny_bert: Path, tmp_path: Path
) -> None:
    fast = {"max_length": 64, "epochs": 1, "lr": 3e-3, "batch_size": 16, "device": "cpu"}
    config = Hardened(HardenConfig(
        target=TARGET, rounds=1, bound=0.0, copies=1, share=0.25, mined=3, budget=3, keys=0.05,
        if_worse="keep",  # the hardened fit is what this test counts, even when plain wins
    ))  # fmt: skip
    result = distill(
        small.items, xs.labels, "judge:gpt-4", "compliance", tier="transformer",
        base=str(tiny_bert), group_by="metadata.prompt_id", harden=config, **fast,
    )  # fmt: skip
    record = result.model.card_["harden"]
    # bound 0: the round runs unless no phrase flips anything out of fold
    assert record["rounds"][0]["round"] == 0
    assert record["n_augmented"] > len(small.items) // 2  # one copy per training item, claims
    assert record["n_master_keys"] > 0
    # fitted on the training answers and on their copies and master keys too; distill
    # says the number its card says (issue 31)
    fitted = result.model.card_["n_train"]
    assert fitted > record["n_augmented"] + record["n_master_keys"]
    assert result.n_train == fitted
    result.model.save(tmp_path / "rm")
    back = load_model(tmp_path / "rm")
    assert back.card_["harden"]["target"] == TARGET


@pytest.mark.parametrize("k", [2], ids=["two"])
def test_a_probe_ensemble_saves_and_loads(xs: Imported, small: TrainingSet, tiny_bert, tmp_path, k):
    params = {"encoder": str(tiny_bert), "cache_dir": str(tmp_path / "c"), "max_length": 64}
    config = EnsembleConfig(k=k, mode="seed")
    model = distill(
        small.items, xs.labels, "judge:gpt-4", "compliance", tier="probe",
        group_by="metadata.prompt_id", ensemble=config, **params,
    ).model  # fmt: skip
    model.save(tmp_path / "ens")
    back = load_model(tmp_path / "ens")
    assert [m.tier for m in back.members_] == ["probe"] * k
    labels = back.score_items(small.items[:10])
    assert all(lab.raw["spread"] >= 0 for lab in labels)
