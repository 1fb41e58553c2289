"""Hinted labels as rows TRL's self-distillation trainers read: the targeted answer, the
prompt folded to end on a user turn, the checks, and the shuffled control."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import make_label, real_data, run_tinyjudge, tinyjudge_command

from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.errors import UsageError
from tinyjudge.hints import (
    HintsConfig,
    derangement,
    hint_rows,
    shuffle_hints,
    tool_error_hints,
    trl_dataset,
)
from tinyjudge.records import Hint, Item, Label, Message

J = "judge:test"
CALL = {"id": "c1", "type": "function", "function": {"name": "book", "arguments": '{"n": 2}'}}
CALL2 = {"id": "c2", "type": "function", "function": {"name": "pay", "arguments": "{}"}}


def _agent() -> Item:
    return Item(
        id="a1",
        messages=[
            Message(role="system", content="You book flights."),
            Message(role="user", content="Book two seats on HAT229."),
            Message(role="assistant", content="", tool_calls=[CALL, CALL2]),
            Message(role="tool", tool_call_id="c1", content="Error: not enough seats"),
            Message(role="tool", tool_call_id="c2", content="ok"),
            Message(role="assistant", content="Done, booked."),
            Message(role="user", content="Thanks"),
        ],
        metadata={"ground_truth": "book flight HAT170 for two passengers in economy"},
    )


def _label(step: int | None, text: str = "Search another flight.", **kw: Any) -> Label:
    base: dict[str, Any] = {"item_id": "a1", "rubric": "tool_error_recovery", "source": J}
    base.update(label="repeats", step=step, hint=Hint(step=step, text=text))
    base.update(kw)
    return make_label(**base)


def test_a_failed_tool_result_targets_the_next_answer_and_results_fold() -> None:
    got = hint_rows([_agent()], [_label(3)])
    [row] = got.rows
    assert row["completion"] == [{"role": "assistant", "content": "Done, booked."}]
    assert (row["step"], row["answer_step"]) == (3, 5)
    system, user, call, folded = row["prompt"]
    assert system == {"role": "system", "content": "You book flights."}
    assert user == {"role": "user", "content": "Book two seats on HAT229."}
    assert call["role"] == "assistant" and [c["id"] for c in call["tool_calls"]] == ["c1", "c2"]
    assert folded == {
        "role": "user",
        "content": "[tool result of book]\nError: not enough seats\n\n[tool result of pay]\nok",
    }
    assert row["privileged_context"] == "Search another flight."
    assert (row["item_id"], row["source"], row["rubric"]) == ("a1", J, "tool_error_recovery")
    assert got.refused == [] and got.leaks == []


def test_a_step_at_an_answer_keeps_the_prompt_as_it_was() -> None:
    item = Item(
        id="a1",
        messages=[
            Message(role="user", content="hi"),
            Message(role="assistant", content="hello"),
            Message(role="user", content="book it"),
            Message(role="assistant", content="booked"),
        ],
    )
    [row] = hint_rows([item], [_label(3)], format="messages").rows
    assert row["prompt"] == [m.model_dump(include={"role", "content"}) for m in item.messages[:3]]
    assert row["hinted_prompt"] == [
        *row["prompt"],
        {"role": "user", "content": row["privileged_context"]},
    ]


def test_a_multi_agent_step_targets_the_blamed_agents_turn() -> None:
    """Who&When's agents speak as user or assistant; the blamed agent's turn is the answer,
    other agents' turns after its last one fold into one user turn."""
    msgs = [
        Message(role="assistant", name="Planner", content="Plan: find the table."),
        Message(role="user", name="Coder", content="print(1)"),
        Message(role="assistant", name="Reviewer", content="Looks fine."),
        Message(role="user", name="Coder", content="I made up the data."),
    ]
    item = Item(id="w", messages=msgs)
    lab = Label(item_id="w", rubric="failure_step", source="human:p", label="Coder", step=3,
                rationale="Coder invented data instead of loading it.")  # fmt: skip
    [row] = hint_rows([item], [lab], hint_from="rationale").rows
    assert row["completion"] == [{"role": "assistant", "content": "I made up the data."}]
    assert row["prompt"][:2] == [
        {"role": "assistant", "name": "Planner", "content": "Plan: find the table."},
        {"role": "user", "name": "Coder", "content": "print(1)"},
    ]
    assert row["prompt"][2] == {"role": "user", "content": "[Reviewer]\nLooks fine."}
    assert row["privileged_context"] == "Coder invented data instead of loading it."


@pytest.mark.parametrize(
    ("label", "kind", "message"),
    [
        (_label(7), "step_outside", "a1: step 7 is outside the trajectory (0..6)"),
        (_label(-1), "step_outside", "a1: step -1 is outside"),
        (_label(6), "no_answer", "a1: no answer of the assistant at or after step 6"),
        (_label(1, label=None, score=0.0), "no_answer", None),
        (_label(3, text="  "), "empty_hint", "a1: the hint is empty"),
        (_label(3, text="x" * 50), "long_hint", "the hint has 50 characters (max_hint_chars=40)"),
        (_label(None), "no_step", "a1: the label names no step"),
        (_label(3, item_id="zz"), "no_item", "zz: no item with this id"),
    ],
    ids=["after-end", "negative", "no-answer-after", "unchanged", "empty", "long", "no-step",
         "no-item"],
)  # fmt: skip
def test_refusals_name_the_item_and_are_counted(
    label: Label, kind: str, message: str | None
) -> None:
    got = hint_rows([_agent()], [label], max_hint_chars=40)
    if message is None:  # step 1 (a user turn) targets the tool-calling answer at step 2
        assert got.rows[0]["answer_step"] == 2 and got.rows[0]["completion"][0]["tool_calls"]
        return
    assert got.rows == [] and [r.kind for r in got.refused] == [kind]
    assert message in str(got.refused[0]) and "\n" not in str(got.refused[0])
    assert got.refused_by_kind == {kind: 1} and f"refused: {kind} 1" in got.summary()


def test_nothing_before_the_answer_and_an_answer_after_its_own_turn_are_refused() -> None:
    first = Item(id="f", messages=[Message(role="system", content="s"),
                                   Message(role="assistant", content="a")])  # fmt: skip
    twice = Item(id="t", messages=[Message(role="user", content="u"),
                                   Message(role="assistant", content="a"),
                                   Message(role="assistant", content="b")])  # fmt: skip
    labs = [_label(1, item_id="f"), _label(2, item_id="t")]
    got = hint_rows([first, twice], labs)
    assert [r.kind for r in got.refused] == ["empty_prompt", "ends_on_answer"]


def test_a_hint_that_copies_the_expected_answer_is_flagged_or_dropped() -> None:
    leak = _label(3, text="Book flight HAT170 for two passengers, economy.")
    honest = _label(3, text="Check another flight for two.")
    flagged = hint_rows([_agent()], [leak, honest])
    assert len(flagged.rows) == 2 and [str(x) for x in flagged.leaks] == [
        "a1: the hint at step 3 copies metadata.ground_truth"
    ]
    assert "leaks flagged: 1" in flagged.summary()
    dropped = hint_rows([_agent()], [leak, honest], leaks="drop")
    assert [r["privileged_context"] for r in dropped.rows] == ["Check another flight for two."]
    assert [r.kind for r in dropped.refused] == ["leak"]
    # a shorter n-gram catches a shorter copy
    assert hint_rows([_agent()], [honest], leak_ngram=2).leaks != []


def test_a_rubric_reference_counts_as_an_expected_answer(tmp_path: Path) -> None:
    import yaml

    from tinyjudge.rubric import load_rubric

    data = load_rubric("tool_error_recovery").model_dump(mode="json", by_alias=True)
    data["references"] = [{"name": "fix", "from": "metadata.fix"}]
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    item = _agent().model_copy(update={"metadata": {"fix": "rebook on HAT170 tomorrow morning"}})
    lab = _label(3, text="Just rebook on HAT170 tomorrow morning.", rubric=str(path))
    assert [x.target for x in hint_rows([item], [lab]).leaks] == ["reference fix"]


@pytest.mark.parametrize("n", [2, 3, 4, 7, 50])
def test_derangement_moves_every_index(n: int) -> None:
    for seed in range(20):
        p = derangement(n, seed)
        assert sorted(p) == list(range(n)) and all(p[i] != i for i in range(n))


def test_the_shuffled_control_moves_every_hint_and_keeps_the_rest() -> None:
    items = [_agent().model_copy(update={"id": f"a{i}"}) for i in range(5)]
    labs = [_label(3, item_id=f"a{i}", text=f"hint number {i}") for i in range(5)]
    plain = hint_rows(items, labs, format="messages").rows
    control = hint_rows(items, labs, format="messages", control="shuffled", seed=3).rows
    assert [r["item_id"] for r in control] == [r["item_id"] for r in plain]
    assert sorted(r["privileged_context"] for r in control) == sorted(
        r["privileged_context"] for r in plain
    )
    for before, after in zip(plain, control, strict=True):
        assert after["privileged_context"] != before["privileged_context"]
        assert after["hint_item_id"] != after["item_id"]
        assert after["hinted_prompt"][-1]["content"] == after["privileged_context"]
        assert after["prompt"] == before["prompt"] and after["completion"] == before["completion"]
    assert shuffle_hints(plain[:1]) == [{**plain[0], "hint_item_id": "a0", "hint_step": 3}]


def test_config_checks_its_fields() -> None:
    with pytest.raises(UsageError, match=r"format must be one of 'hints', 'trl', 'messages'"):
        HintsConfig(format="sharegpt")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"max_hint_chars must be a finite number in \[1,"):
        hint_rows([], [], max_hint_chars=0)
    with pytest.raises(UsageError, match=r"unknown option 'shuffle' for HintsConfig"):
        hint_rows([], [], shuffle=True)


def _check_against_item(row: dict[str, Any], item: Item) -> None:
    """Every exported row is the item's own conversation up to its answer."""
    k = row["answer_step"]
    assert k >= row["step"]
    answer = item.messages[k]
    assert row["completion"][0]["content"] == answer.text
    assert row["completion"][0]["role"] == "assistant"
    prompt = row["prompt"]
    assert prompt[-1]["role"] == "user"
    kept = prompt if prompt[-1] == _plain(item.messages[len(prompt) - 1]) else prompt[:-1]
    assert [m["content"] for m in kept] == [m.text for m in item.messages[: len(kept)]]
    if kept is not prompt:  # the folded turn holds each later turn's text
        for m in item.messages[len(kept) : k]:
            assert m.text in prompt[-1]["content"]


def _plain(m: Message) -> dict[str, Any]:
    from tinyjudge.hints._rows import message_dict

    return message_dict(m)


def test_real_who_and_when_and_tau_bench_rows_match_their_items() -> None:
    ww_dir, tb_dir = real_data("who_and_when"), real_data("tau_bench")
    if ww_dir is None or tb_dir is None:
        pytest.skip("who_and_when / tau_bench: neither ../shared/data nor the bundled slices")
    ww, tb = run_import("who_and_when", ww_dir), run_import("tau_bench", tb_dir)
    people = hint_rows(ww.items, ww.labels, hint_from="rationale")
    rule = hint_rows(tb.items, tool_error_hints(tb.items))
    assert people.rows and rule.rows
    by_id = {it.id: it for it in [*ww.items, *tb.items]}
    for row in people.rows + rule.rows:
        _check_against_item(row, by_id[row["item_id"]])
    for row in rule.rows:  # a failed tool call's step targets the answer after it
        item = by_id[row["item_id"]]
        assert item.messages[row["step"]].role == "tool" and row["answer_step"] > row["step"]
        assert "[tool result of " in row["prompt"][-1]["content"]
    n = len(people.rows) + len(people.refused)
    assert n == sum(1 for lab in ww.labels if lab.status == "ok" and lab.rationale)
    data = trl_dataset(tb.items, tool_error_hints(tb.items))
    assert data.num_rows == len(rule.rows) and data[0]["prompt"][-1]["role"] == "user"


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_cli_writes_trl_rows_with_the_summary_and_refusals(tmp_path: Path) -> None:
    items, labels = tmp_path / "items.jsonl", tmp_path / "labels.jsonl"
    write_jsonl(items, [_agent()])
    write_jsonl(
        labels, [_label(3), _label(9), _label(3, text="Book flight HAT170 for two passengers")]
    )
    out = tmp_path / "rows.jsonl"
    done = run_tinyjudge("hints", labels, "--items", items, "--format", "trl", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "2 rows from 3 labels" in done.stdout and "step_outside 1" in done.stdout
    assert "leaks flagged: 1" in done.stdout
    assert "refused: a1: step 9 is outside the trajectory (0..6)" in done.stderr
    rows = _read(out)
    assert set(rows[0]) == {"prompt", "privileged_context", "completion", "item_id", "step",
                            "answer_step", "source", "rubric"}  # fmt: skip
    shuffled = tmp_path / "ctl.jsonl"
    done = run_tinyjudge("hints", labels, "--items", items, "--format", "messages",
                         "--control", "shuffled", "--out", shuffled)  # fmt: skip
    assert done.returncode == 0, done.stderr
    ctl = _read(shuffled)
    assert [r["privileged_context"] for r in ctl] == [r["privileged_context"] for r in rows][::-1]
    assert all("hinted_prompt" in r for r in ctl)


def test_cli_prints_its_summary_after_the_rows_it_refused(tmp_path: Path) -> None:
    items, labels = tmp_path / "items.jsonl", tmp_path / "labels.jsonl"
    write_jsonl(items, [_agent()])
    write_jsonl(labels, [_label(3), _label(9), _label(11)])
    # one stream, as a terminal shows both: the summary must not scroll away above the rows
    done = subprocess.run(
        [*tinyjudge_command(), "hints", str(labels), "--items", str(items), "--format", "trl",
         "--out", str(tmp_path / "rows.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    refused = [i for i, line in enumerate(lines) if line.startswith("refused: a1: step")]
    assert len(refused) == 2
    assert lines[-1].startswith("1 rows from 3 labels") and "step_outside 2" in lines[-1]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--format", "trl"], "error: --format trl needs --items"),
        (["--max-hint-chars", "0"], "error: --max-hint-chars must be a finite number in [1,"),
        (["--from", "notes"], "error: --from must be one of 'hint', 'rationale', got 'notes'"),
    ],
    ids=["no-items", "bad-range", "bad-from"],
)
def test_cli_refuses_bad_options_in_one_line(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, [_label(3)])
    done = run_tinyjudge("hints", labels, "--out", tmp_path / "o.jsonl", *flags)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_cli_exports_people_reasons_as_hints(tmp_path: Path) -> None:
    lab = Label(item_id="w", rubric="failure_step", source="human:p", label="Coder", step=2,
                rationale="Load the real table.")  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, [lab])
    out = tmp_path / "h.jsonl"
    done = run_tinyjudge("hints", labels, "--from", "rationale", "--out", out)
    assert done.returncode == 0, done.stderr
    assert _read(out) == [{"item_id": "w", "step": 2, "hint": "Load the real table.",
                           "source": "human:p", "rubric": "failure_step"}]  # fmt: skip
