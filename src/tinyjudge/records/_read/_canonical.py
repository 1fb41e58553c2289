"""The one normalisation every transcript gets, however it arrived.

A rollout may come as messages or as chat-template text; the template trims
the text, inserts its default system prompt when the conversation has none,
does not write a tool reply's ``name``, and writes a call's arguments as JSON.
So messages from a file or a request are normalised the same way, and an item
imported for training reads exactly as the same rollout does when served.
"""

from __future__ import annotations

import json
from typing import Any

from .._messages import Message

__all__ = ["DEFAULT_SYSTEM_PROMPTS", "canonical", "canonical_messages"]

# System prompts that chat templates insert when the conversation has none.
DEFAULT_SYSTEM_PROMPTS = frozenset(
    {
        "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
        "You are a helpful assistant.",
    }
)


def _arguments(call: Any) -> Any:
    """A tool call with its JSON arguments written one way (``{"a": 1}``)."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    args = call["function"].get("arguments")
    if isinstance(args, dict | list):
        parsed: Any = args
    elif isinstance(args, str) and args.strip().startswith(("{", "[")):
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError:
            return call
    else:
        return call
    function = {**call["function"], "arguments": json.dumps(parsed, ensure_ascii=False)}
    return {**call, "function": function}


def canonical(messages: list[Any]) -> list[Any]:
    """Messages normalised the same way whichever way they arrived.

    Text content is stripped (templates trim it), empty content is None, the
    system prompts templates insert by default are dropped, a tool reply's
    ``name`` is dropped (templates do not write it; the call it answers is
    found by order), and tool-call arguments are JSON text written one way.
    Records that are not message objects are left for validation to refuse.
    """
    out = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(message)
            continue
        m = dict(message)
        if isinstance(m.get("content"), str):
            m["content"] = m["content"].strip() or None
        text = m.get("content")
        default = text is None or (isinstance(text, str) and text in DEFAULT_SYSTEM_PROMPTS)
        if m.get("role") == "system" and default:
            continue
        if m.get("role") in ("tool", "ipython", "function"):
            m.pop("name", None)
        if isinstance(m.get("tool_calls"), list):
            m["tool_calls"] = [_arguments(c) for c in m["tool_calls"]]
        out.append(m)
    return out


def canonical_messages(messages: list[Message]) -> list[Message]:
    """Messages as the reward server reads them: through the one reader, then :func:`canonical`.

    Every reward path (training, ``score``, ``serve``, the RL adapters, Ray) reads an
    item's messages through this before a model sees them, so one rollout gets one
    reward whichever way it arrived. Reading is idempotent: read messages read alike.
    """
    from ._common import Unread
    from ._transcript import read_messages

    dumped = [m.model_dump(mode="json", exclude_none=True) for m in messages]
    return [Message.model_validate(m) for m in canonical(read_messages(dumped, Unread()))]
