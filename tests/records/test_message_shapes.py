"""Messages as other tools write them: the OpenAI SDK, vLLM, TRL, ShareGPT.

The inputs are built with the ``openai`` package's own types and dumped the way a
user's logging code would (``model_dump()``), so a change in what the SDK writes
shows up here.
"""

from __future__ import annotations

import json

import pytest
from openai.types.chat import (
    ChatCompletionAudio,
    ChatCompletionContentPartImageParam,
    ChatCompletionContentPartTextParam,
    ChatCompletionMessage,
    ChatCompletionMessageCustomToolCall,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionUserMessageParam,
)
from openai.types.chat.chat_completion_message import (
    Annotation,
    AnnotationURLCitation,
    FunctionCall,
)
from openai.types.chat.chat_completion_message_custom_tool_call import Custom
from openai.types.chat.chat_completion_message_function_tool_call import Function

from tinyjudge.records import Item, Message


def _sdk_tool_call(call_id: str, name: str, args: dict) -> ChatCompletionMessageFunctionToolCall:
    return ChatCompletionMessageFunctionToolCall(
        id=call_id, type="function", function=Function(name=name, arguments=json.dumps(args))
    )


def test_openai_sdk_dump_with_tool_calls_and_annotations_is_read_and_kept() -> None:
    citation = AnnotationURLCitation(start_index=0, end_index=5, title="Docs", url="https://x.org")
    sdk = ChatCompletionMessage(
        role="assistant",
        content="Let me check.",
        annotations=[Annotation(type="url_citation", url_citation=citation)],
        tool_calls=[_sdk_tool_call("call_9", "read_file", {"path": "a.py"})],
    )
    dumped = sdk.model_dump()
    assert dumped["refusal"] is None and dumped["audio"] is None  # what the SDK writes

    msg = Message.model_validate(dumped)

    assert msg.text == "Let me check."
    assert msg.tool_calls[0].id == "call_9"
    assert json.loads(msg.tool_calls[0].function.arguments) == {"path": "a.py"}
    # the annotations are kept; the SDK's nulls carry nothing and are not
    assert msg.extra == {"annotations": [dumped["annotations"][0]]}
    again = Message.model_validate_json(msg.model_dump_json(exclude_none=True))
    assert again == msg


@pytest.mark.parametrize(
    ("sdk", "text"),
    [
        (
            ChatCompletionMessage(role="assistant", refusal="I can't help with that."),
            "I can't help with that.",
        ),
        (
            ChatCompletionMessage(
                role="assistant",
                audio=ChatCompletionAudio(id="a1", data="UklGRg==", expires_at=0, transcript="Hi!"),
            ),
            "Hi!",
        ),
        (ChatCompletionMessage(role="assistant", content="4", reasoning_content="2+2=4"), "4"),
    ],
    ids=["refusal-only", "audio-transcript", "vllm-reasoning-content"],
)
def test_openai_sdk_dump_text(sdk: ChatCompletionMessage, text: str) -> None:
    msg = Message.model_validate(sdk.model_dump())
    assert msg.text == text


def test_reasoning_content_is_kept_apart_from_the_text() -> None:
    sdk = ChatCompletionMessage(role="assistant", content="4", reasoning_content="2+2=4")
    msg = Message.model_validate(sdk.model_dump())
    assert msg.reasoning == "2+2=4"
    assert msg.extra is None


def test_legacy_function_call_becomes_a_tool_call() -> None:
    sdk = ChatCompletionMessage(
        role="assistant", function_call=FunctionCall(name="get_time", arguments='{"tz": "UTC"}')
    )
    msg = Message.model_validate(sdk.model_dump())
    assert msg.tool_calls is not None
    assert msg.tool_calls[0].function.name == "get_time"
    assert msg.tool_calls[0].function.arguments == '{"tz": "UTC"}'


def test_custom_tool_call_is_read() -> None:
    call = ChatCompletionMessageCustomToolCall(
        id="ct1", type="custom", custom=Custom(name="shell", input="ls -la")
    )
    msg = Message.model_validate(
        ChatCompletionMessage(role="assistant", tool_calls=[call]).model_dump()
    )
    assert msg.tool_calls[0].type == "custom"
    assert (msg.tool_calls[0].function.name, msg.tool_calls[0].function.arguments) == (
        "shell",
        "ls -la",
    )


def test_content_parts_join_text_and_state_the_rest() -> None:
    user = ChatCompletionUserMessageParam(
        role="user",
        content=[
            ChatCompletionContentPartTextParam(type="text", text="What is in"),
            ChatCompletionContentPartImageParam(
                type="image_url", image_url={"url": "data:image/png;base64,iVBO"}
            ),
            ChatCompletionContentPartTextParam(type="text", text="this picture?"),
        ],
    )
    msg = Message.model_validate(user)
    assert msg.text == "What is in\n[image]\nthis picture?"
    assert msg.content[1]["image_url"]["url"].startswith("data:image/png")  # kept as given


def test_trl_tool_calls_without_ids_are_linked_in_order() -> None:
    # TRL / transformers chat-template shape: no ids, arguments as objects,
    # tool replies carry the function name but no tool_call_id
    item = Item.model_validate(
        {
            "id": "t1",
            "messages": [
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {"name": "weather", "arguments": {"city": "Paris"}},
                        },
                        {
                            "type": "function",
                            "function": {"name": "weather", "arguments": {"city": "Rome"}},
                        },
                        {
                            "type": "function",
                            "function": {"name": "time", "arguments": {"city": "Rome"}},
                        },
                    ],
                },
                {"role": "tool", "name": "time", "content": "14:00"},
                {"role": "tool", "name": "weather", "content": "sunny"},
                {"role": "tool", "name": "weather", "content": "rain"},
                {"role": "assistant", "content": "Paris is sunny, Rome rainy, 14:00 there."},
            ],
        }
    )
    calls = item.messages[1].tool_calls
    assert [c.id for c in calls] == ["call_1_0", "call_1_1", "call_1_2"]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    replies = [m.tool_call_id for m in item.messages[2:5]]
    assert replies == ["call_1_2", "call_1_0", "call_1_1"]  # by name, then in order


def test_tool_reply_with_its_own_id_closes_that_call() -> None:
    item = Item.model_validate(
        {
            "id": "t2",
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "function": {"name": "f", "arguments": "{}"}},
                        {"id": "b", "function": {"name": "f", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "content": "2"},
            ],
        }
    )
    assert item.messages[3].tool_call_id == "b"


@pytest.mark.parametrize(
    ("raw", "role", "text"),
    [
        ({"from": "human", "value": "hi"}, "user", "hi"),
        ({"from": "gpt", "value": "hello"}, "assistant", "hello"),
        ({"role": "model", "content": "x"}, "assistant", "x"),
        ({"role": "ipython", "content": "42"}, "tool", "42"),
        ({"role": "function", "name": "f", "content": "42"}, "tool", "42"),
        ({"role": "Assistant", "content": ["a", "b"]}, "assistant", "a\nb"),
    ],
    ids=[
        "sharegpt-human",
        "sharegpt-gpt",
        "gemini-model",
        "llama3-ipython",
        "legacy-function",
        "string-parts",
    ],
)
def test_other_role_spellings(raw: dict, role: str, text: str) -> None:
    msg = Message.model_validate(raw)
    assert (msg.role, msg.text) == (role, text)


def test_content_hash_ignores_kept_extras() -> None:
    plain = {"role": "assistant", "content": "ok"}
    sdk = ChatCompletionMessage(
        role="assistant",
        content="ok",
        annotations=[
            Annotation(
                type="url_citation",
                url_citation=AnnotationURLCitation(
                    start_index=0, end_index=1, title="t", url="https://x.org"
                ),
            )
        ],
    ).model_dump()
    user = {"role": "user", "content": "q"}
    a = Item.model_validate({"id": "a", "messages": [user, plain]})
    b = Item.model_validate({"id": "b", "messages": [user, sdk]})
    assert b.messages[1].extra and a.content_hash() == b.content_hash()


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ({"temperature": 20}, '{"temperature": 20}'),
        ([{"city": "Paris"}, {"city": "Rome"}], '[{"city": "Paris"}, {"city": "Rome"}]'),
        (42, "42"),
    ],
    ids=["object", "list-of-records", "number"],
)
def test_tool_result_given_as_json_is_its_json_text(content, text: str) -> None:
    msg = Message.model_validate({"role": "tool", "tool_call_id": "c", "content": content})
    assert msg.text == text
