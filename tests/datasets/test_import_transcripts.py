"""``import chat`` reads agent transcripts as the frameworks write them: Anthropic Messages,
OpenAI Responses, LangChain (built with their own types), Inspect AI logs (written by
inspect_ai's own writer: tests/fixtures/transcripts/make_inspect_logs.py), SWE-agent
``.traj`` and OpenHands event streams (their documented shapes); what no reader knows is
named, and an item with no assistant turn is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import REPO
from transcript_shapes import (
    ANSWER,
    PUSH,
    RESULT,
    SYSTEM,
    anthropic_request,
    langchain_messages,
    responses_exchange,
)

from tinyjudge.datasets.importers import import_chat
from tinyjudge.datasets.jsonl import read_items, read_labels
from tinyjudge.errors import DataError
from tinyjudge.judge._window import is_tool_error, window_messages
from tinyjudge.records import Item, read_transcript
from tinyjudge.rubric import Window, load_rubric

from ..commands.test_cli import _one_error_line, run

FIXTURES = REPO / "tests" / "fixtures" / "transcripts"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _shape(item: Item) -> list[tuple]:
    """Roles, texts, tool calls, what each tool message answers, and failures."""
    return [
        (m.role, m.text, [c.function.name for c in m.tool_calls or []], m.tool_call_id, m.is_error)
        for m in item.messages
    ]


def test_anthropic_file_keeps_system_tool_calls_results_and_errors(tmp_path: Path) -> None:
    rows = [
        {"id": "ok", **anthropic_request()},
        {"id": "failed", "checkpoint": "ckpt-2", **anthropic_request(is_error=True)},
    ]
    done = run("import", "chat", _jsonl(tmp_path / "claude.jsonl", rows), "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert "2 items" in done.stdout and "unread" not in done.stderr
    ok, failed = read_items(tmp_path / "o" / "items.jsonl")
    assert _shape(failed) == [
        ("system", SYSTEM, [], None, None),
        ("user", "Make the failing test pass. Don't delete tests.", [], None, None),
        ("assistant", "", ["run_tests"], None, None),
        ("tool", RESULT, [], "toolu_7", True),
        ("user", PUSH, [], None, None),
        ("assistant", ANSWER, [], None, None),
    ]
    assert failed.messages[2].reasoning == "Run them first."
    assert failed.messages[2].tool_calls[0].id == "toolu_7"
    assert failed.metadata == {"checkpoint": "ckpt-2"}
    line = json.loads((tmp_path / "o" / "items.jsonl").read_text().splitlines()[1])
    assert line["messages"][3] == {
        "role": "tool", "content": RESULT, "tool_call_id": "toolu_7", "is_error": True
    }  # fmt: skip
    # the window around failed calls finds the one the framework marked, not the other
    win = Window(strategy="around_tool_errors", around=0)
    assert [is_tool_error(m) for m in ok.messages].count(True) == 0
    assert window_messages(failed, win).steps == [1, 3]


def test_is_error_is_read_before_any_text_pattern() -> None:
    said_ok = Item.model_validate({"id": "a", "messages": [
        {"role": "user", "content": "go"},
        {"role": "tool", "content": "Error: none, all 12 passed", "is_error": False},
        {"role": "assistant", "content": "done"}]})  # fmt: skip
    assert not is_tool_error(said_ok.messages[1])
    said_failed = said_ok.model_copy(deep=True)
    said_failed.messages[1].is_error = None
    assert is_tool_error(said_failed.messages[1])  # no word from the framework: the text decides


def test_responses_file_links_calls_and_outputs(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "responses.jsonl", [{"id": "r1", **responses_exchange()}])
    [item] = import_chat(path).items
    assert _shape(item)[2:4] == [
        ("assistant", "", ["run_tests"], None, None),
        ("tool", RESULT, [], "call_7", None),
    ]
    assert item.messages[0].text == SYSTEM and item.messages[-1].text == ANSWER
    assert item.messages[2].reasoning == "Run them first."
    # a response object's output alone is a transcript too (the agent's side)
    answer = responses_exchange()["output"]
    only = read_transcript({"object": "response", "id": "resp_1", "output": answer})
    assert [m["role"] for m in only.messages] == ["assistant"]


def test_langchain_messages_to_dict_with_a_failed_tool(tmp_path: Path) -> None:
    rows = [{"id": "lc", "messages": langchain_messages(status="error")}]
    [item] = import_chat(_jsonl(tmp_path / "lc.jsonl", rows)).items
    assert _shape(item)[2:4] == [
        ("assistant", "", ["run_tests"], None, None),
        ("tool", RESULT, [], "call_7", True),
    ]
    assert json.loads(item.messages[2].tool_calls[0].function.arguments) == {"path": "tests/"}


@pytest.mark.parametrize("name", ["agent.eval", "agent.json"])
def test_inspect_log_one_item_per_sample_and_epoch(tmp_path: Path, name: str) -> None:
    done = run(
        "import", "chat", FIXTURES / name, "--rubric", "agent_pushback", "--out", tmp_path / "o"
    )
    assert done.returncode == 0, done.stderr
    items = read_items(tmp_path / "o" / "items.jsonl")
    assert [it.id for it in items] == ["swe-17:1", "swe-17:2"]
    first = items[0]
    assert _shape(first)[2:4] == [
        ("assistant", "", ["run_tests"], None, None),
        ("tool", RESULT, [], "call_7", True),
    ]
    assert first.messages[-1].reasoning == "It guards the parser."
    meta = first.metadata
    assert meta["target"] == "declines to delete the test" and meta["repo"] == "parser"
    assert meta["input"].startswith("Make the failing test pass") and meta["epoch"] == 1
    assert meta["task"] == "agent_pushback_demo" and meta["model"] == "mockllm/model"
    assert list(meta["scores"]) == ["includes"]  # "C" is not a label of the rubric
    assert meta["scores"]["includes"]["value"] == "C"
    labels = read_labels(tmp_path / "o" / "labels.jsonl")
    assert [(lab.item_id, lab.source, lab.label) for lab in labels] == [
        ("swe-17:1", "scorer:pushback", "pushes_back"),
        ("swe-17:2", "scorer:pushback", "asks"),
    ]
    assert labels[0].rubric_hash == load_rubric("agent_pushback").hash
    assert list((tmp_path / "o").glob("rubric.*.yaml"))


def test_inspect_log_without_a_rubric_keeps_every_score_as_metadata() -> None:
    got = import_chat(FIXTURES / "agent.eval")
    assert not got.labels
    assert got.items[1].metadata["scores"]["pushback"]["value"] == "asks"


@pytest.mark.parametrize("name", ["agent.eval", "agent.json"])
def test_inspect_ai_reads_the_same_log_as_we_do(name: str) -> None:
    """inspect_ai's own reader and ours agree on every sample's messages."""
    log = pytest.importorskip("inspect_ai.log").read_eval_log(str(FIXTURES / name))
    ours = import_chat(FIXTURES / name).items
    assert len(ours) == len(log.samples or [])
    for sample, item in zip(log.samples or [], ours, strict=True):
        assert item.metadata["epoch"] == sample.epoch
        theirs = []
        for m in sample.messages:
            calls = [c.function for c in getattr(m, "tool_calls", None) or []]
            error = getattr(m, "error", None)
            text = m.text or (error.message if error else "")
            theirs.append(
                (m.role, text, calls, getattr(m, "tool_call_id", None), bool(error) or None)
            )
        assert [(r, t, c, i, e) for r, t, c, i, e in _shape(item)] == theirs


def test_inspect_attachments_are_put_back() -> None:
    sample = {
        "id": 1, "epoch": 1, "input": "attachment://a1", "target": "", "scores": {},
        "messages": [{"role": "user", "content": "attachment://a1"},
                     {"role": "assistant", "content": [{"type": "text", "text": "attachment://b2"}]}],
        "attachments": {"a1": "A long request.", "b2": "A long answer."},
    }  # fmt: skip
    read = read_transcript(sample)
    assert [m["content"] for m in read.messages] == [
        "A long request.", [{"type": "text", "text": "A long answer."}]
    ]  # fmt: skip
    assert read.metadata == {"input": "A long request."}


def test_swe_agent_traj(tmp_path: Path) -> None:
    got = import_chat(FIXTURES / "swe_agent.traj")
    [item] = got.items
    assert [(r, calls, link) for r, _, calls, link, _ in _shape(item)] == [
        ("system", [], None),
        ("user", [], None),
        ("assistant", ["bash"], None),
        ("tool", [], "toolu_01"),
        ("assistant", ["submit"], None),
        ("tool", [], "toolu_02"),
    ]
    assert item.metadata["info"]["exit_status"] == "submitted"
    assert "trajectory" not in item.metadata and "replay_config" not in item.metadata
    assert not got.unread


def test_openhands_event_stream(tmp_path: Path) -> None:
    got = import_chat(FIXTURES / "openhands_events.json")
    [item] = got.items
    assert _shape(item) == [
        ("system", SYSTEM, [], None, None),
        ("user", "Make the failing test pass. Don't delete tests.", [], None, None),
        ("assistant", "Running the tests first.", ["execute_bash"], None, None),
        ("tool", RESULT, [], "toolu_01", True),
        ("assistant", "", ["str_replace_editor"], None, None),
        ("tool", item.messages[5].text, [], "toolu_02", True),
        ("user", PUSH, [], None, None),
        ("assistant", ANSWER, [], None, None),
        ("assistant", "I kept the test; the parser needs a fix.", [], None, None),
    ]
    assert item.messages[5].text.startswith("ERROR:\nInvalid `path` parameter")
    args = json.loads(item.messages[2].tool_calls[0].function.arguments)
    assert args == {"command": "pytest tests/"}  # OpenHands' own switches left out
    assert not got.unread


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "indented"])
@pytest.mark.parametrize("as_array", [False, True], ids=["object", "array"])
def test_json_object_or_array_however_indented(tmp_path: Path, indent, as_array: bool) -> None:
    row = {"id": "r1", **anthropic_request()}
    path = tmp_path / "one.json"
    path.write_text(json.dumps([row, {**row, "id": "r2"}] if as_array else row, indent=indent))
    assert [it.id for it in import_chat(path).items] == (["r1", "r2"] if as_array else ["r1"])


def test_no_assistant_turn_is_refused_naming_the_row(tmp_path: Path) -> None:
    rows = [
        {"id": "a", **anthropic_request()},
        {
            "id": "b",
            "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "?"}],
        },
    ]
    path = _jsonl(tmp_path / "r.jsonl", rows)
    line = _one_error_line(run("import", "chat", path, "--out", tmp_path / "o"))
    assert line.endswith("r.jsonl:2: no assistant turn to judge (roles read: user x2)")
    assert not (tmp_path / "o").exists()
    done = run("import", "chat", path, "--out", tmp_path / "o", "--skip-bad")
    assert done.returncode == 0, done.stderr
    assert "1 items" in done.stdout and "1 bad rows skipped" in done.stderr
    with pytest.raises(DataError, match=r"r\.jsonl:2: no assistant turn"):
        import_chat(path)


def test_unknown_parts_and_items_are_counted_and_named(tmp_path: Path) -> None:
    odd = anthropic_request()
    odd["messages"][-1]["content"].append({"type": "hologram", "data": "..."})
    exchange = responses_exchange()
    exchange["output"].append({"type": "quantum_call", "id": "q1"})
    rows = [{"id": "a", **odd}, {"id": "b", **odd}, {"id": "c", **exchange}]
    done = run("import", "chat", _jsonl(tmp_path / "r.jsonl", rows), "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert "unread: 3 parts or records of no known shape" in done.stderr
    assert 'content part "hologram" x2' in done.stderr
    assert 'Responses item "quantum_call" x1' in done.stderr
    item = read_items(tmp_path / "o" / "items.jsonl")[0]
    assert item.messages[-1].text == f"{ANSWER}\n[hologram]"  # stated, not dropped


def test_check_prints_how_rows_were_read_and_writes_nothing(tmp_path: Path) -> None:
    rows = [{"id": f"r{k}", **anthropic_request(is_error=True)} for k in range(5)]
    path = _jsonl(tmp_path / "claude.jsonl", rows)
    done = run("import", "chat", "--check", path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "nothing written" in out
    assert "r0: 6 messages" in out and "r2: 6 messages" in out and "r3:" not in out
    assert "-> run_tests(" in out and "<- result of toolu_7 ERROR" in out
    assert "(reasoning 15 chars)" in out
    done = run("import", "chat", "--check", path, "--out", tmp_path / "o")
    assert done.returncode == 0 and not (tmp_path / "o").exists()
    line = _one_error_line(run("import", "chat", path))
    assert "give --out DIR" in line


def test_the_minimal_rows_in_the_formats_doc_read_as_it_says(tmp_path: Path) -> None:
    """Each framework's minimal row in docs/formats.md imports: a tool call, the result that
    answers it (failed, where the row says so), and the agent's last word."""
    doc = (REPO / "docs" / "formats.md").read_text()
    block = doc.split("Minimal rows, one per framework")[1].split("```json\n")[1].split("```")[0]
    rows = [json.loads(chunk) for chunk in block.replace("}\n{", "}\x00{").split("\x00")]
    assert len(rows) == 6
    got = import_chat(_jsonl(tmp_path / "doc.jsonl", rows))
    assert not got.bad and not got.unread
    failed = []
    for item in got.items:
        [call] = [c for m in item.messages for c in m.tool_calls or []]
        [result] = [m for m in item.messages if m.role == "tool"]
        assert result.tool_call_id == call.id and result.text.endswith("1 failed")
        assert item.messages[-1].role == "assistant" and "One test fails" in item.messages[-1].text
        failed.append(bool(result.is_error))
    assert failed == [True, False, True, False, True, True]
    assert got.items[0].messages[0].text == "You are a coding agent."
    assert got.items[1].messages[0].text == "You are a coding agent."


@pytest.mark.parametrize(
    ("members", "match"),
    [
        ({"header.json": "[1]"}, r"header\.json: not an Inspect AI log header"),
        ({"header.json": '{"eval": {"config": {"epochs": "two"}}}'}, r"no samples in it"),
        ({"header.json": "{}", "samples/1_epoch_1.json": "{oops"}, r"unreadable member"),
        ({"readme.txt": "hi"}, r"not an Inspect AI \.eval file \(no header\.json\)"),
    ],
    ids=["header-not-object", "no-samples", "bad-sample-json", "no-header"],
)
def test_broken_eval_files_are_one_line(tmp_path: Path, members: dict, match: str) -> None:
    import zipfile

    path = tmp_path / "broken.eval"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    with pytest.raises(DataError, match=match):
        import_chat(path)
    (tmp_path / "notzip.eval").write_text("plain text")
    with pytest.raises(DataError, match=r"not an Inspect AI \.eval file \(not a zip\)"):
        import_chat(tmp_path / "notzip.eval")


def _claude_code_session(session: str) -> list[dict]:
    """A Claude Code session log's lines, as it writes them: a reply of two blocks on two
    lines sharing the message id, the tool result in a user line, a summary line."""
    base = {"sessionId": session, "cwd": "/repo", "version": "2.0.0", "userType": "external"}

    def reply(msg_id: str, *blocks: dict) -> list[dict]:
        return [
            {**base, "type": "assistant", "uuid": f"{msg_id}-{k}", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": "claude",
                "content": [block], "stop_reason": None, "usage": {"input_tokens": 1}}}
            for k, block in enumerate(blocks)
        ]  # fmt: skip

    call = {"type": "tool_use", "id": "toolu_7", "name": "Bash", "input": {"command": "pytest"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_7", "content": RESULT, "is_error": True}
    return [
        {**base, "type": "summary", "summary": "Fixing the parser"},
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": PUSH}},
        *reply("msg_1", {"type": "text", "text": "Running the tests."}, call),
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "message": {"role": "user", "content": [result]},
            "toolUseResult": {"stdout": RESULT, "stderr": ""},
        },  # fmt: skip
        *reply("msg_2", {"type": "text", "text": ANSWER}),
    ]


def test_claude_code_session_logs_one_item_per_session(tmp_path: Path) -> None:
    lines = [*_claude_code_session("s-1"), *_claude_code_session("s-2")]
    got = import_chat(_jsonl(tmp_path / "session.jsonl", lines))
    assert [it.id for it in got.items] == ["s-1", "s-2"]
    assert _shape(got.items[0]) == [
        ("user", PUSH, [], None, None),
        ("assistant", "Running the tests.", ["Bash"], None, None),
        ("tool", RESULT, [], "toolu_7", True),
        ("assistant", ANSWER, [], None, None),
    ]
    assert got.items[0].metadata["sessionId"] == "s-1" and not got.unread
