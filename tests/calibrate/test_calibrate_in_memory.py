"""The notebook flow on real data: calibrate in memory, save, load back equal.

A linear model distilled from GPT-4's verdicts on the bundled XSTest sample (60%
of the prompts) is calibrated against the final human label on the other 40%,
in memory; the calibrated model saves with its calibration and loads back with
the same source, the same probabilities and an equal calibration, while the
model it came from is left as it was.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from support import XSTEST_SAMPLE

import tinyjudge
from tinyjudge._digest import content_sha256
from tinyjudge.calibrate import (
    CalibrateConfig,
    Calibration,
    CalibrationWarning,
    calibrate,
    load_calibration,
    save_calibrator,
)
from tinyjudge.datasets.importers import Imported, run_import
from tinyjudge.distill import LinearRM, RewardModel, distill, grouped_split, load_model
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label
from tinyjudge.results import Interval

HUMAN = "human:final"
GROUP = "metadata.prompt_id"


@pytest.fixture(scope="module")
def xs() -> Imported:
    return run_import("xstest", XSTEST_SAMPLE)


@pytest.fixture(scope="module")
def split(xs: Imported) -> tuple[list[Item], list[Item]]:
    train_idx, held_idx = grouped_split(xs.items, GROUP, val_fraction=0.4, seed=0)
    return [xs.items[i] for i in train_idx], [xs.items[i] for i in held_idx]


@pytest.fixture(scope="module")
def rm(xs: Imported, split: tuple[list[Item], list[Item]]) -> RewardModel:
    train, _ = split
    result = distill(train, xs.labels, source="judge:gpt-4", rubric="compliance", group_by=GROUP)
    return result.model


@pytest.fixture(scope="module")
def calibrated(rm: RewardModel, xs: Imported, split) -> RewardModel:
    _, held = split
    return tinyjudge.calibrate(rm, held, xs.labels, human=HUMAN, group_by=GROUP, n_boot=50)


def test_calibrate_gives_a_new_calibrated_model_and_leaves_the_old_one(
    rm: RewardModel, xs: Imported, split
) -> None:
    _, held = split
    raw_before = rm.predict_proba(held)
    source = rm.source
    got = calibrate(rm, held, xs.labels, human=HUMAN, group_by=GROUP, n_boot=50)
    assert got is not rm and type(got) is type(rm)
    assert got.source == source + "+cal" and source.startswith("rm:")
    # the model given is as it was: no calibrator, no calibration, the same probabilities
    assert rm.source == source and rm.calibrator_ is None and rm.calibration_ is None
    assert np.array_equal(rm.predict_proba(held), raw_before)
    assert not np.allclose(got.predict_proba(held), raw_before)
    # the labels it writes carry the calibrated source
    assert {lab.source for lab in got.score_items(held[:5])} == {source + "+cal"}


def test_the_calibration_carries_what_it_was_fitted_with(calibrated: RewardModel) -> None:
    c = calibrated.calibration
    assert isinstance(c, Calibration) and c is calibrated.calibration_
    assert c.applied and c.calibrator is calibrated.calibrator_
    assert (c.method, c.human, c.n_splits, c.group_by) == ("temperature", HUMAN, 5, GROUP)
    assert c.config == CalibrateConfig(group_by=GROUP, n_boot=50)
    assert c.n == 200 and len(c.item_ids) == 200 and c.people is not None
    ece = c.metrics["after"]["ece"]
    assert isinstance(ece, Interval) and ece.low is not None and ece.low <= ece.value <= ece.high
    assert c.metrics["after"]["nll"].value < c.metrics["before"]["nll"].value


def test_save_and_load_give_back_an_equal_model(
    calibrated: RewardModel, split, tmp_path: Path
) -> None:
    _, held = split
    d = calibrated.save(tmp_path / "rm")
    assert {"calibration.json", "calibration.png", "README.md"} <= {p.name for p in d.iterdir()}
    back = tinyjudge.load_model(d)
    assert back.source == calibrated.source
    assert np.array_equal(back.predict_proba(held), calibrated.predict_proba(held))
    assert back.calibration == calibrated.calibration
    assert back.calibration.group_by == GROUP and back.calibration.human == HUMAN
    assert back.calibration.item_ids == ()  # the directory keeps their digest, not the ids
    assert back.calibration.people == calibrated.calibration.people
    # saved again (no ids, no groups at hand), it is the same calibration and card section
    again = tinyjudge.load_model(back.save(tmp_path / "again"))
    assert again.calibration == calibrated.calibration
    section = "<!-- tinyjudge:calibration:start -->"
    card, card_again = ((p / "README.md").read_text() for p in (d, tmp_path / "again"))
    assert card.split(section)[1] == card_again.split(section)[1]
    # a calibration.json from before the one interval form ("estimate", not "value") reads the same
    saved = json.loads((d / "calibration.json").read_text())
    for metrics in saved["fit"]["metrics"].values():
        for m, r in metrics.items():
            metrics[m] = {"estimate" if k == "value" else k: v for k, v in r.items()}
    saved["sha256"] = content_sha256(saved)  # as that version wrote it
    (d / "calibration.json").write_text(json.dumps(saved))
    assert tinyjudge.load_model(d).calibration == calibrated.calibration
    # uncalibrated, the same directory gives the raw model's probabilities and source
    raw = load_model(d, calibrated=False)
    assert raw.calibration_ is None and not raw.source.endswith("+cal")


def test_calibrations_differ_when_their_fit_does(
    rm: RewardModel, calibrated: RewardModel, xs: Imported, split
) -> None:
    _, held = split
    other = calibrate(rm, held, xs.labels, HUMAN, group_by=GROUP, n_boot=50, seed=1)
    assert other.calibration != calibrated.calibration
    assert other.calibration != "a calibration"


def test_config_and_keyword_options(rm: RewardModel, xs: Imported, split) -> None:
    _, held = split
    config = CalibrateConfig(method="platt", n_splits=4, n_boot=20, if_worse="keep")
    got = calibrate(rm, held, xs.labels, HUMAN, config=config, group_by=GROUP)
    c = got.calibration_
    assert c.config == config.replace(group_by=GROUP) and c.method == "platt" and c.n_splits == 4
    with pytest.raises(UsageError, match="unknown option 'folds'") as info:
        calibrate(rm, held, xs.labels, HUMAN, folds=3)
    assert info.value.param == "folds"
    with pytest.raises(UsageError, match="unknown calibration method 'beta'") as info:
        calibrate(rm, held, xs.labels, HUMAN, method="beta")
    assert info.value.param == "method"
    with pytest.raises(UsageError, match="n_splits must be") as info:
        CalibrateConfig(n_splits=1)
    assert info.value.param == "n_splits"


def test_a_calibration_made_worse_is_not_applied_and_says_so(
    rm: RewardModel, split, tmp_path: Path
) -> None:
    # people who label as the model's own probabilities say: the model is calibrated for
    # them, and isotonic regression on 200 items only adds noise (held-out NLL and ECE worse)
    _, held = split
    rng = np.random.default_rng(0)
    drawn = [rm.classes_[rng.choice(len(p), p=p)] for p in rm.predict_proba(held)]
    people = [
        Label(item_id=it.id, rubric="compliance", source=HUMAN, label=y)
        for it, y in zip(held, drawn, strict=True)
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibrationWarning)
        got = calibrate(rm, held, people, HUMAN, method="isotonic", n_boot=20)
    c = got.calibration_
    assert not c.applied and c.warning and "not applied" in c.warning
    assert [w.category for w in caught] == [CalibrationWarning]
    assert got.calibrator_ is None and got.source == rm.source
    d = got.save(tmp_path / "rm")
    assert not (d / "calibration.json").exists()
    assert "Not calibrated" in (d / "README.md").read_text()
    assert load_model(d).calibration_ is None


def test_a_calibrator_alone_is_saved_and_loaded(rm: RewardModel, split, tmp_path: Path) -> None:
    # calibration.json written before calibrations carried their fit: its calibrator applies
    _, held = split
    d = rm.save(tmp_path / "rm")
    cal = calibrate(rm, held, run_import("xstest", XSTEST_SAMPLE).labels, HUMAN, n_boot=20)
    save_calibrator(cal.calibrator_, d)
    back = load_model(d)
    assert back.calibration_ is None and load_calibration(d) is None
    assert back.source.endswith("+cal")
    assert np.array_equal(back.predict_proba(held), cal.predict_proba(held))
    # set by hand on a model, a calibrator is saved with it
    by_hand = LinearRM.__new__(LinearRM)
    by_hand.__dict__.update(rm.__dict__)
    by_hand.calibrator_ = cal.calibrator_
    again = load_model(by_hand.save(tmp_path / "by-hand"))
    assert np.array_equal(again.predict_proba(held), cal.predict_proba(held))
