"""LangChain messages as ``messages_to_dict`` writes them: ``{"type": "ai", "data": {...}}``.

``human`` / ``ai`` / ``system`` / ``tool`` (and their ``*Chunk`` forms) read as
the OpenAI roles; an AI message's ``tool_calls`` (``{"name", "args", "id"}``)
are its tool calls, a tool message's ``status: "error"`` is ``is_error``, and
reasoning kept in ``additional_kwargs`` is ``reasoning``. Content given as
blocks (Anthropic's, or LangChain's standard ones) is read as blocks.
"""

from __future__ import annotations

from typing import Any

from ._blocks import has_blocks, read_blocks
from ._common import Unread, new_message, tool_call

__all__ = ["is_langchain", "read_langchain"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
          "function": "tool", "developer": "developer"}  # fmt: skip


def _kind(obj: dict[str, Any]) -> str:
    return str(obj.get("type", "")).removesuffix("MessageChunk").removesuffix("Chunk").lower()


def is_langchain(obj: dict[str, Any]) -> bool:
    """Whether a record is one message of ``messages_to_dict``'s output."""
    return (
        isinstance(obj.get("data"), dict)
        and (_kind(obj) in _ROLES or _kind(obj) == "chat")
        and set(obj) <= {"type", "data"}
    )


def read_langchain(obj: dict[str, Any], unread: Unread) -> list[dict[str, Any]]:
    """One ``messages_to_dict`` record as OpenAI messages."""
    data = obj["data"]
    kind = _kind(obj)
    role = str(data.get("role", "user")) if kind == "chat" else _ROLES[kind]
    kwargs = data.get("additional_kwargs") or {}
    calls = [
        tool_call(c.get("id"), c.get("name"), c.get("args"))
        for c in data.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    for bad in data.get("invalid_tool_calls") or []:  # a call the model wrote unparseably
        calls.append(tool_call(bad.get("id"), bad.get("name"), bad.get("args")))
    fields: dict[str, Any] = {
        "name": data.get("name") if role != "tool" else None,
        "tool_call_id": data.get("tool_call_id"),
        "is_error": True if data.get("status") == "error" else None,
        "reasoning": kwargs.get("reasoning_content"),
    }
    if role != "assistant":
        calls = []
    content = data.get("content")
    if has_blocks(content):
        read = read_blocks({"role": role, "content": content, "tool_calls": calls}, unread)
        for key, value in fields.items():
            if value is not None:
                read[0].setdefault(key, value)
        return read
    if isinstance(content, list):
        return [new_message(role, None, **fields, tool_calls=calls) | {"content": content}]
    return [new_message(role, content if content != "" else None, **fields, tool_calls=calls)]
