"""``tinyjudge calibrate`` on a real distilled model and on a judge's labels (XSTest sample)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support import XSTEST_SAMPLE, is_slice, run_tinyjudge

from tinyjudge.calibrate import TemperatureScaling, load_calibrator
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.distill import distill, load_model

_tinyjudge = run_tinyjudge


@pytest.fixture
def xs_files(xstest_sample: Path, tmp_path: Path) -> tuple[Path, Path]:
    result = run_import("xstest", xstest_sample)
    write_jsonl(tmp_path / "items.jsonl", result.items)
    write_jsonl(tmp_path / "labels.jsonl", result.labels)
    return tmp_path / "items.jsonl", tmp_path / "labels.jsonl"


@pytest.fixture
def model_dir(xs_files, tmp_path: Path) -> Path:
    items_path, labels_path = xs_files
    res = distill(
        read_items(items_path), read_labels(labels_path), "judge:gpt-4", "compliance",
        group_by="metadata.prompt_id",
    )  # fmt: skip
    return res.model.save(tmp_path / "rm")


def test_calibrate_model_dir_then_load_applies_it(
    xs_files, model_dir: Path, tmp_path: Path
) -> None:
    items_path, labels_path = xs_files
    out = tmp_path / "rm-cal"
    proc = _tinyjudge(
        "calibrate", model_dir, items_path, labels_path, "--human", "human:final",
        "--method", "temperature", "--group-by", "metadata.prompt_id", "--n-boot", "50",
        "--out", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "ECE" in proc.stdout
    assert not (model_dir / "calibration.json").exists()  # the original is left alone
    state = json.loads((out / "calibration.json").read_text())
    assert state["method"] == "temperature"
    assert state["classes"] == ["full_compliance", "full_refusal", "partial_refusal"]
    card = (out / "README.md").read_text()
    assert card.count("## Calibration against people") == 1
    assert "| ECE (equal-width bins) |" in card and "calibration.png" in card
    assert (out / "calibration.png").read_bytes()[:4] == b"\x89PNG"
    # load_model applies the calibrator: calibrated = calibrator(raw)
    items = read_items(items_path)[:40]
    raw = load_model(out, calibrated=False).predict_proba(items)
    cooked = load_model(out).predict_proba(items)
    cal = load_calibrator(out)
    assert isinstance(cal, TemperatureScaling)
    assert np.allclose(cooked, cal.predict_proba(raw), atol=1e-9)
    assert np.allclose(cooked.sum(axis=1), 1.0) and not np.allclose(cooked, raw)
    # calibrating again replaces the card's section instead of stacking a second one
    proc = _tinyjudge(
        "calibrate", out, items_path, labels_path, "--human", "human:final",
        "--method", "isotonic", "--n-boot", "20",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    card = (out / "README.md").read_text()
    assert card.count("## Calibration against people") == 1 and "`isotonic` scaling" in card


def test_calibrate_a_judge_source_writes_honest_calibrated_labels(xs_files, tmp_path) -> None:
    items_path, labels_path = xs_files
    out = tmp_path / "judge-cal"
    proc = _tinyjudge(
        "calibrate", labels_path, "--source", "judge:gpt-4", "--human", "human:final",
        "--items", items_path, "--group-by", "metadata.prompt_id", "--n-boot", "50",
        "--out", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["after"]["ece"]["value"] < metrics["before"]["ece"]["value"]
    assert metrics["after"]["brier"]["value"] < metrics["before"]["brier"]["value"]
    new = read_labels(out / "labels.jsonl")
    assert {lab.source for lab in new} == {"judge:gpt-4+temperature"}
    judge = [lab for lab in read_labels(labels_path) if lab.source == "judge:gpt-4"]
    assert len(new) == len(judge)  # unscored verdicts are carried over, still unscored
    assert sum(lab.status != "ok" for lab in new) == sum(lab.status != "ok" for lab in judge)
    soft = [lab for lab in new if lab.status == "ok"]
    assert all(abs(sum(lab.probs.values()) - 1) < 1e-9 for lab in soft)
    assert all(max(lab.probs.values()) < 1.0 for lab in soft)  # no longer one-hot


@pytest.mark.parametrize("folds", ["--folds", "--n-splits"])
def test_the_command_gives_the_librarys_calibration(
    xs_files, model_dir: Path, tmp_path: Path, folds: str
) -> None:
    # the command calibrates through tinyjudge.calibrate: the model it writes carries the
    # calibration the library gives in memory with the same options, folds under either flag
    from tinyjudge.calibrate import CalibrateConfig, calibrate

    items_path, labels_path = xs_files
    out = tmp_path / "rm-cal"
    proc = _tinyjudge(
        "calibrate", model_dir, items_path, labels_path, "--human", "human:final",
        "--group-by", "metadata.prompt_id", "--n-boot", "30", folds, "4", "--out", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    saved = load_model(out)
    config = CalibrateConfig(group_by="metadata.prompt_id", n_boot=30, n_splits=4)
    assert saved.calibration.config == config and saved.calibration.human == "human:final"
    in_memory = calibrate(
        load_model(model_dir, calibrated=False), read_items(items_path),
        read_labels(labels_path), "human:final", config=config,
    )  # fmt: skip
    assert saved.calibration == in_memory.calibration
    assert saved.source == in_memory.source and saved.source.endswith("+cal")
    assert "4 folds grouped by `metadata.prompt_id`" in (out / "README.md").read_text()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--human", "human:final", "--method", "beta"], "unknown calibration method 'beta'"),
        (["--human", "human:nobody"], "no labels from human source 'human:nobody'"),
    ],
    ids=["method", "human"],
)
def test_calibrate_cli_errors_are_one_line(xs_files, model_dir, args, match: str) -> None:
    items_path, labels_path = xs_files
    proc = _tinyjudge("calibrate", model_dir, items_path, labels_path, *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0]


def test_calibrate_cli_usage_errors(xs_files, tmp_path: Path) -> None:
    _, labels_path = xs_files
    proc = _tinyjudge("calibrate", labels_path, "--human", "human:final")
    assert proc.returncode == 2 and "expected MODEL_DIR ITEMS LABELS" in proc.stderr
    proc = _tinyjudge("calibrate", labels_path, "--human", "human:final", "--source", "judge:x")
    assert proc.returncode == 2 and "--source needs --out" in proc.stderr


def test_real_reward_model_calibrated_on_prompts_it_never_saw(data_dir, tmp_path) -> None:
    # Distill GPT-4's XSTest verdicts into the linear tier on 3/5 of the prompts, then
    # calibrate it against people on the other 2/5 (cross-fitted by prompt): every method
    # must bring held-out ECE and Brier down on this real, graded source.
    import zlib

    from tinyjudge.calibrate import calibrate_model

    # Without ../shared: the bundled slice (100 prompts) and the demo's sample (the other
    # 100 prompts in every three) together; the slice alone leaves too few held-out prompts.
    root = data_dir("xstest")
    items, labels = [], []
    for src in [root, XSTEST_SAMPLE] if is_slice(root) else [root]:
        got = run_import("xstest", src)
        items, labels = items + got.items, labels + got.labels
    assert len({it.id for it in items}) == (1000 if is_slice(root) else 1500)
    train = [it for it in items if zlib.crc32(it.metadata["prompt_id"].encode()) % 5 < 3]
    held = [it for it in items if zlib.crc32(it.metadata["prompt_id"].encode()) % 5 >= 3]
    model = distill(train, labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id")
    rm = load_model(model.model.save(tmp_path / "rm"), calibrated=False)
    for method in ("temperature", "vector", "platt", "isotonic"):
        r = calibrate_model(
            rm, held, labels, human="human:final", method=method,
            group_by="metadata.prompt_id", n_boot=20,
        ).summary()  # fmt: skip
        assert r["n"] == len(held)
        assert r["after"]["ece"]["value"] < r["before"]["ece"]["value"], method
        assert r["after"]["brier"]["value"] < r["before"]["brier"]["value"], method


def test_a_falsy_group_value_is_a_group(xs_files, tmp_path: Path) -> None:
    # metadata.safe is True or False: two groups. False must not read as "no group",
    # which made every unsafe item its own group and let folds split that group.
    from tinyjudge.calibrate import calibrate_source
    from tinyjudge.errors import TinyjudgeError

    items_path, labels_path = xs_files
    with pytest.raises(TinyjudgeError, match="n_splits=3 needs at least as many groups, got 2"):
        calibrate_source(
            read_labels(labels_path), source="judge:gpt-4", human="human:final",
            items=read_items(items_path), group_by="metadata.safe", n_splits=3, n_boot=10,
        )  # fmt: skip


@pytest.fixture
def calibrated_source(tmp_path: Path) -> Path:
    """A source whose probabilities are already calibrated: isotonic can only overfit."""
    from tinyjudge.records import Label

    rng = np.random.default_rng(0)
    names = ["full_compliance", "full_refusal", "partial_refusal"]
    true = rng.dirichlet(np.full(3, 0.7), 200)
    y = (rng.random(200)[:, None] > np.cumsum(true, axis=1)).sum(axis=1)
    labels = []
    for i in range(200):
        probs = dict(zip(names, true[i].tolist(), strict=True))
        labels += [
            Label(item_id=f"i{i}", rubric="compliance", source="judge:x", label=names[int(
                true[i].argmax())], probs=probs),
            Label(item_id=f"i{i}", rubric="compliance", source="human:final", label=names[y[i]]),
        ]  # fmt: skip
    write_jsonl(tmp_path / "labels.jsonl", labels)
    return tmp_path / "labels.jsonl"


@pytest.mark.parametrize("if_worse", ["identity", "refuse", "keep"])
def test_calibration_that_makes_things_worse_is_not_applied(
    calibrated_source: Path, tmp_path: Path, if_worse: str, cli
) -> None:
    out = tmp_path / "out"
    proc = cli(
        "calibrate", calibrated_source, "--source", "judge:x", "--human", "human:final",
        "--out", out, "--method", "isotonic", "--n-boot", "10", "--if-worse", if_worse,
        env={"COLUMNS": "400"},
    )  # fmt: skip
    if if_worse == "refuse":
        assert proc.returncode == 2
        assert re.search(
            r"isotonic calibration makes held-out NLL .* "
            r"worse than none; method '\w+' is better on this data .*; --if-worse keep",
            proc.stderr,
        ), proc.stderr
        assert not (out / "calibration.json").exists()
        return
    assert proc.returncode == 0, proc.stderr
    got = json.loads((out / "metrics.json").read_text())
    assert "nll" in got["check"]["worse_than_none"]
    assert "warning: isotonic calibration makes held-out NLL" in proc.stdout
    assert got["applied"] is (if_worse == "keep")
    assert (out / "calibration.json").exists() is (if_worse == "keep")
    assert (out / "labels.jsonl").exists() is (if_worse == "keep")


def test_model_card_says_when_no_calibration_is_applied(xs_files, model_dir: Path) -> None:
    from tinyjudge.calibrate import calibrate_model, save_model_calibration

    items_path, labels_path = xs_files
    (model_dir / "calibration.json").write_text("{}")  # a stale one must not survive
    done = calibrate_model(
        load_model(model_dir, calibrated=False), read_items(items_path), read_labels(labels_path),
        human="human:final", method="isotonic", group_by="metadata.prompt_id", n_boot=20,
    )  # fmt: skip
    save_model_calibration(done, model_dir)
    got = done.summary()
    card = (model_dir / "README.md").read_text()
    assert "Every method on the same folds: identity NLL" in card
    if got["applied"]:
        assert "Calibrated with `isotonic` scaling" in card
        assert load_calibrator(model_dir) is not None
    else:
        assert "Not calibrated: `isotonic` scaling" in card
        assert not (model_dir / "calibration.json").exists()
