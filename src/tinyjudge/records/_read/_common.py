"""What every shape reader shares: the tally of what was not understood, and JSON text."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

__all__ = ["Unread", "json_text", "text_of", "new_message", "tool_call", "dicts", "fields"]


class Unread(Counter[str]):
    """Parts and records the reader did not know, by a name saying what each was.

    The name says where it was met and its type, e.g. ``content part "audio_clip"``
    or ``Responses item "web_search_preview"``, so a summary can list them.
    """

    def note(self, where: str, kind: Any) -> None:
        self[f'{where} "{kind}"'] += 1


def json_text(value: Any) -> str:
    """A value as the text a tool call or tool result carries: strings as they are,
    anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def text_of(value: Any) -> str:
    """Text given as a string or as a list of strings/``{"text": ...}`` parts (else JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        for p in value
    ):
        return "\n".join(p if isinstance(p, str) else p["text"] for p in value if p)
    return json_text(value)


def new_message(role: str, content: str | None = None, **fields: Any) -> dict[str, Any]:
    """A message in the OpenAI shape, with only the fields that hold something."""
    out: dict[str, Any] = {"role": role, "content": content}
    out.update({k: v for k, v in fields.items() if v is not None and v != []})
    return out


def tool_call(call_id: Any, name: Any, arguments: Any, kind: str = "function") -> dict[str, Any]:
    """A tool call in the OpenAI shape; arguments given as an object become JSON text."""
    function = {"name": name or "", "arguments": json_text(arguments)}
    return {"id": call_id, "type": kind, "function": function}


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (anything else: none), for fields other tools fill loosely."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def fields(value: Any) -> dict[str, Any]:
    """An object's fields (anything else: none)."""
    return value if isinstance(value, dict) else {}
