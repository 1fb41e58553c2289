"""The agent-trajectory importers (SYCON, Who&When, tau-bench) on the real data (shared or sliced).

Every count is taken from the source files here, independently of the importer,
and compared after a round trip through items.jsonl / labels.jsonl.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from support import is_slice, run_tinyjudge

from tinyjudge.datasets.importers import IMPORTERS, run_import
from tinyjudge.datasets.importers.sycon import import_sycon
from tinyjudge.datasets.importers.tau_bench import import_tau_bench
from tinyjudge.datasets.importers.who_and_when import import_who_and_when
from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.errors import DataError
from tinyjudge.records import Item
from tinyjudge.rubric import load_rubric


def _round_trip(name: str, src: Path, tmp_path: Path) -> tuple[list[Item], list]:
    result = run_import(name, src)
    assert not result.bad
    write_jsonl(tmp_path / "items.jsonl", result.items)
    write_jsonl(tmp_path / "labels.jsonl", result.labels)
    return read_items(tmp_path / "items.jsonl"), read_labels(tmp_path / "labels.jsonl")


@pytest.mark.parametrize(
    ("name", "rubric"),
    [
        ("sycon", "pushback_under_pressure"),
        ("who_and_when", "failure_step"),
        ("tau_bench", "task_success"),
    ],
    ids=["sycon", "who_and_when", "tau_bench"],
)
def test_importer_is_registered_with_a_valid_rubric(name: str, rubric: str) -> None:
    assert IMPORTERS[name][1] == rubric
    assert load_rubric(rubric).id == rubric


# --- SYCON ------------------------------------------------------------------


def _sycon_source(root: Path) -> dict[str, tuple[list[dict], list[dict]]]:
    root = root / "false-presuppositions-setting"
    out = {}
    for model_dir in sorted((root / "output").iterdir()):
        with (model_dir / "prompt0.csv").open(encoding="utf-8", newline="") as fh:
            answers = list(csv.DictReader(fh))
        res = root / "results" / model_dir.name / "prompt0_result_all.csv"
        with res.open(encoding="utf-8", newline="") as fh:
            verdicts = list(csv.DictReader(fh))
        out[model_dir.name] = (answers, verdicts)
    return out


def test_sycon_round_trips_every_turn_and_label(data_dir, tmp_path: Path) -> None:
    root = data_dir("sycon")
    source = _sycon_source(root)
    items, labels = _round_trip("sycon", root, tmp_path)
    n_dialogues = sum(len(a) for a, _ in source.values())
    assert n_dialogues == 4 * _questions(root)
    assert len(items) == n_dialogues * 5
    # turn k shows k answers and k user messages (question + k-1 push-backs)
    assert sum(len(it.messages) for it in items) == n_dialogues * sum(2 * k for k in range(1, 6))
    expected = Counter()
    for _, verdicts in source.values():
        for row in verdicts:
            for k in range(1, 6):
                expected[{"1": "holds", "0": "caves"}[row[f"Response_{k}"]]] += 1
    assert Counter(lab.label for lab in labels) == expected
    assert {lab.source for lab in labels} == {"judge:gpt-4o"}
    assert {lab.rubric_hash for lab in labels} == {load_rubric("pushback_under_pressure").hash}
    assert Counter(it.metadata["answering_model"] for it in items) == {
        m: 5 * len(a) for m, (a, _) in source.items()
    }


def test_sycon_item_is_the_dialogue_up_to_answer_k(data_dir) -> None:
    sycon = data_dir("sycon")
    root = sycon / "false-presuppositions-setting"
    with (root / "data" / "push_back.csv").open(encoding="utf-8", newline="") as fh:
        push = list(csv.DictReader(fh))
    answers, verdicts = _sycon_source(sycon)["claude"]
    result = import_sycon(sycon)
    by_id = {it.id: it for it in result.items}
    labels = {lab.item_id: lab for lab in result.labels}
    item = by_id["sycon:claude:q4:t3"]
    assert [m.role for m in item.messages] == ["user", "assistant"] * 3
    assert item.messages[0].text == answers[3]["Question"]
    assert item.messages[2].text == push[3]["Pushback_1"]
    assert item.messages[4].text == push[3]["Pushback_2"]
    assert item.messages[5].text == answers[3]["Response_3"]
    assert item.metadata["question_id"] == 4
    assert item.metadata["turn"] == 3
    assert item.metadata["dialogue_id"] == "sycon:claude:q4"
    assert "cold wind" in item.metadata["presupposition"].lower()
    # row 4 of claude's results is 1,1,0,0,0
    assert verdicts[3]["Response_3"] == "0"
    assert labels["sycon:claude:q4:t2"].label == "holds"
    assert labels["sycon:claude:q4:t3"].label == "caves"


def _questions(sycon: Path) -> int:
    """Questions per model: 200 in the release, 10 in the bundled slice."""
    return 10 if is_slice(sycon) else 200


def _copy_sycon(sycon: Path, tmp_path: Path, models: tuple[str, ...] = ("claude",)) -> Path:
    src = sycon / "false-presuppositions-setting"
    dst = tmp_path / "sycon"
    shutil.copytree(src / "data", dst / "data")
    for m in models:
        shutil.copytree(src / "output" / m, dst / "output" / m)
        shutil.copytree(src / "results" / m, dst / "results" / m)
    return dst


def test_sycon_keeps_a_verdict_that_is_not_0_or_1_as_unscored(data_dir, tmp_path: Path) -> None:
    dst = _copy_sycon(data_dir("sycon"), tmp_path)
    res = dst / "results" / "claude" / "prompt0_result_all.csv"
    lines = res.read_text(encoding="utf-8").splitlines()
    lines[1] = "1,1,maybe,1,1,1"
    res.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = import_sycon(dst)
    assert len(result.items) == 5 * _questions(data_dir("sycon"))
    bad = [lab for lab in result.labels if lab.status == "unscored"]
    assert [(lab.item_id, lab.raw) for lab in bad] == [("sycon:claude:q1:t2", "maybe")]
    assert "1 (holds) or 0 (caves)" in (bad[0].reason or "")


def test_sycon_missing_results_file_is_an_error_or_skipped(data_dir, tmp_path: Path) -> None:
    dst = _copy_sycon(data_dir("sycon"), tmp_path, ("claude", "deepseek-v3"))
    (dst / "results" / "deepseek-v3" / "prompt0_result_all.csv").unlink()
    with pytest.raises(DataError, match="missing GPT-4o results for deepseek-v3"):
        import_sycon(dst)
    result = import_sycon(dst, skip_bad=True)
    assert len(result.items) == 5 * _questions(data_dir("sycon")) and len(result.bad) == 1


def test_sycon_question_that_does_not_match_push_back_is_an_error(data_dir, tmp_path: Path) -> None:
    dst = _copy_sycon(data_dir("sycon"), tmp_path)
    path = dst / "data" / "push_back.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[1]["Question"] = "A different question?"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(DataError, match=r"prompt0\.csv:\d+: question 2 differs"):
        import_sycon(dst)
    result = import_sycon(dst, skip_bad=True)
    assert len(result.bad) == 1 and len(result.items) == 5 * _questions(data_dir("sycon")) - 5


# --- Who&When ---------------------------------------------------------------


def test_who_and_when_round_trips_runs_messages_and_labels(data_dir, tmp_path: Path) -> None:
    root = data_dir("who_and_when")
    files = sorted((root / "Who&When").glob("*/*.json"))
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in files]
    items, labels = _round_trip("who_and_when", root, tmp_path)
    assert len(items) == len(runs) == (8 if is_slice(root) else 126)
    assert sum(len(it.messages) for it in items) == sum(len(r["history"]) for r in runs)
    assert len(labels) == len(runs)
    assert Counter((lab.label, lab.step) for lab in labels) == Counter(
        (r["mistake_agent"], int(r["mistake_step"])) for r in runs
    )
    assert {lab.source for lab in labels} == {"human:who_and_when"}
    assert all(lab.rationale for lab in labels)
    names = Counter(m.name for it in items for m in it.messages)
    assert names == Counter(m["name"] for r in runs for m in r["history"])


def test_who_and_when_steps_index_messages_from_zero(data_dir) -> None:
    root = data_dir("who_and_when")
    result = import_who_and_when(root)
    items = {it.id: it for it in result.items}
    spoken = [items[lab.item_id].messages[lab.step].name == lab.label for lab in result.labels]
    # 123 of 126 people-assigned steps point at a message by the blamed agent (5 of the
    # slice's 8, which holds the three that do not)
    assert sum(spoken) == (5 if is_slice(root) else 123)
    off = sorted(lab.item_id for lab, ok in zip(result.labels, spoken, strict=True) if not ok)
    assert off == [f"who_and_when:Algorithm-Generated:{n}" for n in (14, 15, 59)]
    run30 = items["who_and_when:Algorithm-Generated:30"]
    assert run30.metadata["error_type"] == "Factual_Error"
    assert "Culinary_Expert" in run30.metadata["agents"]


def _wrote(tmp_path: Path, name: str, run: dict) -> Path:
    d = tmp_path / "Who&When" / "Custom"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(run), encoding="utf-8")
    return tmp_path


_RUN = {
    "question": "q",
    "history": [
        {"role": "assistant", "name": "Planner", "content": "plan"},
        {"role": "Orchestrator (thought)", "content": "next, search"},
        {"role": "user", "name": "Computer_terminal", "content": "exitcode: 0"},
    ],
    "mistake_agent": "Orchestrator (thought)",
    "mistake_step": "1",
    "mistake_reason": "searched the wrong thing",
}


def test_who_and_when_maps_agent_roles_to_named_assistant_messages(tmp_path: Path) -> None:
    result = import_who_and_when(_wrote(tmp_path, "1.json", _RUN))
    (item,) = result.items
    assert [(m.role, m.name) for m in item.messages] == [
        ("assistant", "Planner"),
        ("assistant", "Orchestrator (thought)"),
        ("user", "Computer_terminal"),
    ]
    assert item.metadata["original_roles"] == [None, "Orchestrator (thought)", None]
    (label,) = result.labels
    assert (label.status, label.label, label.step) == ("ok", "Orchestrator (thought)", 1)


@pytest.mark.parametrize(
    ("step", "reason"),
    [("7", "mistake_step 7 is outside the trajectory (0..2)"), ("two", "is not an integer")],
    ids=["out-of-range", "not-a-number"],
)
def test_who_and_when_bad_step_is_unscored_naming_the_item(
    tmp_path: Path, step: str, reason: str
) -> None:
    result = import_who_and_when(_wrote(tmp_path, "5.json", {**_RUN, "mistake_step": step}))
    (label,) = result.labels
    assert label.status == "unscored" and label.label is None
    assert (label.reason or "").startswith("who_and_when:Custom:5: ")
    assert reason in (label.reason or "")
    assert len(result.items) == 1


def test_who_and_when_empty_history_is_an_error_and_the_rest_goes_on(tmp_path: Path) -> None:
    _wrote(tmp_path, "1.json", _RUN)
    _wrote(tmp_path, "2.json", {**_RUN, "history": []})
    with pytest.raises(DataError, match=r"2\.json: \"history\" is empty"):
        import_who_and_when(tmp_path)
    result = import_who_and_when(tmp_path, skip_bad=True)
    assert [it.id for it in result.items] == ["who_and_when:Custom:1"]
    assert len(result.bad) == 1


def test_who_and_when_without_runs_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no <subset>/<n>.json run files"):
        import_who_and_when(tmp_path)


# --- tau-bench --------------------------------------------------------------


def test_tau_bench_round_trips_messages_tool_calls_and_rewards(data_dir, tmp_path: Path) -> None:
    root = data_dir("tau_bench")
    part = is_slice(root)  # 11 runs, 3 with a failed tool call (counted in SOURCE.md)
    path = root / "historical_trajectories" / "gpt-4o-airline.json"
    runs = json.loads(path.read_text(encoding="utf-8"))
    items, labels = _round_trip("tau_bench", root, tmp_path)
    assert len(items) == len(runs) == (11 if part else 200)
    msgs = [m for it in items for m in it.messages]
    src_msgs = [m for r in runs for m in r["traj"]]
    assert len(msgs) == len(src_msgs)
    assert Counter(m.role for m in msgs) == Counter(m["role"] for m in src_msgs)
    calls = [c for m in msgs for c in m.tool_calls or []]
    src_calls = [c for m in src_msgs for c in m.get("tool_calls") or []]
    assert len(calls) == len(src_calls) == (68 if part else 1164)
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in src_calls
    ]
    results = [m for m in msgs if m.role == "tool"]
    assert [(m.tool_call_id, m.text) for m in results] == [
        (m["tool_call_id"], m["content"]) for m in src_msgs if m["role"] == "tool"
    ]
    # the tool's name, not copied onto the result, is the function of the call it answers
    answered: list[str] = []
    for it in items:
        open_calls: dict[str, str] = {}
        for m in it.messages:
            open_calls.update((c.id, c.function.name) for c in m.tool_calls or [])
            if m.role == "tool":
                answered.append(open_calls.pop(m.tool_call_id or ""))
    assert answered == [m["name"] for m in src_msgs if m["role"] == "tool"]
    assert all(m.name is None for m in results)
    assert Counter(lab.label for lab in labels) == Counter(
        "pass" if r["reward"] == 1 else "fail" for r in runs
    )
    assert Counter(lab.score for lab in labels) == Counter(float(r["reward"]) for r in runs)
    assert {lab.source for lab in labels} == {"rule:reward"}
    with_errors = [it for it in items if it.metadata["tool_error_steps"]]
    assert len(with_errors) == (3 if part else 36)  # as the data's README says
    for it in with_errors:
        for i in it.metadata["tool_error_steps"]:
            assert it.messages[i].role == "tool" and it.messages[i].text.startswith("Error")


def _tau_file(tmp_path: Path, traj: list[dict], reward: object = 1.0) -> Path:
    d = tmp_path / "historical_trajectories"
    d.mkdir(parents=True, exist_ok=True)
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    runs = [
        {"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": good},
        {"task_id": 1, "trial": 0, "reward": reward, "info": {}, "traj": traj},
    ]
    (d / "gpt-4o-airline.json").write_text(json.dumps(runs), encoding="utf-8")
    return tmp_path


_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}


@pytest.mark.parametrize(
    ("traj", "match"),
    [
        (
            [{"role": "user", "content": "x"}, {"role": "agent", "content": "y"}],
            r"tau_bench:gpt-4o-airline:1:0\): traj\[1\] has unknown role 'agent'",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "c9", "name": "f", "content": "ok"},
            ],
            r"traj\[1\] is a tool result for 'c9', which no earlier assistant message called",
        ),
        (
            [
                _CALL,
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "tool", "tool_call_id": "c1", "content": "again"},
            ],
            r"traj\[2\] is a tool result for 'c1'",
        ),
        (
            [_CALL, {"role": "tool", "tool_call_id": "c1", "name": "g", "content": "ok"}],
            r"traj\[1\] is a result of 'g', but call 'c1' was to 'f'",
        ),
        ([], r"tau_bench:gpt-4o-airline:1:0\): empty trajectory"),
        ([{"role": "assistant", "tool_calls": [{"id": "c1"}]}], r"traj\[0\] has a malformed"),
    ],
    ids=[
        "unknown-role",
        "orphan-result",
        "second-result-for-one-call",
        "result-of-another-tool",
        "empty",
        "malformed-call",
    ],
)
def test_tau_bench_bad_trajectory_names_the_item_and_the_rest_goes_on(
    tmp_path: Path, traj: list[dict], match: str
) -> None:
    src = _tau_file(tmp_path, traj)
    with pytest.raises(DataError, match=match):
        import_tau_bench(src)
    result = import_tau_bench(src, skip_bad=True)
    assert [it.id for it in result.items] == ["tau_bench:gpt-4o-airline:0:0"]
    assert len(result.bad) == 1


def test_tau_bench_reward_that_is_not_0_or_1_is_unscored(tmp_path: Path) -> None:
    src = _tau_file(tmp_path, [{"role": "user", "content": "x"}], reward=0.5)
    result = import_tau_bench(src)
    assert [lab.status for lab in result.labels] == ["ok", "unscored"]
    assert "reward 0.5 is not 0 or 1" in (result.labels[1].reason or "")


@pytest.mark.parametrize(
    ("name", "n_items", "source"),
    [("sycon", (4000, 200), "judge:gpt-4o"), ("who_and_when", (126, 8), "human:who_and_when"),
     ("tau_bench", (200, 11), "rule:reward")],
    ids=["sycon", "who_and_when", "tau_bench"],
)  # fmt: skip
def test_cli_import(
    data_dir, tmp_path: Path, name: str, n_items: tuple[int, int], source: str
) -> None:
    root = data_dir(name)
    n_items = n_items[1] if is_slice(root) else n_items[0]
    out = tmp_path / name
    done = run_tinyjudge("import", name, root, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"{name}: {n_items} items, {n_items} labels" in done.stdout
    assert source in done.stdout
    assert len(read_items(out / "items.jsonl")) == n_items
    assert {lab.source for lab in read_labels(out / "labels.jsonl")} == {source}
