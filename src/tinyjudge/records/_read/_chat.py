"""One message in the OpenAI chat shape or a near relative (Inspect AI, SWE-agent).

Inspect AI writes a tool call's ``function`` as the tool's name and its
``arguments`` as an object, and a failed tool result's ``error``
(``{"type", "message"}``); SWE-agent links a tool result by ``tool_call_ids``.
Content given as blocks is read by :func:`read_blocks`; a content part of a type
no reader knows is tallied in ``unread``.
"""

from __future__ import annotations

from typing import Any

from ._blocks import has_blocks, read_blocks
from ._common import Unread, json_text

__all__ = ["read_chat_message"]


def _tool_call(call: Any) -> Any:
    """A tool call whose ``function`` is the tool's name (Inspect) in the OpenAI shape."""
    if isinstance(call, dict) and isinstance(call.get("function"), str):
        rest = {k: v for k, v in call.items() if k not in ("function", "arguments", "type")}
        if rest.get("parse_error") is None:
            rest.pop("parse_error", None)
        function = {"name": call["function"], "arguments": json_text(call.get("arguments"))}
        return {**rest, "type": "function", "function": function}
    return call


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message")
        if kind and kind != "unknown" and message:
            return f"{kind}: {message}"
        return str(message or kind or error)
    return str(error)


def read_chat_message(message: dict[str, Any], unread: Unread) -> list[dict[str, Any]]:
    """A chat message as one or more OpenAI messages (a block list may hold tool results)."""
    m = dict(message)
    if isinstance(m.get("tool_calls"), list):
        m["tool_calls"] = [_tool_call(c) for c in m["tool_calls"]]
    ids = m.pop("tool_call_ids", None)
    if isinstance(ids, list) and ids and not m.get("tool_call_id"):  # SWE-agent
        m["tool_call_id"] = ids[0]
    role = str(m.get("role", "")).lower()
    if role == "tool" and isinstance(m.get("function"), str) and not m.get("name"):  # Inspect
        m["name"] = m.pop("function")
    error = m.pop("error", None)
    if role == "tool" and error:  # Inspect's ToolCallError
        m["is_error"] = True
        detail = _error_text(error)
        text = m.get("content")
        if isinstance(text, str) and detail not in text:
            m["content"] = f"{text}\n{detail}" if text.strip() else detail
        elif not text:
            m["content"] = detail
    elif error:
        m["error"] = error  # kept, as any other field
    content = m.get("content")
    if has_blocks(content):
        return read_blocks(m, unread)
    return [m]
