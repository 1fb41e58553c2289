"""LangChain messages as ``messages_to_dict`` writes them: ``{"type": "ai", "data": {...}}``.

A message's own ``model_dump()`` (``{"type": "ai", "content": ...}``, as LangGraph
state is often saved) and ``dumpd``'s constructor form (``{"lc": 1, "id": [...,
"AIMessage"], "kwargs": {...}}``) are read too.

``human`` / ``ai`` / ``system`` / ``tool`` (and their ``*Chunk`` forms) read as
the OpenAI roles; an AI message's ``tool_calls`` (``{"name", "args", "id"}``)
are its tool calls, a tool message's ``status: "error"`` is ``is_error``, and
reasoning kept in ``additional_kwargs`` is ``reasoning``. Content given as
blocks (Anthropic's, or LangChain's standard ones) is read as blocks.
"""

from __future__ import annotations

from typing import Any

from ._blocks import has_blocks, read_blocks
from ._common import Unread, dicts, fields, new_message, tool_call

__all__ = ["is_langchain", "read_langchain"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
          "function": "tool", "developer": "developer"}  # fmt: skip


def _kind(name: Any) -> str:
    text = str(name or "").removesuffix("Chunk").removesuffix("Message")
    return text.lower()


def _unpacked(obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The message kind and its fields, for each form LangChain writes a message in."""
    if isinstance(obj.get("data"), dict) and set(obj) <= {"type", "data"}:  # messages_to_dict
        return _kind(obj.get("type")), obj["data"]
    ids = obj.get("id")
    if obj.get("lc") == 1 and isinstance(ids, list) and isinstance(obj.get("kwargs"), dict):
        return _kind(ids[-1] if ids else ""), obj["kwargs"]  # dumpd
    if "content" in obj and "role" not in obj and "additional_kwargs" in obj:  # model_dump
        return _kind(obj.get("type")), obj
    return None


def is_langchain(obj: dict[str, Any]) -> bool:
    """Whether a record is one LangChain message (any of the forms it is written in)."""
    unpacked = _unpacked(obj)
    return unpacked is not None and (unpacked[0] in _ROLES or unpacked[0] == "chat")


def read_langchain(obj: dict[str, Any], unread: Unread) -> list[dict[str, Any]]:
    """One LangChain message record as OpenAI messages."""
    unpacked = _unpacked(obj)
    assert unpacked is not None
    kind, data = unpacked
    role = str(data.get("role", "user")) if kind == "chat" else _ROLES[kind]
    kwargs = fields(data.get("additional_kwargs"))
    calls = [
        tool_call(c.get("id"), c.get("name"), c.get("args")) for c in dicts(data.get("tool_calls"))
    ]
    for bad in dicts(data.get("invalid_tool_calls")):  # a call the model wrote unparseably
        calls.append(tool_call(bad.get("id"), bad.get("name"), bad.get("args")))
    said: dict[str, Any] = {
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
        for key, value in said.items():
            if value is not None:
                read[0].setdefault(key, value)
        return read
    if isinstance(content, list):
        return [new_message(role, None, **said, tool_calls=calls) | {"content": content}]
    return [new_message(role, content if content != "" else None, **said, tool_calls=calls)]
