"""A reward model is never measured on the people labels it learned from, unless on purpose.

``distill`` (on people's labels) and ``calibrate`` record which items' people labels
they used; ``score`` copies the record beside its labels; ``estimate`` and ``audit``
refuse, in one line, to compare the model with human labels on those items, and
``--allow-overlap`` says the overlap is on purpose.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import XSTEST_SAMPLE

from tinyjudge._people_items import (
    PEOPLE_KEY,
    LearnedFrom,
    PeopleOverlapError,
    card_people_method,
    check_people_overlap,
    learned_from_model_dir,
    people_digest,
    read_sidecars,
    sidecar_path,
    write_sidecar,
)
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.distill import distill, grouped_split

from .commands.test_cli import _one_error_line, run


def test_digest_tests_membership_exactly_without_the_ids() -> None:
    ids = [f"item-{k}" for k in range(300)]
    d = people_digest(ids + ids[:5])
    assert d["count"] == 300 and len(d["hashes"]) == 300
    assert not any(i in json.dumps(d) for i in ("item-1", "item-299"))
    learned = LearnedFrom("rm:x", "here", frozenset(d["hashes"]))
    assert learned.overlap(["item-3", "other", "item-299"]) == ["item-299", "item-3"]
    assert learned.overlap([f"new-{k}" for k in range(1000)]) == []
    assert people_digest(reversed(ids))["sha256"] == d["sha256"]
    assert people_digest(ids[1:])["sha256"] != d["sha256"]


def test_check_refuses_overlap_unless_allowed() -> None:
    learned = LearnedFrom("rm:x+cal", "m", calibrated=frozenset(people_digest(["a"])["hashes"]))
    with pytest.raises(PeopleOverlapError, match=r"rm:x\+cal was calibrated on .* of 1 of the 2 "
                       r"items human:final .*allow_overlap=True"):  # fmt: skip
        check_people_overlap(learned, "human:final", ["a", "b"])
    assert check_people_overlap(learned, "human:final", ["a", "b"], allow_overlap=True) == ["a"]
    assert check_people_overlap(learned, "human:final", ["b"]) == []


def test_the_record_beside_the_labels_keeps_the_card_s_people_method(tmp_path: Path) -> None:
    auto = {"human_method": "auto", "combination": {"chosen": "stack", "cv": {}}}
    assert card_people_method(auto) == "stack"  # auto's choice, not "auto"
    assert card_people_method({"human_method": "weighted"}) == "weighted"
    assert card_people_method({}) is None
    model = tmp_path / "rm"
    model.mkdir()
    (model / "tinyjudge.json").write_text(json.dumps({"name": "m", "card": auto}))
    learned = learned_from_model_dir(model, calibrated=False)
    assert (learned.source, learned.people_method) == ("rm:m", "stack")
    labels = tmp_path / "rm_labels.jsonl"
    write_sidecar(labels, learned)
    assert read_sidecars([labels])[0].people_method == "stack"
    old = json.loads(sidecar_path(labels).read_text())
    del old["people_method"]  # a sidecar written before the method was recorded
    sidecar_path(labels).write_text(json.dumps(old))
    assert read_sidecars([labels])[0].people_method is None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Items and labels of the XSTest sample; a model distilled on people's labels of the
    training prompts, and one distilled on the judge and calibrated on people's labels."""
    root = tmp_path_factory.mktemp("overlap")
    data = run_import("xstest", XSTEST_SAMPLE)
    write_jsonl(root / "items.jsonl", data.items)
    write_jsonl(root / "labels.jsonl", data.labels)
    people = distill(
        data.items, data.labels, "human:final", "compliance", group_by="metadata.prompt_id"
    )
    people.model.save(root / "rm-people")
    train, held = grouped_split(data.items, "metadata.prompt_id", val_fraction=0.5, seed=1)
    held_ids = {data.items[i].id for i in held}
    train_ids = {data.items[i].id for i in train}
    human = [lab for lab in data.labels if lab.source == "human:final"]
    write_jsonl(root / "human_held.jsonl", [lab for lab in human if lab.item_id in held_ids])
    write_jsonl(root / "human_train.jsonl", [lab for lab in human if lab.item_id in train_ids])
    judge = distill(
        data.items, data.labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id"
    )
    judge.model.save(root / "rm-judge")
    done = run(
        "calibrate", root / "rm-judge", root / "items.jsonl", root / "human_train.jsonl",
        "--human", "human:final", "--group-by", "metadata.prompt_id", "--if-worse", "keep",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"root": root}


def _score(runs: dict[str, Path], model: str, out: str, *flags: str) -> Path:
    root = runs["root"]
    path = root / out
    done = run("score", root / model, root / "items.jsonl", "--out", path, *flags)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.slow
def test_the_model_directories_record_the_people_items(runs: dict[str, Path]) -> None:
    root = runs["root"]
    card = json.loads((root / "rm-people" / "tinyjudge.json").read_text())["card"]
    assert card[PEOPLE_KEY]["count"] == card["n_train"]
    assert PEOPLE_KEY not in json.loads((root / "rm-judge" / "tinyjudge.json").read_text())["card"]
    cal = json.loads((root / "rm-judge" / "calibration.json").read_text())
    n_train_humans = sum(1 for _ in (root / "human_train.jsonl").open())
    assert cal[PEOPLE_KEY]["count"] == n_train_humans
    assert learned_from_model_dir(root / "rm-judge", calibrated=True).source.endswith("+cal")


@pytest.mark.slow
def test_estimate_refuses_people_labels_the_model_was_distilled_on(runs: dict[str, Path]) -> None:
    root = runs["root"]
    scored = _score(runs, "rm-people", "people_labels.jsonl")
    assert sidecar_path(scored).is_file()
    args = ("estimate", root / "labels.jsonl", scored, "--cheap", "rm:compliance-linear",
            "--human", "human:final", "--rubric", "compliance")  # fmt: skip
    line = _one_error_line(run(*args))
    assert "rm:compliance-linear was distilled on the people's labels of" in line
    assert "of the 500 items human:final labels here" in line and "--allow-overlap" in line
    allowed = run(*args, "--allow-overlap")
    assert allowed.returncode == 0, allowed.stderr
    assert "note: --allow-overlap: rm:compliance-linear learned from" in allowed.stderr


@pytest.mark.slow
def test_calibrated_on_counts_only_for_the_calibrated_source(runs: dict[str, Path]) -> None:
    root = runs["root"]
    cal = _score(runs, "rm-judge", "judge_cal.jsonl")
    raw = _score(runs, "rm-judge", "judge_raw.jsonl", "--uncalibrated")

    def estimate(labels: Path, cheap: str, human: str):
        return run("estimate", labels, root / human, "--cheap", cheap, "--human", "human:final",
                   "--rubric", "compliance")  # fmt: skip

    line = _one_error_line(estimate(cal, "rm:compliance-linear+cal", "human_train.jsonl"))
    assert "rm:compliance-linear+cal was calibrated on the people's labels" in line
    for labels, cheap, human in [
        (cal, "rm:compliance-linear+cal", "human_held.jsonl"),  # other items: fine
        (raw, "rm:compliance-linear", "human_train.jsonl"),  # calibration not applied: fine
    ]:
        done = estimate(labels, cheap, human)
        assert done.returncode == 0, done.stderr
        assert "cannot check" not in done.stderr


@pytest.mark.slow
def test_audit_refuses_and_model_dir_stands_in_for_the_sidecar(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    root = runs["root"]
    scored = tmp_path / "rm.jsonl"
    shutil.copy(_score(runs, "rm-people", "people_audit.jsonl"), scored)  # no sidecar beside
    args = ("audit", root / "labels.jsonl", scored, "--reference", "human:final",
            "--json", tmp_path / "a.json", "--n-boot", "20")  # fmt: skip
    unchecked = run(*args)
    assert unchecked.returncode == 0, unchecked.stderr
    assert "cannot check which people labels rm:compliance-linear learned from" in unchecked.stderr
    (tmp_path / "a.json").unlink()
    line = _one_error_line(run(*args, "--model-dir", root / "rm-people"))
    assert "rm:compliance-linear was distilled on" in line and "human:" in line
    assert not (tmp_path / "a.json").exists()
    allowed = run(*args, "--model-dir", root / "rm-people", "--allow-overlap")
    assert allowed.returncode == 0, allowed.stderr
