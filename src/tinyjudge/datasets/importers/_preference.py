"""Preference rows as pairwise items: HH-RLHF's ``{chosen, rejected}`` and TRL's
``{prompt, chosen, rejected}``.

HH-RLHF writes each side as one text of turns (``"\\n\\nHuman: ...\\n\\nAssistant: ..."``);
other sets write lists of messages. Without a ``prompt``, the two sides are whole
transcripts that share their opening turns: the shared turns are the pair's
context and the rest of each side its response. With a ``prompt`` (TRL's
preference format, plain or conversational), each side is the completion.

Which side is ``response_a`` is decided by the pair's content (not always the
chosen one, so no position is always right); ``metadata.preferred`` says which
it is (``a`` or ``b``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tinyjudge.records import Unread, canonical, read_messages

__all__ = ["is_preference_row", "read_preference", "PREFERENCE_FIELDS"]

PREFERENCE_FIELDS = ("prompt", "chosen", "rejected")
# HH-RLHF's turn markers: a blank line, then the speaker.
_TURN = re.compile(r"\n\n(Human|Assistant):[ ]?")
_ROLES = {"Human": "user", "Assistant": "assistant"}


def is_preference_row(row: dict[str, Any]) -> bool:
    """Whether a row is a preference pair (``chosen`` and ``rejected`` both present)."""
    return row.get("chosen") is not None and row.get("rejected") is not None


def _turns(text: str) -> list[dict[str, Any]] | None:
    """HH-RLHF's text of turns as messages (None: the text holds no turn markers)."""
    parts = _TURN.split("\n\n" + text.lstrip("\n") if text.startswith(("Human:", "\n")) else text)
    if len(parts) < 3:
        return None
    head, rest = parts[0], parts[1:]
    out = [{"role": "user", "content": head}] if head.strip() else []
    out += [
        {"role": _ROLES[who], "content": said}
        for who, said in zip(rest[::2], rest[1::2], strict=True)
    ]
    return out


def _side(value: Any, key: str, default_role: str, unread: Unread) -> list[dict[str, Any]]:
    """One side of a pair (or the prompt) as OpenAI messages."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[") or stripped.startswith("{"):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError:
                pass
    if isinstance(value, str):
        return _turns(value) or [{"role": default_role, "content": value}]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ValueError(f'"{key}" must be text or a non-empty list of messages, got {value!r:.60}')
    return read_messages(value, unread)


def _same(m: dict[str, Any], n: dict[str, Any]) -> bool:
    return json.dumps(m, sort_keys=True, default=str) == json.dumps(n, sort_keys=True, default=str)


def _check_one_context(
    chosen: list[dict[str, Any]], rejected: list[dict[str, Any]], shared: int
) -> None:
    """Refuse two sides that answer different prompts.

    A pair compares two answers to one context: each side must open with the
    answer (an assistant turn). A side that opens with another turn (HH-RLHF sides
    whose human turns differ, a TRL side that starts with a user turn of its own)
    answers something else, and its preference says nothing about the other.
    """
    for name, side in (("chosen", chosen), ("rejected", rejected)):
        role = side[0].get("role")
        if role != "assistant":
            text = str(side[0].get("content") or "")
            said = text if len(text) <= 60 else text[:60] + "..."
            raise ValueError(
                f'"chosen" and "rejected" answer different prompts: after {shared} shared '
                f'turns "{name}" goes on with a {role} turn ({said!r}), not an answer; '
                "both sides must answer the same context"
            )


def read_preference(row: dict[str, Any], unread: Unread) -> tuple[dict[str, Any], set[str]]:
    """A preference row as the fields of a pairwise item, and the row's fields it used.

    Returns:
        ``{"context", "response_a", "response_b", "metadata": {"preferred": "a"|"b"}}``
        (messages normalised as every import normalises them) and the used fields.

    Raises:
        ValueError: a side that holds no messages, two sides that do not differ, a
            response without an assistant turn, or two sides that answer different
            prompts (a side that does not open with the answer).
    """
    used = {"chosen", "rejected"}
    chosen = canonical(_side(row["chosen"], "chosen", "assistant", unread))
    rejected = canonical(_side(row["rejected"], "rejected", "assistant", unread))
    if row.get("prompt") is not None:
        used.add("prompt")
        context = canonical(_side(row["prompt"], "prompt", "user", unread))
    else:
        k = 0
        while k < min(len(chosen), len(rejected)) - 1 and _same(chosen[k], rejected[k]):
            k += 1
        context, chosen, rejected = chosen[:k], chosen[k:], rejected[k:]
    if all(_same(m, n) for m, n in zip(chosen, rejected, strict=False)) and len(chosen) == len(
        rejected
    ):
        raise ValueError('"chosen" and "rejected" are the same: a pair needs two responses')
    for name, side in (("chosen", chosen), ("rejected", rejected)):
        if not any(m.get("role") == "assistant" for m in side):
            roles = [m.get("role") for m in side]
            raise ValueError(f'"{name}" has no assistant turn after the shared context ({roles})')
    _check_one_context(chosen, rejected, len(context))
    digest = hashlib.sha256(json.dumps([chosen, rejected], default=str).encode()).digest()
    flip = digest[0] % 2 == 1
    a, b = (rejected, chosen) if flip else (chosen, rejected)
    pair = {"context": context, "response_a": a, "response_b": b}
    return {**pair, "metadata": {"preferred": "b" if flip else "a"}}, used
