"""The one message reader (``tinyjudge.records.read_transcript``) on each framework's forms,
the adversarial cases among them, and the files that hold one transcript in many records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transcript_shapes import ANSWER, RESULT, langchain_messages, openai_messages

from tinyjudge.datasets.importers import import_chat
from tinyjudge.records import Item, canonical, read_transcript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"


def _item(row: dict) -> Item:
    return Item.model_validate({"id": "x", "messages": canonical(read_transcript(row).messages)})


def _calls_and_results(item: Item) -> list[tuple]:
    out: list[tuple] = []
    for m in item.messages:
        out += [("call", c.id, c.function.name, c.function.arguments) for c in m.tool_calls or []]
        if m.role == "tool":
            out.append(("result", m.tool_call_id, m.text, m.is_error))
    return out


def test_langchain_model_dump_and_dumpd_read_as_messages_to_dict() -> None:
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    msgs = [
        HumanMessage("Run the tests."),
        AIMessage("", tool_calls=[{"name": "run_tests", "args": {"path": "tests/"}, "id": "c1"}]),
        ToolMessage(RESULT, tool_call_id="c1", status="error"),
        AIMessage(ANSWER),
    ]
    expected = [
        ("call", "c1", "run_tests", '{"path": "tests/"}'),
        ("result", "c1", RESULT, True),
    ]
    for records in ([m.model_dump() for m in msgs], [dumpd(m) for m in msgs]):
        item = _item({"messages": records})
        assert [m.role for m in item.messages] == ["user", "assistant", "tool", "assistant"]
        assert _calls_and_results(item) == expected


def test_anthropic_blocks_in_a_langchain_ai_message_are_one_call() -> None:
    """LangChain keeps Claude's content blocks beside its tool_calls: one call, not two."""
    records = langchain_messages()
    ai = records[2]["data"]
    ai["content"] = [
        {"type": "text", "text": "Running them."},
        {"type": "tool_use", "id": "call_7", "name": "run_tests", "input": {"path": "tests/"}},
    ]
    item = _item({"messages": records})
    assert item.messages[2].text == "Running them."
    assert [c.id for c in item.messages[2].tool_calls or []] == ["call_7"]


@pytest.mark.parametrize(
    ("block", "text", "is_error"),
    [
        ({"content": [{"type": "text", "text": "ok"}, {"type": "image", "source": {}}]},
         "ok\n[image]", None),
        ({"content": "boom", "is_error": True}, "boom", True),
        ({"content": "fine", "is_error": False}, "fine", False),
        ({"content": [{"type": "document", "title": "spec.pdf", "source": {}}]},
         "[document: spec.pdf]", None),
        ({}, "", None),
    ],
    ids=["text-and-image", "error", "not-error", "document", "empty"],
)  # fmt: skip
def test_anthropic_tool_result_content(block: dict, text: str, is_error: bool | None) -> None:
    row = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", **block}]},
            {"role": "assistant", "content": "done"},
        ]
    }
    assert _calls_and_results(_item(row))[1] == ("result", "t1", text, is_error)


def test_anthropic_server_tool_and_its_error() -> None:
    """A server tool's use and result sit in one assistant turn; its error payload is_error."""
    row = {
        "messages": [
            {"role": "user", "content": "What's new?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "server_tool_use",
                        "id": "srv_1",
                        "name": "web_search",
                        "input": {"query": "news"},
                    },
                    {
                        "type": "web_search_tool_result",
                        "tool_use_id": "srv_1",
                        "content": {
                            "type": "web_search_tool_result_error",
                            "error_code": "unavailable",
                        },
                    },
                    {"type": "text", "text": "Search is down."},
                ],
            },
        ]
    }
    item = _item(row)
    assert [m.role for m in item.messages] == ["user", "assistant", "tool", "assistant"]
    assert _calls_and_results(item)[1][3] is True
    assert item.messages[-1].text == "Search is down."


def test_responses_hosted_tools_custom_calls_and_unknown_items() -> None:
    row = {
        "input": "Fix it.",
        "output": [
            {
                "type": "reasoning",
                "id": "rs",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Think."}],
            },
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "bug"},
            },
            {
                "type": "custom_tool_call",
                "call_id": "cc_1",
                "name": "apply_patch",
                "input": "*** patch",
            },
            {
                "type": "custom_tool_call_output",
                "call_id": "cc_1",
                "output": [{"type": "input_text", "text": "applied"}],
            },
            {
                "type": "mcp_call",
                "id": "mcp_1",
                "name": "lint",
                "arguments": "{}",
                "server_label": "s",
                "error": "down",
            },
            {"type": "mcp_list_tools", "id": "l", "server_label": "s", "tools": []},
            {"type": "quantum_call", "id": "q"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}],
            },
        ],
    }
    read = read_transcript(row)
    item = _item(row)
    assert item.messages[1].reasoning == "Think."
    assert _calls_and_results(item) == [
        ("call", "ws_1", "web_search", '{"type": "search", "query": "bug"}'),
        ("call", "cc_1", "apply_patch", "*** patch"),
        ("result", "cc_1", "applied", None),
        ("call", "mcp_1", "lint", "{}"),
        ("result", "mcp_1", "down", True),
    ]
    assert item.messages[-1].text == "Done."
    assert dict(read.unread) == {'Responses item "quantum_call"': 1}


def test_inspect_content_tool_use_is_a_call_and_its_result() -> None:
    sample = {"id": 1, "epoch": 1, "input": [{"role": "user", "content": "Look it up."}],
              "target": "", "scores": {}, "messages": [
        {"role": "user", "content": "Look it up."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "tool_type": "web_search", "id": "w1", "name": "web_search",
             "arguments": '{"q": "x"}', "result": "3 results", "error": None},
            {"type": "text", "text": "Found it."}]}]}  # fmt: skip
    read = read_transcript(sample)
    item = _item(sample)
    assert _calls_and_results(item) == [
        ("call", "w1", "web_search", '{"q": "x"}'),
        ("result", "w1", "3 results", None),
    ]
    assert read.metadata == {"input": "Look it up."}


def test_a_json_array_of_messages_is_one_transcript(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(openai_messages(), indent=2))
    [item] = import_chat(path).items
    assert [m.role for m in item.messages] == ["system", "user", "assistant", "tool", "user",
                                               "assistant"]  # fmt: skip


def _events() -> list[dict]:
    return json.loads((FIXTURES / "openhands_events.json").read_text())


def test_openhands_events_as_jsonl_and_as_a_folder_of_event_files(tmp_path: Path) -> None:
    [expected] = import_chat(FIXTURES / "openhands_events.json").items
    lines = tmp_path / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    folder = tmp_path / "session" / "events"
    folder.mkdir(parents=True)
    events = _events() + [{"id": 10, "source": "user", "action": "message",
                           "args": {"content": "Thanks."}}]  # fmt: skip
    for e in events:  # 10.json sorts before 2.json by name: the ids give the order
        (folder / f"{e['id']}.json").write_text(json.dumps(e))
    [from_lines] = import_chat(lines).items
    [from_folder] = import_chat(folder).items
    assert from_lines.messages == expected.messages
    assert from_folder.messages[:-1] == expected.messages
    assert from_folder.messages[-1].text == "Thanks."


def test_anthropic_message_dumps_in_the_messages_and_a_logged_request() -> None:
    """Whole ``Message.model_dump()`` responses kept as turns (tool use included), and a
    logged request with its response, as the SDK returns it."""
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

    def response(*content) -> dict:
        return Message(
            id="msg_1", type="message", role="assistant", model="claude", content=list(content),
            stop_reason="end_turn", usage=Usage(input_tokens=1, output_tokens=1),
        ).model_dump()  # fmt: skip

    first = response(
        TextBlock(type="text", text="Checking."),
        ToolUseBlock(type="tool_use", id="tu1", name="ls", input={"p": "."}),
    )
    final = response(TextBlock(type="text", text="Two files."))
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    result = {
        "type": "tool_result",
        "tool_use_id": "tu1",
        "content": [{"type": "text", "text": "a b"}],
    }
    turns = [{"role": "user", "content": "List."}, first, {"role": "user", "content": [result]}]
    row = {"system": system, "messages": [*turns, final]}
    item = _item(row)
    assert [(m.role, m.text) for m in item.messages] == [
        ("system", "Be brief."), ("user", "List."), ("assistant", "Checking."),
        ("tool", "a b"), ("assistant", "Two files."),
    ]  # fmt: skip
    assert _calls_and_results(item) == [
        ("call", "tu1", "ls", '{"p": "."}'),
        ("result", "tu1", "a b", None),
    ]
    request = {"model": "claude", "system": "Be brief.", "messages": turns[:1]}
    logged = {"request": request, "response": final}
    assert [(m.role, m.text) for m in _item(logged).messages] == [
        ("system", "Be brief."), ("user", "List."), ("assistant", "Two files."),
    ]  # fmt: skip


def test_openhands_agent_sdk_events() -> None:
    """The agent SDK's typed events (their documented shape): tool calls by ``tool_call``,
    results by ``tool_call_id``, an ``AgentErrorEvent`` a failed one, state updates left out."""
    got = import_chat(FIXTURES / "openhands_sdk_events.json")
    [item] = got.items
    assert [m.role for m in item.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "user", "assistant",
    ]  # fmt: skip
    assert item.messages[2].text == "Running the tests first."
    assert item.messages[2].reasoning == "Run them before editing."
    assert _calls_and_results(item) == [
        ("call", "toolu_01", "terminal", '{"command": "pytest tests/"}'),
        ("result", "toolu_01", RESULT, False),
        ("call", "toolu_02", "file_editor", '{"command": "view", "path": "/repo/parser.py"}'),
        ("result", "toolu_02", "The path /repo/parser.py does not exist.", True),
    ]
    assert item.messages[-1].text == ANSWER and not got.unread


def test_a_top_level_system_is_not_doubled_and_instructions_may_be_items() -> None:
    turns = [{"role": "system", "content": "Own."}, {"role": "user", "content": "Hi"},
             {"role": "assistant", "content": "Hello"}]  # fmt: skip
    assert [m.text for m in _item({"system": "Top.", "messages": turns}).messages] == [
        "Own.", "Hi", "Hello",
    ]  # fmt: skip
    assert [m.text for m in _item({"system": "Top.", "messages": turns[1:]}).messages] == [
        "Top.", "Hi", "Hello",
    ]  # fmt: skip
    instructions = [{"type": "message", "role": "developer", "content": "Be brief."}]
    said = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello"}],
    }
    row = {"instructions": instructions, "input": "Hi", "output": [said]}
    assert [(m.role, m.text) for m in _item(row).messages] == [
        ("developer", "Be brief."), ("user", "Hi"), ("assistant", "Hello"),
    ]  # fmt: skip


def test_input_and_output_texts_are_a_prompt_and_its_completion() -> None:
    row = {"input": "How do I stop a job?", "output": "Use kill.", "system": "Be brief."}
    read = read_transcript(row)
    assert [(m["role"], m["content"]) for m in read.messages] == [
        ("system", "Be brief."), ("user", "How do I stop a job?"), ("assistant", "Use kill."),
    ]  # fmt: skip
    assert read.used == {"input", "output", "system"}


@pytest.mark.parametrize(
    ("row", "roles", "unread"),
    [
        ({"events": [{"source": "agent", "action": {"kind": "x"}, "args": "x"}]}, [],
         {'OpenHands event "with an object for its action or observation"': 1}),
        ({"messages": [{"type": "ai", "data": {"content": "x", "tool_calls": 1.5}}]},
         ["assistant"], {}),
        ({"input": [{"type": "reasoning", "summary": 5}], "output": [{"type": "message"}]},
         ["assistant"], {}),
        ({"messages": [{"role": "assistant", "content": [{"type": {"a": 1}}]}]},
         ["assistant"], {"content part \"{'a': 1}\"": 1}),
        ({"id": 1, "epoch": 1, "input": "q", "scores": [1], "messages": [{"role": "user"}]},
         ["user"], {}),
        ({"events": [{"kind": "ActionEvent", "source": "agent", "action": "x", "tool_call": 3}]},
         ["assistant"], {}),
    ],
    ids=["openhands-object-action", "langchain-calls-number", "responses-summary-number",
         "block-type-object", "inspect-scores-list", "sdk-action-text"],
)  # fmt: skip
def test_fields_of_types_no_framework_writes_are_read_as_far_as_they_go(
    row: dict, roles: list[str], unread: dict
) -> None:
    """Such a row is read as far as it goes and what was not understood is named: never a
    TypeError or AttributeError (a traceback at ``import chat``, a 500 at the server)."""
    read = read_transcript(row)
    assert [m["role"] for m in read.messages] == roles
    assert dict(read.unread) == unread


def test_a_record_that_breaks_a_reader_is_refused_in_one_line(tmp_path: Path) -> None:
    """Whatever a reader trips on comes back as one ValueError (``file:line`` at import)."""
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    row = {"id": "odd", "messages": [[1], call]}
    with pytest.raises(ValueError, match=r"^a record of an unexpected shape \(AttributeError"):
        read_transcript(row)
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=r"odd\.jsonl:1: a record of an unexpected shape"):
        import_chat(path)
