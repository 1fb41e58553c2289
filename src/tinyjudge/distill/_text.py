"""Plain-text views of an item that the reward models read.

A reward model learns what the teacher judged: the assistant's reply to the last
request, in the light of what came before. So each item is split into a
``context`` (everything up to and including the last user turn) and a
``response`` (everything after it: assistant turns, tool calls, tool results).

A rubric's ``reward_model.view`` (one of :data:`tinyjudge.rubric.VIEWS`) may
narrow the context to the first user turn (and the first answer), or to nothing
(``answer``), and ``reward_model.references`` adds the rubric's references;
:func:`item_views` is the one place that builds what a model reads, for fitting,
scoring and serving alike.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Message, canonical_messages
from tinyjudge.rubric import VIEWS, Rubric

__all__ = ["View", "render_messages", "item_views", "as_pair", "answer_prefixes", "opening"]


class View(NamedTuple):
    """The two parts of one scored text: what was asked, and the reply.

    ``keep_context`` says which end of the context survives truncation: the end
    (the request nearest the reply) for a window, the start (the first user
    turn) when the context opens the dialogue. ``references`` is the rubric's
    references for the item (the correct answer, the expected actions), rendered
    as text, or empty: every tier reads them on the context side, apart from the
    dialogue, and they are never cut before the context is.
    """

    context: str
    response: str
    keep_context: Literal["end", "start"] = "end"
    references: str = ""


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


def _narrow(messages: list[Message], view: str) -> View:
    """The first user turn (and first answer) as context, the last reply as response."""
    window = _split(messages)
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if first_user is None or last_user is None or last_user == len(messages) - 1:
        return window  # no reply after a request: nothing to narrow
    if view == "answer":
        return View("", window.response, "start")
    head = [messages[first_user]]
    if view == "first_user_first_last_answer" and last_user > first_user:
        # The first answer: what follows the first user turn up to the next one.
        nxt = next(i for i in range(first_user + 1, len(messages)) if messages[i].role == "user")
        head += messages[first_user + 1 : nxt]
    return View(render_messages(head), window.response, "start")


def item_views(item: Item, view: str = "window", rubric: Rubric | None = None) -> list[View]:
    """What a reward model reads: one view for a single item, two (``a``, ``b``) for a pair.

    Args:
        item: the item.
        view: a rubric's ``reward_model.view``, one of :data:`tinyjudge.rubric.VIEWS`:
            ``window`` (everything up to the last user turn, then the reply),
            ``answer`` (the last answer alone), ``first_user_last_answer`` or
            ``first_user_first_last_answer``.
        rubric: the model's rubric; when its ``reward_model.references`` is set,
            each view carries the item's references (:meth:`Rubric.reference_text`).
    """
    if view not in VIEWS:
        raise TinyjudgeError(f"unknown reward-model view {view!r}; views are {list(VIEWS)}")
    refs = rubric.reference_text(item) if rubric and rubric.reward_model.references else ""
    # Every path reads messages as the server does, so one rollout gets one reward.
    if not item.is_pairwise:
        msgs = canonical_messages(item.messages)
        one = _split(msgs) if view == "window" else _narrow(msgs, view)
        return [one._replace(references=refs)]
    ctx = canonical_messages(item.context or [])
    if view == "answer":
        ctx = []
    elif view != "window":
        ctx = [m for m in ctx if m.role == "user"][:1] or ctx
    context = render_messages(ctx)
    keep: Literal["end", "start"] = "end" if view == "window" else "start"
    return [
        View(context, render_messages(canonical_messages(item.response_a or [])), keep, refs),
        View(context, render_messages(canonical_messages(item.response_b or [])), keep, refs),
    ]


def as_pair(item: Item) -> Item:
    """A single item as a pair of its reply with itself: what a pairwise model reads of one
    side (the context up to the last user turn, the reply after it), so a single rollout
    is read as that model read each response in training."""
    if item.is_pairwise:
        return item
    msgs = item.messages
    last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
    if last_user in (-1, len(msgs) - 1):
        last_user = len(msgs) - 2  # no reply after the last request: the final message is it
    head, tail = msgs[: last_user + 1], msgs[last_user + 1 :]
    return Item(id=item.id, context=head, response_a=tail, response_b=tail, metadata=item.metadata)


def answer_prefixes(item: Item) -> list[Item]:
    """The item cut after each of its answers (an assistant turn followed by a user turn).

    The last prefix is the item itself; an item with one answer (or none) gives
    itself alone. Used to score every answer of a dialogue on its own.
    """
    msgs = item.messages
    cuts = [
        i + 1
        for i in range(len(msgs) - 1)
        if msgs[i].role == "assistant"
        and msgs[i + 1].role == "user"
        and any(m.role == "user" for m in msgs[:i])
    ]
    return [item.model_copy(update={"messages": msgs[:c]}) for c in cuts] + [item]


def opening(text: str, n_chars: int = 300) -> str:
    """The first ``n_chars`` of a reply: where a refusal usually shows."""
    return text[:n_chars]
