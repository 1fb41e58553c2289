"""Scoring on a local Ray cluster gives exactly the single-process labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.importers import run_import
from tinyjudge.demo import bundled_sample
from tinyjudge.distill import LinearRM, load_model
from tinyjudge.errors import TinyjudgeError

ray = pytest.importorskip("ray", reason="the ray extra is not installed")


@pytest.fixture(scope="module")
def local_ray():
    from tinyjudge.scale import init_ray

    init_ray(num_cpus=2)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_scoring_equals_single_process(local_ray, tmp_path: Path) -> None:
    from tinyjudge.scale import items_to_ray, labels_from_ray, score_dataset, score_items_on_ray

    imported = run_import("xstest", bundled_sample())
    teacher = {
        lab.item_id: lab.label
        for lab in imported.labels
        if lab.source == "judge:gpt-4" and lab.status == "ok"
    }
    items = [it for it in imported.items if it.id in teacher]
    LinearRM("compliance").fit(items, [teacher[it.id] for it in items]).save(tmp_path / "rm")
    model = load_model(tmp_path / "rm")
    subset = items[:300]
    expected = [lab.model_dump() for lab in model.score_items(subset)]

    got = score_items_on_ray(subset, tmp_path / "rm", actors=2, batch_size=32)
    assert [lab.model_dump() for lab in got] == expected

    ds = score_dataset(items_to_ray(subset[:40]), tmp_path / "rm", actors=1, batch_size=7)
    assert [lab.item_id for lab in labels_from_ray(ds)] == [it.id for it in subset[:40]]


def test_a_bad_model_dir_fails_before_ray_starts(tmp_path: Path, monkeypatch) -> None:
    import tinyjudge.scale as scale

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started for a model directory that cannot load")

    monkeypatch.setattr(scale, "init_ray", no_ray)
    (tmp_path / "m").mkdir()
    with pytest.raises(TinyjudgeError, match="not a tinyjudge model directory"):
        scale.score_file_on_ray(tmp_path / "items.jsonl", tmp_path / "m", tmp_path / "o.jsonl")


@pytest.mark.slow
def test_score_verb_on_ray_writes_the_same_labels(local_ray, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tinyjudge.cli import app
    from tinyjudge.datasets.jsonl import read_labels, write_jsonl

    imported = run_import("xstest", bundled_sample())
    items = imported.items[:60]
    teacher = {lab.item_id: lab.label for lab in imported.labels if lab.source == "human:final"}
    LinearRM("compliance").fit(items, [teacher[it.id] for it in items]).save(tmp_path / "rm")
    write_jsonl(tmp_path / "items.jsonl", items)
    args = ["score", str(tmp_path / "rm"), str(tmp_path / "items.jsonl"), "--batch-size", "16"]
    runner = CliRunner()
    plain = runner.invoke(app, [*args, "--out", str(tmp_path / "plain.jsonl")])
    on_ray = runner.invoke(app, [*args, "--out", str(tmp_path / "ray.jsonl"), "--ray", "local"])
    assert plain.exit_code == 0, plain.output
    assert on_ray.exit_code == 0, on_ray.output
    assert "scored on Ray" in on_ray.output
    assert read_labels(tmp_path / "ray.jsonl") == read_labels(tmp_path / "plain.jsonl")


@pytest.mark.slow
def test_judge_fans_out_on_ray_like_a_single_judge(local_ray, monkeypatch) -> None:
    from tinyjudge.judge import Judge
    from tinyjudge.scale import items_to_ray, judge_dataset, labels_from_ray
    from tinyjudge.testing import replay_server

    imported = run_import("xstest", bundled_sample())
    items = imported.items[:120]
    monkeypatch.setenv("OPENAI_API_KEY", "local-replay")  # read by each actor, never shipped
    with replay_server(
        imported.labels, source="judge:gpt-4", items=items, rubric="compliance"
    ) as server:
        kwargs = {"rubric": "compliance", "model": "gpt-4", "base_url": server.base_url}
        single = Judge(**kwargs).run(items)
        fanned = labels_from_ray(judge_dataset(items_to_ray(items), actors=2, **kwargs))
    assert [lab.model_dump() for lab in fanned] == [lab.model_dump() for lab in single]
    with pytest.raises(TinyjudgeError, match="OPENAI_API_KEY on every node"):
        judge_dataset(items_to_ray(items), api_key="sk-x", **kwargs)
