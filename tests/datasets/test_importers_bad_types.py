"""Public sets' files with values of the wrong type: one error naming file and record.

A number where a list of messages belongs, null or a list where a string or an
object belongs, bytes that are not UTF-8, JSON nested too deep: each is one
:class:`DataError` (exit 2 and one line from the command line), never a
traceback, and with ``skip_bad`` the other records are imported.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support import run_tinyjudge

from tinyjudge.datasets.importers.tau_bench import import_tau_bench
from tinyjudge.datasets.importers.who_and_when import import_who_and_when
from tinyjudge.errors import DataError

_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}
_TAU = {
    "task_id": 1,
    "trial": 0,
    "reward": 1.0,
    "info": {"task": {"instruction": "book a flight", "actions": []}},
    "traj": [
        {"role": "user", "content": "hi"},
        _CALL,
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok"},
    ],
}
_WHO = {
    "question": "q",
    "history": [
        {"role": "assistant", "name": "Planner", "content": "plan"},
        {"role": "Orchestrator (thought)", "content": "next, search"},
    ],
    "mistake_agent": "Planner",
    "mistake_step": "0",
    "mistake_reason": "planned the wrong thing",
}


def _tau(tmp_path: Path, bad: dict | bytes) -> Path:
    d = tmp_path / "historical_trajectories"
    d.mkdir()
    good = {**_TAU, "task_id": 0}
    (d / "gpt-4o-airline.json").write_text(json.dumps([good]), encoding="utf-8")
    body = bad if isinstance(bad, bytes) else json.dumps([bad]).encode()
    (d / "gpt-4o-retail.json").write_bytes(body)
    return tmp_path


def _who(tmp_path: Path, bad: dict | bytes) -> Path:
    d = tmp_path / "Who&When" / "Hand-Crafted"
    d.mkdir(parents=True)
    (d / "1.json").write_text(json.dumps(_WHO), encoding="utf-8")
    (d / "2.json").write_bytes(bad if isinstance(bad, bytes) else json.dumps(bad).encode())
    return tmp_path


TAU_BAD = [
    ("traj-a-number", {**_TAU, "traj": 7}, r"retail:1:0\): \"traj\" is int, not"),
    ("traj-null", {**_TAU, "traj": None}, r'\): "traj" is NoneType, not a list of messages'),
    ("message-a-string", {**_TAU, "traj": ["hi"]}, r"traj\[0\] is not a message object"),
    ("role-a-list", {**_TAU, "traj": [{"role": [], "content": "x"}]}, r"traj\[0\] has unknown"),
    ("info-a-number", {**_TAU, "info": 7}, r'"info" is not an object with a "task" object'),
    ("task-a-string", {**_TAU, "info": {"task": "x"}}, r'"info" is not an object with a "task"'),
    ("calls-a-number", {**_TAU, "traj": [{**_CALL, "tool_calls": 3}]}, r"traj\[0\] has a malf"),
    ("run-a-list", [1, 2], r"run \[0\] has no \"traj\""),
    ("file-an-object", b'{"traj": []}', r": expected a JSON list of runs"),
    ("not-utf8", b'[{"traj": "\xff"}]', r":1: not UTF-8 text \(byte 0xff\)"),
    ("nested-deep", b"[" * 100_000 + b"]" * 100_000, r":1: JSON nested too deep"),
    ("huge-integer", b'[{"task_id": ' + b"9" * 5000 + b"}]", r":1: malformed JSON \(a"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "match"), [b[1:] for b in TAU_BAD], ids=[b[0] for b in TAU_BAD])
def test_tau_bench_bad_types_name_file_and_run(tmp_path: Path, bad, match: str) -> None:
    src = _tau(tmp_path, bad)
    with pytest.raises(DataError, match=r"gpt-4o-retail\.json.*" + match) as info:
        import_tau_bench(src)
    assert "\n" not in str(info.value)
    result = import_tau_bench(src, skip_bad=True)
    assert [it.id for it in result.items] == ["tau_bench:gpt-4o-airline:0:0"]
    assert len(result.bad) == 1


WHO_BAD = [
    ("history-a-number", {**_WHO, "history": 7}, r'"history" is empty or not a list'),
    ("history-null", {**_WHO, "history": None}, r'"history" is empty or not a list'),
    ("message-a-string", {**_WHO, "history": ["hi"]}, r"history\[0\] is not a \{role, content\}"),
    ("content-null", {**_WHO, "history": [{"role": "user", "content": None}]}, r"history\[0\]"),
    ("name-a-number", {**_WHO, "history": [{"role": "user", "name": 7, "content": "x"}]},
     r"history\[0\] has a name that is not a string"),
    ("reason-a-number", {**_WHO, "mistake_reason": 7}, r'field "rationale": Input should be'),
    ("file-a-list", [_WHO], r'expected a JSON object with "history"'),
    ("not-utf8", b'{"history": "\xff"}', r":1: not UTF-8 text \(byte 0xff\)"),
    ("nested-deep", b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, r":1: JSON nested too"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "match"), [b[1:] for b in WHO_BAD], ids=[b[0] for b in WHO_BAD])
def test_who_and_when_bad_types_name_the_file(tmp_path: Path, bad, match: str) -> None:
    src = _who(tmp_path, bad)
    with pytest.raises(DataError, match=r"Hand-Crafted/2\.json.*" + match) as info:
        import_who_and_when(src)
    assert "\n" not in str(info.value)
    result = import_who_and_when(src, skip_bad=True)
    assert [it.id for it in result.items] == ["who_and_when:Hand-Crafted:1"]
    assert len(result.bad) == 1


@pytest.mark.parametrize(
    ("name", "write", "bad"),
    [("tau_bench", _tau, {**_TAU, "info": 7}), ("who_and_when", _who, {**_WHO, "history": 7})],
    ids=["tau_bench", "who_and_when"],
)
def test_the_command_line_exits_2_with_one_line(tmp_path: Path, name: str, write, bad) -> None:
    (tmp_path / "src").mkdir()
    src = write(tmp_path / "src", bad)
    proc = run_tinyjudge("import", name, src, "--out", tmp_path / "out")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and ".json" in lines[0], lines
    assert not (tmp_path / "out").exists()


UNDECODABLE = [
    ("nested-deep", b"[" * 100_000 + b"]" * 100_000, "JSON nested too deep to read"),
    ("huge-integer", b'{"a": ' + b"9" * 5000 + b"}", "a number of more than 4,300 digits"),
]


@pytest.mark.parametrize(
    ("body", "match"), [u[1:] for u in UNDECODABLE], ids=[u[0] for u in UNDECODABLE]
)
def test_the_public_sets_json_readers_name_the_line(tmp_path: Path, body: bytes, match: str):
    from tinyjudge.datasets.importers._json import read_json_array, read_jsonl_objects

    lines = tmp_path / "rows.jsonl"
    lines.write_bytes(b'{"a": 1}\n' + body + b'\n{"a": 2}\n')
    with pytest.raises(DataError, match=r"rows\.jsonl:2: .*" + match):
        list(read_jsonl_objects(lines))
    errors: list[DataError] = []
    assert [row for _, row in read_jsonl_objects(lines, errors.append)] == [{"a": 1}, {"a": 2}]
    array = tmp_path / "rows.json"
    array.write_bytes(b'[{"a": 1},\n' + body + b"]")
    with pytest.raises(DataError, match=r"rows\.json:2: .*" + match):
        read_json_array(array)


def _public_copy(tmp_path: Path, name: str, rel: str, change) -> Path:
    """The fixture slice of a public set, its file ``rel``'s first record changed."""
    root = Path(__file__).parents[1] / "fixtures" / "data" / name
    dst = tmp_path / name
    shutil.copytree(root, dst)
    path = dst / rel
    records = json.loads(path.read_text(encoding="utf-8"))
    change(records[0])
    path.write_text(json.dumps(records), encoding="utf-8")
    return dst


LLMBAR_RESULT = "Dataset/Processed/MT-Bench/evaluators/GPT-4/Vanilla_NoRules/result.json"
PUBLIC_BAD = [
    ("llmbar-winner-a-list", "llmbar", LLMBAR_RESULT,
     lambda r: r["results"][0]["swap = False"].update(winner=["1"]), r'"swap = False" winner must'),
    ("pandalm-result-a-list", "pandalm", "data/gpt-3.5-turbo-testset-v1.json",
     lambda r: r.update(gpt_result=["1"]), None),
    ("pandalm-reason-a-number", "pandalm", "data/pandalm-7b-testset-v1.json",
     lambda r: r.update(pandalm_reason=7), r'"pandalm_reason" must be text, got int'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "rel", "change", "match"), [b[1:] for b in PUBLIC_BAD], ids=[b[0] for b in PUBLIC_BAD]
)
def test_public_sets_with_values_of_the_wrong_type(tmp_path: Path, name, rel, change, match):
    from tinyjudge.datasets.importers import run_import

    src = _public_copy(tmp_path, name, rel, change)
    if match is None:  # a judge's answer that is no verdict is kept, unscored
        labels = run_import(name, src).labels
        assert any(lab.raw == ["1"] and lab.status == "unscored" for lab in labels)
        return
    with pytest.raises(DataError, match=re.escape(Path(rel).name) + r":\d+: " + match) as info:
        run_import(name, src)
    assert "\n" not in str(info.value)
