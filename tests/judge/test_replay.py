"""Replay: recorded judgments answered through the same OpenAI-compatible path, without a key."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import pair, run_cli, single

from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.errors import TinyjudgeError
from tinyjudge.judge import Judge
from tinyjudge.records import Label
from tinyjudge.testing import replay_server


def test_cli_replays_xstest_gpt4_labels(
    xstest_sample: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    imported = run_import("xstest", xstest_sample)
    items, labels = tmp_path / "items.jsonl", tmp_path / "labels.jsonl"
    write_jsonl(items, imported.items[:80])
    write_jsonl(labels, imported.labels)
    out = tmp_path / "judge.jsonl"
    rc, stdout, _ = run_cli(
        monkeypatch, capsys, "judge", items, "--rubric", "compliance", "--replay", labels,
        "--replay-source", "judge:gpt-4", "--out", out, "--concurrency", "8", "--no-progress",
    )  # fmt: skip
    assert rc == 0 and "80 items: 80 labelled, 0 unscored" in stdout
    recorded = {lab.item_id: lab.label for lab in imported.labels if lab.source == "judge:gpt-4"}
    got = read_labels(out)
    assert {lab.source for lab in got} == {"judge:replay-gpt-4"}
    assert [lab.label for lab in got] == [recorded[it.id] for it in imported.items[:80]]
    # Run again: everything from the cache.
    rc, stdout, _ = run_cli(
        monkeypatch, capsys, "judge", items, "--rubric", "compliance", "--replay", labels,
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert rc == 0 and "0 calls, 80 cache hits" in stdout


def test_recorded_unscored_labels_come_out_unscored(data_dir) -> None:
    imported = run_import("xstest", data_dir("xstest"))
    gpt4 = [lab for lab in imported.labels if lab.source == "judge:gpt-4"]
    failed = {lab.item_id for lab in gpt4 if lab.status == "unscored"}
    assert len(failed) >= 5
    chosen = [it for it in imported.items if it.id in failed] + imported.items[:20]
    with replay_server(gpt4, "judge:gpt-4", items=chosen, rubric="compliance") as srv:
        labels = Judge("compliance", "replay-gpt-4", base_url=srv.base_url).run(chosen)
    by_id = {lab.item_id: lab for lab in gpt4}
    for lab in labels:
        rec = by_id[lab.item_id]
        assert lab.status == rec.status
        if rec.status == "unscored":
            assert lab.raw == rec.raw and "no verdict found" in (lab.reason or "")
        else:
            assert lab.label == rec.label


def test_pairwise_replay_keeps_the_recorded_orders() -> None:
    recorded = [
        Label(item_id="pair-0", rubric="instruction_following", source="judge:x", label="b",
              orders={"ab": "b", "ba": "b"}, consistent=True),
        Label(item_id="pair-1", rubric="instruction_following", source="judge:x", label="tie",
              orders={"ab": "a", "ba": "b"}, consistent=False),
    ]  # fmt: skip
    pairs = [pair(0), pair(1)]
    with replay_server(recorded, "judge:x", items=pairs, rubric="instruction_following") as srv:
        judge = Judge("instruction_following", "replay-x", base_url=srv.base_url)
        same, flipped = judge.run(pairs)
    assert (same.label, same.orders, same.consistent) == ("b", {"ab": "b", "ba": "b"}, True)
    assert (flipped.label, flipped.orders, flipped.consistent) == (
        "tie",
        {"ab": "a", "ba": "b"},
        False,
    )
    assert judge.summary.flip_rate == pytest.approx(0.5)


def test_an_item_without_a_recorded_label_is_unscored() -> None:
    recorded = [Label(item_id="it-1", rubric="compliance", source="judge:x", label="full_refusal")]
    items = [single(1), single(2)]
    with replay_server(recorded, "judge:x", items=items, rubric="compliance") as srv:
        known, unknown = Judge("compliance", "r", base_url=srv.base_url).run(items)
    assert known.label == "full_refusal"
    assert unknown.status == "unscored" and "no recorded label for item 'it-2'" in (
        unknown.reason or ""
    )


def test_replay_source_must_exist(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    write_jsonl(
        path, [Label(item_id="a", rubric="compliance", source="human:x", label="full_refusal")]
    )
    with pytest.raises(
        TinyjudgeError, match=r"no labels from source 'judge:gpt-4'; it holds \['human:x'\]"
    ):
        with replay_server(path, "judge:gpt-4", items=[], rubric="compliance"):
            pass
