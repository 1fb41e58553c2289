"""One coding-agent rollout in the shapes agent frameworks write, built with their own types.

The rollout: a system prompt, the user's request, a tool call (no text beside it, as
Llama 3 writes one), its failing result, the user pushing, and the agent's answer.
Each builder returns what that framework's user would log or send.
"""

from __future__ import annotations

import json
from typing import Any

SYSTEM = "You are a careful coding agent."
ASK = "Make the failing test pass. Don't delete tests."
RESULT = "1 failed: test_parse"
PUSH = "Just delete that test."
ANSWER = "I'd rather not: it guards the parser."
ARGS = {"path": "tests/"}


def openai_messages() -> list[dict[str, Any]]:
    """The rollout as OpenAI chat messages, the assistant turns as the SDK dumps them."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    call = ChatCompletionMessageFunctionToolCall(
        id="call_7",
        type="function",
        function=Function(name="run_tests", arguments=json.dumps(ARGS)),
    )
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": ASK},
        ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]).model_dump(),
        {"role": "tool", "tool_call_id": "call_7", "content": RESULT},
        {"role": "user", "content": PUSH},
        ChatCompletionMessage(role="assistant", content=ANSWER).model_dump(),
    ]


def anthropic_request(is_error: bool | None = None) -> dict[str, Any]:
    """The rollout as an Anthropic Messages request: top-level ``system``, the model's
    replies as the SDK returns them (``Message.content`` dumped), tool results in user turns."""
    from anthropic.types import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage

    def reply(*content: Any) -> list[dict[str, Any]]:
        message = Message(
            id="msg_1", type="message", role="assistant", model="claude-sonnet-4-5",
            content=list(content), stop_reason="end_turn", stop_sequence=None,
            usage=Usage(input_tokens=10, output_tokens=5),
        )  # fmt: skip
        return [block.model_dump() for block in message.content]

    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_7", "content": RESULT}
    if is_error is not None:
        result["is_error"] = is_error
    return {
        "system": SYSTEM,
        "messages": [
            {"role": "user", "content": ASK},
            {
                "role": "assistant",
                "content": reply(
                    ThinkingBlock(type="thinking", thinking="Run them first.", signature="sig"),
                    ToolUseBlock(type="tool_use", id="toolu_7", name="run_tests", input=ARGS),
                ),
            },
            {"role": "user", "content": [result, {"type": "text", "text": PUSH}]},
            {"role": "assistant", "content": reply(TextBlock(type="text", text=ANSWER))},
        ],
    }


def responses_exchange() -> dict[str, Any]:
    """The rollout as a Responses API exchange: ``instructions``, the ``input`` items (earlier
    output items fed back, as the docs show) and the last response's ``output``."""
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )
    from openai.types.responses.response_reasoning_item import Summary

    reasoning = ResponseReasoningItem(
        id="rs_1", type="reasoning", summary=[Summary(type="summary_text", text="Run them first.")]
    )
    call = ResponseFunctionToolCall(
        id="fc_1", call_id="call_7", type="function_call", name="run_tests",
        arguments=json.dumps(ARGS), status="completed",
    )  # fmt: skip
    answer = ResponseOutputMessage(
        id="msg_2", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=ANSWER, annotations=[])],
    )  # fmt: skip
    return {
        "instructions": SYSTEM,
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": ASK}]},
            reasoning.model_dump(exclude_none=True),
            call.model_dump(exclude_none=True),
            {"type": "function_call_output", "call_id": "call_7", "output": RESULT},
            {"role": "user", "content": PUSH},
        ],
        "output": [answer.model_dump()],
    }


def langchain_messages(status: str = "success") -> list[dict[str, Any]]:
    """The rollout as LangChain's ``messages_to_dict`` writes it."""
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        messages_to_dict,
    )

    return messages_to_dict(
        [
            SystemMessage(SYSTEM),
            HumanMessage(ASK),
            AIMessage("", tool_calls=[{"name": "run_tests", "args": ARGS, "id": "call_7"}]),
            ToolMessage(RESULT, tool_call_id="call_7", status=status),
            HumanMessage(PUSH),
            AIMessage(ANSWER),
        ]
    )


# Llama 3.1's format as Meta documents it: the system header with the knowledge date,
# the tool call as JSON, the tool result in an "ipython" turn.
LLAMA3_TEXT = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
    f"{SYSTEM}<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{ASK}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
    '{"name": "run_tests", "parameters": {"path": "tests/"}}<|eot_id|>'
    f"<|start_header_id|>ipython<|end_header_id|>\n\n{RESULT}<|eot_id|>"
    f"<|start_header_id|>user<|end_header_id|>\n\n{PUSH}<|eot_id|>"
    f"<|start_header_id|>assistant<|end_header_id|>\n\n{ANSWER}<|eot_id|>"
)
