"""Claude Code session logs: one JSON line per event, the Anthropic message in ``message``.

A line is ``{"type": "user" | "assistant", "message": {...}, "sessionId", "uuid", ...}``;
an assistant reply of several blocks is written as several lines sharing its message
``id``, which are joined back into one turn. Summaries and other bookkeeping lines are
left out.
"""

from __future__ import annotations

from typing import Any

from ._common import fields

__all__ = ["is_claude_code_event", "session_messages"]

_TURNS = frozenset({"user", "assistant"})
_BOOKKEEPING = frozenset({"summary", "system", "file-history-snapshot", "queue-operation"})


def is_claude_code_event(obj: Any) -> bool:
    """Whether a record is one line of a Claude Code session log."""
    if not isinstance(obj, dict) or "sessionId" not in obj or not isinstance(obj.get("type"), str):
        return False
    return obj["type"] in _BOOKKEEPING or (obj["type"] in _TURNS and "message" in obj)


def session_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Anthropic messages of a session's events, a reply's blocks joined into one turn."""
    out: list[dict[str, Any]] = []
    last_id: Any = None
    for event in events:
        message = fields(event.get("message"))
        if event.get("type") not in _TURNS or not message:
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        reply_id = message.get("id")
        if out and reply_id and reply_id == last_id and out[-1]["role"] == "assistant":
            out[-1]["content"] = [*out[-1]["content"], *blocks]
            continue
        out.append({"role": message.get("role", event.get("type")), "content": list(blocks)})
        last_id = reply_id
    return out
