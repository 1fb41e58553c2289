"""Trajectory length measurement: counts, the real MiniLM tokenizer, summary and figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support import is_slice

from tinyjudge.audit.lengths import (
    estimate_token_counter,
    item_lengths,
    length_summary,
    minilm_token_counter,
    plot_lengths,
)
from tinyjudge.datasets.importers.tau_bench import import_tau_bench
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Message, ToolCall, ToolFunction


def _call(i: int) -> ToolCall:
    return ToolCall(id=f"c{i}", function=ToolFunction(name="get", arguments='{"id": 1}'))


ITEMS = [
    Item(id="chat", messages=[Message(role="user", content="hello world"),
                              Message(role="assistant", content="hi there")]),
    Item(id="tools", messages=[
        Message(role="user", content="book it"),
        Message(role="assistant", tool_calls=[_call(1), _call(2)]),
        Message(role="tool", tool_call_id="c1", content="Error: no seats"),
        Message(role="tool", tool_call_id="c2", content="ok"),
        Message(role="assistant", content="Done."),
    ]),
]  # fmt: skip


def test_item_lengths_hand_counted() -> None:
    got = item_lengths(ITEMS)
    assert got["messages"].tolist() == [2, 5]
    assert got["tool_calls"].tolist() == [0, 2]
    assert got["tool_errors"].tolist() == [0, 1]
    # "hello world" + "hi there"; "book it" + 2 x 'get({"id": 1})' joined by \n + ...
    call = 'get({"id": 1})'
    assert got["chars"].tolist() == [11 + 8, 7 + (2 * len(call) + 1) + 15 + 2 + 5]
    assert got["tokens_est"].tolist() == [3 + 2, 2 + 8 + 4 + 1 + 2]
    assert "tokens" not in got


def test_minilm_counter_counts_past_its_128_token_truncation() -> None:
    count = minilm_token_counter()
    assert count(["hello world", ""]) == [2, 0]
    long = " ".join(["trajectory"] * 600)
    (n,) = count([long])
    assert n == 600  # the shipped tokenizer.json would have stopped at 128
    got = item_lengths(ITEMS, count)
    assert got["tokens"][0] == 2 + 2  # "hello world", "hi there"


def test_minilm_counter_without_a_tokenizer_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TinyjudgeError, match=r"no tokenizer\.json"):
        minilm_token_counter(tmp_path)


def test_summary_stats_and_budget_shares() -> None:
    s = length_summary({"a": ITEMS, "b": ITEMS[:1]}, thresholds={"four": 4})
    assert s["a"]["n_items"] == 2
    assert s["a"]["messages"] == {
        "n": 2, "mean": 3.5, "min": 2, "median": 3.5,
        "p90": pytest.approx(4.7), "p99": pytest.approx(4.97), "max": 5, "total": 7,
    }  # fmt: skip
    assert s["a"]["tokens_est"]["share_over"] == {"four": 1.0}
    assert s["b"]["tokens_est"]["share_over"] == {"four": 1.0}
    assert "share_over" not in s["a"]["messages"]
    assert s["lengths"]["b"]["messages"] == [2]
    assert json.loads(json.dumps(s)) == s  # JSON-ready
    with pytest.raises(TinyjudgeError, match="at least one named set"):
        length_summary({})


def test_plot_writes_a_png_atomically(tmp_path: Path) -> None:
    s = length_summary({"a": ITEMS}, estimate_token_counter)
    out = plot_lengths(s, tmp_path / "fig" / "lengths.png", thresholds={"8": 8})
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in out.parent.iterdir()] == ["lengths.png"]


def test_tau_bench_lengths_match_the_source(data_dir) -> None:
    root = data_dir("tau_bench")
    path = root / "historical_trajectories" / "gpt-4o-airline.json"
    runs = json.loads(path.read_text(encoding="utf-8"))
    items = import_tau_bench(root).items
    got = item_lengths(items)
    assert got["messages"].tolist() == [len(r["traj"]) for r in runs]
    assert got["tool_calls"].tolist() == [
        sum(len(m.get("tool_calls") or []) for m in r["traj"]) for r in runs
    ]
    errors = [
        sum(m["role"] == "tool" and m["content"].startswith("Error") for m in r["traj"])
        for r in runs
    ]
    assert got["tool_errors"].tolist() == errors
    assert int(np.count_nonzero(got["tool_errors"])) == (3 if is_slice(root) else 36)
