"""`tinyjudge distill` and `tinyjudge score` end to end, in a real subprocess."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import run_tinyjudge

from tinyjudge.datasets.importers import Imported
from tinyjudge.datasets.jsonl import read_labels, write_jsonl

_run = run_tinyjudge


def _distill(files: Path, tier: str, out: Path, *extra: str | Path):
    """``tinyjudge distill`` of the XSTest files' GPT-4 labels, grouped by prompt."""
    return _run(
        "distill",
        files / "items.jsonl",
        files / "labels.jsonl",
        "--source",
        "judge:gpt-4",
        "--rubric",
        "compliance",
        "--tier",
        tier,
        "--group-by",
        "metadata.prompt_id",
        *extra,
        "--out",
        out,
    )


@pytest.fixture(scope="module")
def files(xs: Imported, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("xs")
    write_jsonl(d / "items.jsonl", xs.items)
    write_jsonl(d / "labels.jsonl", xs.labels)
    return d


def test_distill_then_score(files: Path, tmp_path: Path) -> None:
    res = _distill(files, "linear", tmp_path / "m", "--name", "xs-lin", "--param", "C=5")
    assert res.returncode == 0, res.stderr
    assert "agreement with judge:gpt-4: accuracy" in res.stdout and "Cohen's kappa" in res.stdout
    meta = json.loads((tmp_path / "m" / "tinyjudge.json").read_text())
    assert meta["params"]["C"] == 5
    assert meta["card"]["teacher_source"] == "judge:gpt-4"
    assert meta["card"]["group_by"] == "metadata.prompt_id"
    assert 0.0 < meta["card"]["validation"]["cohen_kappa"] <= 1.0

    res = _run(
        "score",
        tmp_path / "m",
        files / "items.jsonl",
        "--out",
        tmp_path / "rm.jsonl",
        "--batch-size",
        "64",
    )
    assert res.returncode == 0, res.stderr
    labels = read_labels(tmp_path / "rm.jsonl")
    assert len(labels) == 500 and {lab.source for lab in labels} == {"rm:xs-lin"}
    assert not list(tmp_path.glob(".rm.jsonl.*"))  # no temporary file left behind


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            ["--source", "judge:gpt-5", "--rubric", "compliance"],
            "no labels with source .*pass one with --source",
        ),
        (["--source", "judge:gpt-4", "--rubric", "nope"], "unknown rubric 'nope'"),
        (
            ["--source", "judge:gpt-4", "--rubric", "compliance", "--tier", "forest"],
            "unknown tier 'forest'",
        ),
        (
            ["--source", "judge:gpt-4", "--rubric", "compliance", "--param", "depth=3"],
            r"unknown option 'depth' for the linear tier",
        ),
        (
            ["--source", "judge:gpt-4", "--rubric", "compliance", "--param", "C=abc"],
            r"--c must be a number for the linear tier, got 'abc'",
        ),
        (["--source", "judge:gpt-4", "--rubric", "compliance", "--param", "C"], "KEY=VALUE"),
    ],
    ids=["no-source", "no-rubric", "bad-tier", "bad-param", "param-not-a-number", "param-no-eq"],
)
def test_distill_errors_are_one_line_exit_2(files: Path, tmp_path: Path, args, match) -> None:
    res = _run(
        "distill", files / "items.jsonl", files / "labels.jsonl", *args, "--out", tmp_path / "m"
    )
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "error:" in res.stderr
    import re

    assert re.search(match, res.stderr)


def test_score_rejects_a_tampered_model(files: Path, tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    res = _run("score", tmp_path / "m", files / "items.jsonl", "--out", tmp_path / "o.jsonl")
    assert res.returncode == 2 and "not a tinyjudge model directory" in res.stderr


def test_distill_encoder_tier_from_the_cli(files: Path, tiny_bert: Path, tmp_path: Path) -> None:
    res = _distill(
        files,
        "encoder",
        tmp_path / "enc",
        "--param",
        f"base={tiny_bert}",
        "--param",
        "max_length=32",
        "--param",
        "epochs=1",
    )
    assert res.returncode == 0, res.stderr
    assert "epoch 1/1 done" in res.stderr  # training progress is shown
    assert "Cohen's kappa" in res.stdout
    assert (tmp_path / "enc" / "model.safetensors").is_file()
    assert json.loads((tmp_path / "enc" / "config.json").read_text())["id2label"] == {
        "0": "full_compliance",
        "1": "full_refusal",
        "2": "partial_refusal",
    }


@pytest.mark.parametrize(
    "method", ["people", "weighted", pytest.param("auto", marks=pytest.mark.slow)],
    ids=["people", "weighted", "auto"],
)  # fmt: skip
def test_distill_with_people(files: Path, tmp_path: Path, method: str) -> None:
    # the judge's and people's labels in two files, as `judge` and `import` write them
    labels = read_labels(files / "labels.jsonl")
    write_jsonl(
        tmp_path / "judge.jsonl", [lab for lab in labels if lab.source.startswith("judge:")]
    )
    write_jsonl(tmp_path / "human.jsonl", [lab for lab in labels if lab.source == "human:final"])
    res = _run(
        "distill", files / "items.jsonl", tmp_path / "judge.jsonl", tmp_path / "human.jsonl",
        "--source", "judge:gpt-4", "--human", "human:final", "--human-method", method,
        "--rubric", "compliance", "--group-by", "metadata.prompt_id", "--out", tmp_path / "m",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stdout.split())  # the console wraps long lines
    assert f"human:final and 400 judge:gpt-4 labels ({method})" in said  # training split
    assert "agreement with human:final on" in said
    card = json.loads((tmp_path / "m" / "tinyjudge.json").read_text())["card"]
    assert card["human_source"] == "human:final" and card["human_method"] == method
    assert card["validation"]["n_val_people"] > 0
    assert "people (label source): `human:final`" in (tmp_path / "m" / "README.md").read_text()
    # the default says what it chose and why: the cross-validated kappa of each candidate
    assert (
        re.search(r"chose \w+ by \d-fold cross-validation on people's rows", said) is not None
    ) is (method == "auto")


def test_distill_with_an_unknown_people_method_is_one_line(files: Path, tmp_path: Path) -> None:
    res = _distill(files, "linear", tmp_path / "m", "--human", "human:final",
                   "--human-method", "magic")  # fmt: skip
    assert res.returncode == 2
    assert "unknown --human-method 'magic'" in " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr


@pytest.fixture(scope="module")
def twice(files: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The items file with its third item repeated at the end."""
    d = tmp_path_factory.mktemp("dup")
    lines = (files / "items.jsonl").read_text().splitlines(keepends=True)
    (d / "items.jsonl").write_text("".join([*lines, lines[2]]))
    return d / "items.jsonl"


def test_distill_refuses_duplicate_ids(files: Path, twice: Path, tmp_path: Path) -> None:
    res = _run(
        "distill", twice, files / "labels.jsonl", "--source", "judge:gpt-4",
        "--rubric", "compliance", "--out", tmp_path / "m",
    )  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "appears twice (items 3 and 501); ids must be unique" in res.stderr
    assert not (tmp_path / "m").exists()


def test_score_refuses_duplicate_ids_and_its_own_input(files: Path, twice: Path, tmp_path) -> None:
    model = tmp_path / "m"
    assert _distill(files, "linear", model).returncode == 0
    res = _run("score", model, twice, "--out", tmp_path / "o.jsonl")
    assert res.returncode == 2 and len(res.stderr.split()) and res.stderr.strip().count("\n") == 0
    assert "appears twice (items 3 and 501)" in res.stderr
    assert not (tmp_path / "o.jsonl").exists()
    before = twice.read_bytes()
    res = _run("score", model, twice, "--out", twice)
    assert res.returncode == 2 and "is the items file; writing there would replace it" in res.stderr
    assert twice.read_bytes() == before


def test_score_file_names_its_parameters(files: Path, twice: Path, tmp_path: Path) -> None:
    """The library's refusals name Python parameters (out_path), not the CLI's flags."""
    from tinyjudge.distill import load_model, score_file
    from tinyjudge.errors import TinyjudgeError, UsageError

    model_dir = tmp_path / "m"
    assert _distill(files, "linear", model_dir).returncode == 0
    model = load_model(model_dir)
    before = twice.read_bytes()
    with pytest.raises(UsageError, match=r"^out_path .* is the items file; .* another out_path$"):
        score_file(model, twice, twice)
    assert twice.read_bytes() == before
    with pytest.raises(TinyjudgeError, match=r"items.jsonl: item id .* appears twice \(items 3"):
        score_file(model, twice, tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()
    assert score_file(model, files / "items.jsonl", tmp_path / "o.jsonl", batch_size=7) == 500
