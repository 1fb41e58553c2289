"""OpenAI Responses API items (``input`` and ``output`` lists) as OpenAI chat messages.

``message`` items read as messages (``input_text`` / ``output_text`` parts as
text); a ``reasoning`` item's summary (or its content) is the next assistant
turn's ``reasoning``; ``function_call`` and ``custom_tool_call`` items are tool
calls of the assistant turn they follow, their ``call_id`` the call's id, which
their ``*_output`` items answer; the hosted tools (web search, file search, code
interpreter, shell, computer, MCP) are a call and, where the item holds one, its
result.
"""

from __future__ import annotations

from typing import Any

from ._blocks import read_blocks, result_text
from ._common import Unread, dicts, json_text, new_message, text_of, tool_call

__all__ = ["RESPONSES_ITEMS", "is_responses_item", "add_responses_item"]

# Calls the client runs: the name (None: the item's), where the arguments are, the call's type.
_CALLS = {
    "function_call": (None, "arguments", "function"),
    "custom_tool_call": (None, "input", "custom"),
    "program": ("program", "code", "function"),
}
# Their results, answering a call by its ``call_id``: where the output is.
_OUTPUTS = {
    "function_call_output": "output",
    "custom_tool_call_output": "output",
    "computer_call_output": "output",
    "local_shell_call_output": "output",
    "shell_call_output": "output",
    "apply_patch_call_output": "output",
    "program_output": "result",
    "tool_search_output": "tools",
}
# Hosted tools: a call whose arguments and result are fields of the one item.
_HOSTED = {
    "web_search_call": ("web_search", "action", None),
    "file_search_call": ("file_search", "queries", "results"),
    "code_interpreter_call": ("code_interpreter", "code", "outputs"),
    "image_generation_call": ("image_generation", "revised_prompt", None),
    "mcp_call": (None, "arguments", "output"),
    "computer_call": ("computer", "action", None),
    "local_shell_call": ("local_shell", "action", None),
    "shell_call": ("shell", "action", None),
    "apply_patch_call": ("apply_patch", "operation", None),
    "tool_search_call": ("tool_search", "arguments", None),
}
# Items that say nothing about the exchange (tool listings, approvals, references).
_BOOKKEEPING = frozenset(
    {"mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "item_reference",
     "compaction", "additional_tools"}
)  # fmt: skip
RESPONSES_ITEMS = frozenset({"message", "reasoning", *_CALLS, *_OUTPUTS, *_HOSTED, *_BOOKKEEPING})


def is_responses_item(obj: dict[str, Any]) -> bool:
    """Whether a record is a Responses item (by its ``type``)."""
    kind = obj.get("type")
    return isinstance(kind, str) and (kind in RESPONSES_ITEMS or kind.endswith("_call"))


def _open_assistant(out: list[dict[str, Any]], *, for_text: bool) -> dict[str, Any]:
    """The assistant turn an item belongs to: the last one, while nothing followed it."""
    last = out[-1] if out else None
    if last is not None and last.get("role") == "assistant":
        if not for_text or (last.get("content") is None and not last.get("tool_calls")):
            return last
    turn = new_message("assistant")
    out.append(turn)
    return turn


def _call(out: list[dict[str, Any]], call_id: Any, name: Any, arguments: Any, kind: str) -> None:
    turn = _open_assistant(out, for_text=False)
    turn.setdefault("tool_calls", []).append(tool_call(call_id, name, arguments, kind))


def add_responses_item(out: list[dict[str, Any]], item: dict[str, Any], unread: Unread) -> None:
    """Read one Responses item onto the messages read so far."""
    kind = str(item.get("type"))
    if kind == "message":
        role = item.get("role", "assistant")
        content = item.get("content")
        read = (
            read_blocks({"role": role, "content": content}, unread)
            if isinstance(content, list)
            else [new_message(str(role), content)]
        )
        if role == "assistant" and read and read[0]["role"] == "assistant":
            # the turn a reasoning item opened (an Anthropic Message dump's blocks too)
            first, read = read[0], read[1:]
            turn = _open_assistant(out, for_text=True)
            turn["content"] = first.get("content")
            thoughts = [t for t in (turn.get("reasoning"), first.get("reasoning")) if t]
            turn["reasoning"] = "\n".join(thoughts) or None
            if first.get("tool_calls"):
                turn["tool_calls"] = [*turn.get("tool_calls", []), *first["tool_calls"]]
        out.extend(read)
    elif kind == "reasoning":
        summary = text_of(dicts(item.get("summary")))
        thought = summary or text_of(dicts(item.get("content")))
        turn = _open_assistant(out, for_text=True)
        turn["reasoning"] = "\n".join(t for t in (turn.get("reasoning"), thought) if t) or None
    elif kind in _CALLS:
        name, args_key, call_kind = _CALLS[kind]
        call_id = item.get("call_id") or item.get("id")
        _call(out, call_id, name or item.get("name"), item.get(args_key), call_kind)
    elif kind in _OUTPUTS:
        output = result_text(item.get(_OUTPUTS[kind]), unread)
        out.append(new_message("tool", output, tool_call_id=item.get("call_id")))
    elif kind in _HOSTED:
        name, args_key, result_key = _HOSTED[kind]
        call_id = item.get("call_id") or item.get("id")
        _call(out, call_id, name or item.get("name"), item.get(args_key), "function")
        result = item.get(result_key) if result_key else None
        failed = item.get("status") == "failed" or bool(item.get("error"))
        if result is not None or failed:
            text = text_of(result) if result is not None else json_text(item.get("error"))
            out.append(new_message("tool", text, tool_call_id=call_id, is_error=failed or None))
    elif kind not in _BOOKKEEPING:
        unread.note("Responses item", kind)
