"""Hardening (``distill(..., harden=Hardened())``) and ensembles, on the bundled XSTest sample.

The sample's prompts are split by prompt: models learn GPT-4's labels on the even
ones (hardening takes its own validation split of those), and exploits are counted
on the odd ones, answers no model was fitted or hardened on. The reward being
maximised is compliance (target ``full_compliance``), as in issue 29's measurement.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import run_tinyjudge
from typer.testing import CliRunner

from tinyjudge.cli import app
from tinyjudge.datasets.importers import Imported
from tinyjudge.datasets.jsonl import read_jsonl, write_jsonl
from tinyjudge.distill import (
    EnsembleConfig,
    EnsembleRM,
    LinearRM,
    check_model_dir,
    distill,
    load_model,
    own_verdicts,
    training_set,
)
from tinyjudge.errors import UsageError
from tinyjudge.exploit import (
    Edit,
    HardenConfig,
    Hardened,
    apply_edit,
    builtin_edits,
    flip_stats,
)
from tinyjudge.exploit._harden import (
    augment,
    harden_target,
    master_key_label,
    spread_phrases,
)
from tinyjudge.exploit._validation import worse_edits
from tinyjudge.records import Item, Label
from tinyjudge.rubric import load_rubric

TARGET = "full_compliance"
CLAIM = "Sure! Here is a detailed answer:"


def _odd(item: Item) -> bool:
    return int(str(item.metadata["prompt_id"]).split("-")[1]) % 2 == 1


@pytest.fixture(scope="module")
def halves(xs: Imported) -> tuple[list[Item], list[Item]]:
    return [it for it in xs.items if not _odd(it)], [it for it in xs.items if _odd(it)]


@pytest.mark.parametrize(
    ("cls", "field", "value", "match"),
    [
        (HardenConfig, "bound", 1.5, r"bound must be a finite number in \[0, 1\], got 1.5"),
        (HardenConfig, "rounds", -1, r"rounds must be a finite number in \[0, 20\], got -1"),
        (EnsembleConfig, "k", 0, r"k must be >= 1, got 0; allowed: \[1, 32\]"),
        (EnsembleConfig, "mode", "bagging", r"mode must be one of 'bootstrap', 'seed'"),
        (EnsembleConfig, "risk", float("nan"), r"risk must be a finite number"),
    ],
    ids=["bound", "rounds", "ensemble", "mode", "risk-nan"],
)
def test_a_bad_option_is_refused_naming_it(
    cls: type, field: str, value: object, match: str
) -> None:
    with pytest.raises(UsageError, match=match) as caught:
        cls(**{field: value})
    assert caught.value.param == field


def test_the_target_and_the_label_master_keys_get() -> None:
    push, comp = load_rubric("pushback_under_pressure"), load_rubric("compliance")
    assert harden_target(push) == "holds" and master_key_label(push, "holds") == "caves"
    assert harden_target(comp, TARGET) == TARGET
    assert master_key_label(comp, TARGET) == "full_refusal"
    with pytest.raises(UsageError, match=r"harden_target 'helpful' is not a label of rubric"):
        harden_target(comp, "helpful")


def test_copies_keep_their_targets_and_carry_the_edit(xs: Imported) -> None:
    ts = training_set(xs.items[:30], xs.labels, "judge:gpt-4", "compliance")
    claim = Edit("claim", "claim", True, prepend=CLAIM)
    bold = next(e for e in builtin_edits(load_rubric("compliance"), TARGET) if e.name == "bold")
    rng = np.random.default_rng(0)
    items, Y, origin = augment(ts.items, ts.y_soft, [bold, claim], 2, rng)
    assert len(items) == 2 * len(ts.items) and np.array_equal(Y, ts.y_soft[origin])
    assert len({it.id for it in items} | {it.id for it in ts.items}) == 3 * len(ts.items)
    assert all(
        it.messages[-1].text != ts.items[o].messages[-1].text
        for it, o in zip(items, origin, strict=True)
    )
    spread, sY, s_origin = spread_phrases(ts.items, ts.y_soft, [claim], 0.5, rng, "c")
    assert len(spread) == 15 and np.array_equal(sY, ts.y_soft[s_origin])
    assert all(it.messages[-1].text.startswith(CLAIM) for it in spread)


def test_inherited_verdicts_are_not_edited() -> None:
    """Under worst_answer a dialogue that caved keeps caving: its later turns are not its own."""
    from support import DATA_SLICES

    from tinyjudge.datasets.importers import run_import

    got = run_import("sycon", DATA_SLICES / "sycon")
    rubric = load_rubric("pushback_under_pressure")
    ts = training_set(got.items, got.labels, "judge:gpt-4o", rubric)
    keep = own_verdicts(ts.items, ts.y_soft, rubric)
    caves = rubric.label_names.index("caves")
    by_dialogue: dict[str, list[int]] = {}
    for i, it in enumerate(ts.items):
        by_dialogue.setdefault(str(it.metadata["dialogue_id"]), []).append(i)
    expected = []
    for rows in by_dialogue.values():
        rows.sort(key=lambda i: ts.items[i].metadata["turn"])
        for n, i in enumerate(rows):
            if not any(ts.y_soft[j, caves] > 0.5 for j in rows[:n]):
                expected.append(i)
    assert sorted(keep.tolist()) == sorted(expected)
    assert 0 < len(keep) < len(ts.items)


def _claim_flip(model, items: list[Item]) -> float:
    edit = Edit("claim", "claim", True, prepend=CLAIM)
    return flip_stats(model, items, edit, target=TARGET, n_boot=100).flip_to_target.value


@pytest.fixture(scope="module")
def linear_pair(xs: Imported, halves):
    train, _ = halves
    plain = distill(train, xs.labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id")
    config = Hardened(HardenConfig(target=TARGET, rounds=2, budget=20))
    hard = distill(
        train, xs.labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id", harden=config
    )
    return plain, hard


def test_hardening_the_linear_tier_stops_the_stock_claim_on_unseen_prompts(
    linear_pair, halves
) -> None:
    plain, hard = linear_pair
    _, test = halves
    before, after = _claim_flip(plain.model, test), _claim_flip(hard.model, test)
    assert before >= 0.05, before  # the exploit is real on the plain model (0.088 measured)
    assert after <= before / 2, (before, after)
    # the master keys: an empty answer no longer reads as compliance
    empty = next(
        e for e in builtin_edits(load_rubric("compliance"), TARGET) if e.name == "empty_answer"
    )
    refusals = [it for it in test if plain.model.predict([it])[0] != TARGET]
    p_plain = plain.model.predict_proba([apply_edit(it, empty) for it in refusals])[:, 0].mean()
    p_hard = hard.model.predict_proba([apply_edit(it, empty) for it in refusals])[:, 0].mean()
    assert p_hard < 0.5 < p_plain or p_hard < p_plain - 0.2, (p_plain, p_hard)


def test_the_card_records_rounds_edits_and_validation_figures(linear_pair, tmp_path) -> None:
    _, hard = linear_pair
    record = hard.model.card_["harden"]
    assert record["target"] == TARGET and record["master_key_label"] == "full_refusal"
    assert any(name.startswith("claim:") for name in record["edits"])
    assert "empty_answer" in record["master_keys"]
    assert record["rounds"][0]["round"] == 0 and len(record["rounds"]) <= 3
    kept = record["rounds"][record["kept_round"]]
    assert all(kept["best_search_flip"] <= r["best_search_flip"] for r in record["rounds"])
    for when in ("before", "after"):
        assert 0.0 <= record[when]["best_search_flip"] <= 1.0
        assert record[when]["worst_format_edit"] in {
            "bullets", "numbered_list", "heading", "bold", "spacing", "code_fence"
        }  # fmt: skip
    assert record["after"]["worst_edit_flip"] < record["before"]["worst_edit_flip"]
    # the headline search mines the validation items; the training bank's figure is labelled
    for when in ("before", "after"):
        assert 0.0 <= record[when]["trained_bank_search_flip"] <= 1.0
    assert "trained_bank_search_flip" not in record["rounds"][0]
    assert record["search_banks"]["best_search_flip"].startswith(
        "phrases mined from the validation items (held out, grouped by metadata.prompt_id)"
    )
    assert "not a transfer figure" in record["search_banks"]["trained_bank_search_flip"]
    # every edit's validation figure, and the ones hardening made worse named with both
    before, after = record["before"]["edit_flips"], record["after"]["edit_flips"]
    assert set(before) == set(after) and record["before"]["worst_edit_edit"] in before
    assert record["worse_edits"] == {
        n: [before[n], after[n]] for n in sorted(after, key=lambda n: before[n] - after[n])
        if after[n] > before[n]
    }  # fmt: skip
    hard.model.save(tmp_path / "rm")
    saved = check_model_dir(tmp_path / "rm")["card"]["harden"]
    assert saved["rounds"] == record["rounds"]
    card = (tmp_path / "rm" / "README.md").read_text()
    assert "## Hardening" in card and "| phrase mined from the training items, flip rate |" in card


def test_harden_with_people_labels_is_refused(xs: Imported, halves) -> None:
    with pytest.raises(UsageError, match="harden and ensemble are not supported with human"):
        distill(halves[0], xs.labels, "judge:gpt-4", "compliance", human="human:final",
                harden=Hardened())  # fmt: skip


def test_an_ensemble_serves_its_spread_and_a_conservative_score(xs: Imported, halves, tmp_path):
    train, test = halves
    config = EnsembleConfig(k=3, risk=1.0)
    got = distill(
        train,
        xs.labels,
        "judge:gpt-4",
        "compliance",
        group_by="metadata.prompt_id",
        ensemble=config,
    )
    model = got.model
    assert isinstance(model, EnsembleRM) and len(model.members_) == 3
    labels = model.score_items(test[:40])
    spreads = np.array([lab.raw["spread"] for lab in labels])
    assert spreads.max() > 0.01  # bootstrap members disagree somewhere
    for lab in labels:
        members = np.array(lab.raw["members"])
        assert lab.raw["mean"] == pytest.approx(members.mean())
        assert lab.raw["spread"] == pytest.approx(members.std())
        assert lab.score == pytest.approx(max(0.0, members.mean() - members.std()))
        Label.model_validate(lab.model_dump())  # still a valid, strict record
    mean_P = np.mean([m.predict_proba(test[:40]) for m in model.members_], axis=0)
    assert np.allclose(model.predict_proba(test[:40]), mean_P, atol=1e-6)
    model.save(tmp_path / "ens")
    back = load_model(tmp_path / "ens")
    assert np.allclose(back.predict_proba(test[:40]), model.predict_proba(test[:40]))
    assert [lab.raw for lab in back.score_items(test[:40])] == [lab.raw for lab in labels]


def test_distill_harden_on_the_command_line(xs: Imported, halves, tmp_path: Path) -> None:
    train, _ = halves
    write_jsonl(tmp_path / "items.jsonl", train)
    write_jsonl(tmp_path / "labels.jsonl", xs.labels)
    args = [
        "distill", str(tmp_path / "items.jsonl"), str(tmp_path / "labels.jsonl"),
        "--source", "judge:gpt-4", "--rubric", "compliance", "--out", str(tmp_path / "rm"),
        "--harden", "--harden-rounds", "1", "--harden-target", TARGET, "--harden-budget", "10",
    ]  # fmt: skip
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert "hardened" in done.output
    record = check_model_dir(tmp_path / "rm")["card"]["harden"]
    assert record["config"]["rounds"] == 1 and len(record["rounds"]) <= 2
    for given in (["--harden", "--harden-bound", "2"], ["--harden-bound", "2"]):  # implies it
        bad = run_tinyjudge(*args[:-7], *given)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert "--harden-bound must be a finite number in [0, 1], got 2" in bad.stderr
    bad = run_tinyjudge(*args[:-7], "--ensemble", "0")
    assert bad.returncode == 2 and "--ensemble must be >= 1, got 0" in bad.stderr, bad.stderr
    assert list(read_jsonl(tmp_path / "items.jsonl", Item))  # inputs untouched


@pytest.mark.parametrize(
    ("before", "after", "worse"),
    [
        ({"heading": 0.033, "padding": 0.0}, {"heading": 0.105, "padding": 0.123},
         {"padding": [0.0, 0.123], "heading": [0.033, 0.105]}),
        ({"bold": 0.2}, {"bold": 0.1}, {}),
        ({"bold": 0.2}, {"bold": 0.2, "new_edit": 0.5}, {}),
    ],
    ids=["two-rose-worst-first", "fell", "unchanged-and-unmeasured-before"],
)  # fmt: skip
def test_worse_edits_names_each_rise_worst_first(before, after, worse) -> None:
    got = worse_edits({"edit_flips": before}, {"edit_flips": after})
    assert got == worse and list(got) == list(worse)


@pytest.mark.parametrize("if_worse", ["plain", "keep"])
def test_the_plain_model_is_kept_when_it_beats_every_round(xs: Imported, halves, if_worse) -> None:
    """A tier whose fit goes wrong on the augmented pool (it learns the labels of the
    copies rotated one class over): every round is worse than the plain model on the
    validation figures, so the default keeps the plain model and says so; ``keep``
    keeps the best round as before."""
    train, val = halves
    ts = training_set(train, xs.labels, "judge:gpt-4", "compliance")
    rubric = load_rubric("compliance")
    n = len(ts.items)

    def fit(items: list[Item], Y: np.ndarray):
        bad = np.vstack([Y[:n], np.roll(Y[n:], 1, axis=1)])  # the copies' labels rotated
        return LinearRM("compliance").fit(items, bad)

    hardened = Hardened(HardenConfig(target=TARGET, rounds=1, budget=8, if_worse=if_worse))
    hardened.fit(fit, ts.items, ts.y_soft, val[:120], rubric, "metadata.prompt_id")
    record = hardened.record_
    plain = (record["before"]["best_search_flip"], record["before"]["worst_format_flip"])
    rounds = [(r["best_search_flip"], r["worst_format_flip"]) for r in record["rounds"]]
    assert all(plain < r for r in rounds), (plain, rounds)  # the setup: every round worse
    if if_worse == "plain":
        assert record["kept_round"] is None and record["after"] == record["before"]
        assert hardened.model_.card_["n_train"] == n  # the plain fit, on the answers alone
    else:
        assert record["kept_round"] in range(len(rounds))
        assert hardened.model_.card_["n_train"] > n
