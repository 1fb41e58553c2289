"""Plain-text views of an item that the reward models read.

A reward model learns what the teacher judged: the assistant's reply to the last
request, in the light of what came before. So each item is split into a
``context`` (everything up to and including the last user turn) and a
``response`` (everything after it: assistant turns, tool calls, tool results).
"""

from __future__ import annotations

from typing import NamedTuple

from tinyjudge.records import Item, Message

__all__ = ["View", "render_messages", "item_views", "opening"]


class View(NamedTuple):
    """The two parts of one scored text: what was asked, and the reply."""

    context: str
    response: str


def _render(message: Message) -> str:
    parts = [message.text]
    for call in message.tool_calls or []:
        parts.append(f"[call {call.function.name}({call.function.arguments})]")
    speaker = message.role if not message.name else f"{message.role} ({message.name})"
    return f"{speaker}: " + "\n".join(p for p in parts if p)


def render_messages(messages: list[Message]) -> str:
    """Messages as ``role: text`` lines, tool calls shown inline."""
    return "\n".join(_render(m) for m in messages)


def _split(messages: list[Message]) -> View:
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    if last_user == len(messages) - 1 or last_user < 0:
        # No reply after the last request (or no request at all): the final
        # message is what gets scored, the rest is context.
        last_user = len(messages) - 2
    head, tail = messages[: last_user + 1], messages[last_user + 1 :]
    # The reply is shown without role prefixes when it is one plain assistant
    # turn, which is the common case and keeps its opening words first.
    if len(tail) == 1 and tail[0].role == "assistant" and not tail[0].tool_calls:
        response = tail[0].text
    else:
        response = render_messages(tail)
    return View(render_messages(head), response)


def item_views(item: Item) -> list[View]:
    """One view for a single item; two (``a`` then ``b``) for a pairwise item."""
    if not item.is_pairwise:
        return [_split(item.messages)]
    context = render_messages(item.context or [])
    return [
        View(context, render_messages(item.response_a or [])),
        View(context, render_messages(item.response_b or [])),
    ]


def opening(text: str, n_chars: int = 300) -> str:
    """The first ``n_chars`` of a reply: where a refusal usually shows."""
    return text[:n_chars]
