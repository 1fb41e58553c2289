"""``import_chat`` on files as other tools write them: pandas/pyarrow Parquet, ``datasets``
folders, JSONL of OpenAI SDK dumps, JSON arrays, TRL prompt/completion rows."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message_function_tool_call import Function

from tinyjudge.datasets.importers.chat import import_chat
from tinyjudge.errors import DataError, UsageError


def _rollout(k: int) -> list[dict]:
    """A coding-agent exchange with a tool call, the assistant turns as the SDK dumps them."""
    call = ChatCompletionMessageFunctionToolCall(
        id=f"call_{k}", type="function", function=Function(name="run_tests", arguments="{}")
    )
    return [
        {"role": "user", "content": f"Fix bug #{k} and make the tests pass."},
        ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]).model_dump(),
        {"role": "tool", "tool_call_id": f"call_{k}", "content": "2 failed"},
        ChatCompletionMessage(
            role="assistant",
            content=f"I skipped the failing tests ({k}).",
            reasoning_content="easy",
        ).model_dump(),
    ]


def _rows(n: int = 3) -> list[dict]:
    return [{"messages": _rollout(k), "checkpoint": f"ckpt-{k % 2}", "step": k} for k in range(n)]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_of_sdk_dumps_without_ids(tmp_path: Path) -> None:
    got = import_chat(_write_jsonl(tmp_path / "rollouts.jsonl", _rows()))
    assert len(got.items) == 3 and got.hashed_ids == 3
    item = got.items[0]
    assert len(item.id) == 16 and item.id == item.content_hash()[:16]
    assert item.metadata == {"checkpoint": "ckpt-0", "step": 0}
    assert item.get("metadata.checkpoint") == "ckpt-0"
    assert item.messages[1].tool_calls[0].id == "call_0"
    assert item.messages[3].reasoning == "easy"
    assert got.metadata_fields == ["checkpoint", "step"]
    # the same file gives the same ids: they come from the content
    assert [i.id for i in import_chat(tmp_path / "rollouts.jsonl").items] == [
        i.id for i in got.items
    ]


@pytest.mark.parametrize("as_json_text", [False, True], ids=["list-column", "json-string-column"])
def test_parquet_written_by_pandas(tmp_path: Path, as_json_text: bool) -> None:
    rows = [{"id": f"r{k}", **r} for k, r in enumerate(_rows())]
    if as_json_text:
        rows = [{**r, "messages": json.dumps(r["messages"])} for r in rows]
    path = tmp_path / "rollouts.parquet"
    pd.DataFrame(rows).to_parquet(path)  # pyarrow fills absent struct fields with nulls

    got = import_chat(path)

    assert [i.id for i in got.items] == ["r0", "r1", "r2"] and got.hashed_ids == 0
    assert got.items[2].metadata == {"checkpoint": "ckpt-0", "step": 2}
    assert got.items[0].messages[2].tool_call_id == "call_0"
    assert got.items[0].messages[3].text == "I skipped the failing tests (0)."


def test_datasets_folder_with_splits(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    rows = [{"id": f"r{k}", **r} for k, r in enumerate(_rows(4))]
    DatasetDict(
        {"train": Dataset.from_list(rows[:3]), "test": Dataset.from_list(rows[3:])}
    ).save_to_disk(tmp_path / "ds")

    got = import_chat(tmp_path / "ds")

    assert sorted(i.id for i in got.items) == ["r0", "r1", "r2", "r3"]
    split = {i.id: i.metadata["split"] for i in got.items}
    assert split == {"r0": "train", "r1": "train", "r2": "train", "r3": "test"}


def test_json_array_and_trl_prompt_completion(tmp_path: Path) -> None:
    path = tmp_path / "pc.json"
    path.write_text(
        json.dumps(
            [
                {"prompt": "2+2?", "completion": "4"},
                {
                    "prompt": [{"role": "user", "content": "Hi"}],
                    "completion": [{"role": "assistant", "content": "Hello"}],
                    "id": 7,
                },
            ],
            indent=1,
        )
    )
    got = import_chat(path)
    assert [(m.role, m.text) for m in got.items[0].messages] == [
        ("user", "2+2?"),
        ("assistant", "4"),
    ]
    assert got.items[1].id == "7" and got.items[1].metadata == {}


def test_id_messages_and_label_fields(tmp_path: Path) -> None:
    rows = [
        {"conv": r["messages"], "uid": f"u{k}", "verdict": lab}
        for k, (r, lab) in enumerate(
            zip(_rows(), ["full_refusal", "Full Compliance", None], strict=True)
        )
    ]
    got = import_chat(
        _write_jsonl(tmp_path / "x.jsonl", rows),
        id_field="uid",
        messages_field="conv",
        label_field="verdict",
        rubric="compliance",
        source="human:final",
    )
    assert [i.id for i in got.items] == ["u0", "u1", "u2"]
    assert [(lab.item_id, lab.label, lab.source) for lab in got.labels] == [
        ("u0", "full_refusal", "human:final"),
        ("u1", "full_compliance", "human:final"),
    ]
    assert all(i.metadata == {} for i in got.items)


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    rows = [{"id": "a", **_rows(1)[0]}, {"id": "b", **_rows(1)[0]}, {"id": "a", **_rows(1)[0]}]
    path = _write_jsonl(tmp_path / "dup.jsonl", rows)
    with pytest.raises(DataError, match=r'dup\.jsonl:3: duplicate id "a", first at .*dup\.jsonl:1'):
        import_chat(path, skip_bad=True)


def test_same_content_twice_without_ids_is_a_duplicate(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "twice.jsonl", [_rows(1)[0], _rows(1)[0]])
    with pytest.raises(DataError, match=r"twice\.jsonl:2: duplicate id .*same transcript twice"):
        import_chat(path)


BAD_ROWS = [
    ('{"id": "x", "text": "hi"}', r"bad\.jsonl:2: no messages: expected a column"),
    ('{"messages": []}', r'bad\.jsonl:2: "messages" must be a non-empty list'),
    ('{"messages": "[{\\"role\\": "}', r'bad\.jsonl:2: "messages" holds malformed JSON'),
    (
        '{"messages": [{"role": "robot", "content": "x"}]}',
        r'bad\.jsonl:2: field "messages\.0\.role"',
    ),
    ("not json", r"bad\.jsonl:2: malformed JSON"),
]


@pytest.mark.parametrize(
    ("line", "match"),
    BAD_ROWS,
    ids=["no-messages", "empty", "bad-json-text", "bad-role", "not-json"],
)
def test_bad_row_names_file_and_line(tmp_path: Path, line: str, match: str) -> None:
    good = json.dumps(_rows(1)[0])
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + line + "\n" + json.dumps(_rows(2)[1]) + "\n")
    with pytest.raises(DataError, match=match):
        import_chat(path)
    got = import_chat(path, skip_bad=True)
    assert len(got.items) == 2 and [e.line for e in got.bad] == [2]


def test_label_outside_the_rubric_names_the_allowed(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "l.jsonl", [{**_rows(1)[0], "y": "maybe"}])
    with pytest.raises(
        DataError, match=r'l\.jsonl:1: y: label "maybe" is not one of \[.*full_refusal'
    ):
        import_chat(path, label_field="y", rubric="compliance", source="human:final")


def test_label_field_needs_rubric_and_source(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "l.jsonl", _rows(1))
    with pytest.raises(UsageError, match="^label_field needs rubric and source") as caught:
        import_chat(path, label_field="y")
    assert caught.value.param == "label_field"


@pytest.mark.parametrize(
    ("name", "match"),
    [("missing.jsonl", "no such file"), ("x.xlsx", r"cannot read '\.xlsx' files")],
    ids=["missing", "unknown-format"],
)
def test_unreadable_paths(tmp_path: Path, name: str, match: str) -> None:
    if name.endswith(".xlsx"):
        (tmp_path / name).write_bytes(b"PK")
    with pytest.raises(DataError, match=match):
        import_chat(tmp_path / name)


def test_logged_request_and_chat_completion(tmp_path: Path) -> None:
    from openai.types.chat import ChatCompletion
    from openai.types.chat.chat_completion import Choice

    completion = ChatCompletion(
        id="chatcmpl-1",
        object="chat.completion",
        created=0,
        model="gpt-4o-mini",
        choices=[
            Choice(
                index=0,
                finish_reason="stop",
                message=ChatCompletionMessage(role="assistant", content="Use `kill -9 <pid>`."),
            )
        ],
    )
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Stop a process?"}]}
    path = _write_jsonl(
        tmp_path / "log.jsonl",
        [{"request": request, "response": completion.model_dump(), "latency_ms": 812}],
    )
    got = import_chat(path)
    assert [(m.role, m.text) for m in got.items[0].messages] == [
        ("user", "Stop a process?"),
        ("assistant", "Use `kill -9 <pid>`."),
    ]
    assert got.items[0].metadata == {"latency_ms": 812}
