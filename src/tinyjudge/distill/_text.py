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

from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Message, canonical_messages
from tinyjudge.rubric import VIEWS, Rubric

__all__ = [
    "View",
    "CONTEXT_CHARS",
    "render_messages",
    "item_views",
    "as_pair",
    "answer_prefixes",
    "answer_views",
    "request_views",
    "opening",
]


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


# The context of each answer's view under ``combine: worst_answer``: its last (a window)
# or first (a narrowed view) characters. A dialogue of n turns has about n/2 answers, so
# an unbounded context would make scoring it cost the square of its length; bounded, each
# answer costs at most this much, and the whole rollout is linear in its turns. Every tier
# reads a bounded context anyway (an encoder's max_length, a decoder's window). 32,000
# characters (about 8,000 tokens) hold every SYCON and tau-bench context whole. A view of
# the whole item (``combine: last``) keeps its whole context: there is one per item.
CONTEXT_CHARS = 32_000


def _render(message: Message) -> str:
    parts = [message.text]
    for call in message.tool_calls or []:
        parts.append(f"[call {call.function.name}({call.function.arguments})]")
    speaker = message.role if not message.name else f"{message.role} ({message.name})"
    return f"{speaker}: " + "\n".join(p for p in parts if p)


def render_messages(messages: list[Message]) -> str:
    """Messages as ``role: text`` lines, tool calls shown inline."""
    return "\n".join(_render(m) for m in messages)


class _Rendered:
    """Each message of a dialogue rendered at most once, on first use."""

    def __init__(self, messages: list[Message], limit: int | None = None) -> None:
        self.messages = messages
        self.limit = limit  # the characters a context keeps (None: all)
        self._text: dict[int, str] = {}

    def __getitem__(self, i: int) -> str:
        text = self._text.get(i)
        if text is None:
            text = self._text[i] = _render(self.messages[i])
        return text

    def joined(self, start: int, stop: int, keep: Literal["end", "start"]) -> str:
        """Messages ``start:stop`` as :func:`render_messages` gives them, cut to ``limit``
        characters at ``keep``'s end; only the messages that reach it are rendered."""
        limit = self.limit
        if limit is None:
            return "\n".join(self[i] for i in range(start, stop))
        order = range(stop - 1, start - 1, -1) if keep == "end" else range(start, stop)
        parts: list[str] = []
        size = 0
        for i in order:
            if size > limit:
                break
            parts.append(self[i])
            size += len(parts[-1]) + 1
        if keep == "end":
            parts.reverse()
        text = "\n".join(parts)
        if len(text) <= limit:
            return text
        return text[-limit:] if keep == "end" else text[:limit]


def _last_user(msgs: list[Message], stop: int) -> int:
    """The index of the last user turn before ``stop`` (-1 when none), searched backward."""
    return next((i for i in range(stop - 1, -1, -1) if msgs[i].role == "user"), -1)


def _response(r: _Rendered, start: int, stop: int) -> str:
    msgs = r.messages
    # The reply is shown without role prefixes when it is one plain assistant
    # turn, which is the common case and keeps its opening words first.
    if stop - start == 1 and msgs[start].role == "assistant" and not msgs[start].tool_calls:
        return msgs[start].text
    return "\n".join(r[i] for i in range(start, stop))


def _split(r: _Rendered, stop: int) -> View:
    """The window view of the dialogue's first ``stop`` messages."""
    last_user = _last_user(r.messages, stop)
    if last_user == stop - 1 or last_user < 0:
        # No reply after the last request (or no request at all): the final
        # message is what gets scored, the rest is context.
        last_user = stop - 2
    start = max(last_user + 1, 0)
    return View(r.joined(0, start, "end"), _response(r, start, stop))


def _narrow(r: _Rendered, stop: int, view: str) -> View:
    """The first user turn (and first answer) as context, the last reply as response."""
    msgs = r.messages
    first_user = next((i for i in range(stop) if msgs[i].role == "user"), None)
    last_user = _last_user(msgs, stop)
    if first_user is None or last_user == stop - 1:
        return _split(r, stop)  # no reply after a request: nothing to narrow
    # the reply after the last request, as the window has it (its context is not read)
    response = _response(r, last_user + 1, stop)
    if view == "answer":
        return View("", response, "start")
    end = first_user + 1
    if view == "first_user_first_last_answer" and last_user > first_user:
        # The first answer: what follows the first user turn up to the next one.
        end = next(i for i in range(first_user + 1, stop) if msgs[i].role == "user")
    return View(r.joined(first_user, end, "start"), response, "start")


def _single(r: _Rendered, stop: int, view: str, refs: str) -> View:
    one = _split(r, stop) if view == "window" else _narrow(r, stop, view)
    return one._replace(references=refs)


def _limit(rubric: Rubric | None) -> int | None:
    """How much context a view keeps: bounded where every answer is scored."""
    worst = rubric is not None and rubric.reward_model.combine == "worst_answer"
    return CONTEXT_CHARS if worst else None


def item_views(item: Item, view: str = "window", rubric: Rubric | None = None) -> list[View]:
    """What a reward model reads: one view for a single item, two (``a``, ``b``) for a pair.

    Under a rubric whose ``reward_model.combine`` is ``worst_answer``, a view's
    context is at most :data:`CONTEXT_CHARS` characters (the end of the window, or
    the start of a narrowed context), as each answer's is in :func:`answer_views`.

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
        raise UsageError(
            f"unknown reward-model view {view!r}; views are {list(VIEWS)}", param="view"
        )
    refs = rubric.reference_text(item) if rubric and rubric.reward_model.references else ""
    # Every path reads messages as the server does, so one rollout gets one reward.
    if not item.is_pairwise:
        msgs = canonical_messages(item.messages)
        r = _Rendered(msgs, _limit(rubric))
        return [_single(r, len(msgs), view, refs)]
    ctx = canonical_messages(item.context or [])
    if view == "answer":
        ctx = []
    elif view != "window":
        ctx = [m for m in ctx if m.role == "user"][:1] or ctx
    keep: Literal["end", "start"] = "end" if view == "window" else "start"
    context = _Rendered(ctx, _limit(rubric)).joined(0, len(ctx), keep)
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


def _answer_cuts(msgs: list[Message]) -> list[int]:
    """Where each answer ends: after an assistant turn followed by a user turn, once a
    user has spoken before it (one forward pass)."""
    cuts: list[int] = []
    seen_user = False
    for i in range(len(msgs) - 1):
        if msgs[i].role == "assistant" and msgs[i + 1].role == "user" and seen_user:
            cuts.append(i + 1)
        seen_user = seen_user or msgs[i].role == "user"
    return cuts


def answer_prefixes(item: Item) -> list[Item]:
    """The item cut after each of its answers (an assistant turn followed by a user turn).

    The last prefix is the item itself; an item with one answer (or none) gives
    itself alone. Used to score every answer of a dialogue on its own.
    """
    msgs = item.messages
    return [item.model_copy(update={"messages": msgs[:c]}) for c in _answer_cuts(msgs)] + [item]


def answer_views(item: Item, view: str = "window", rubric: Rubric | None = None) -> list[View]:
    """The view of each of :func:`answer_prefixes`, without building the prefixes.

    Each message is rendered once and each view's context is bounded
    (:data:`CONTEXT_CHARS`), so the cost is linear in the dialogue's length.
    """
    if item.is_pairwise:
        return item_views(item, view, rubric)
    if view not in VIEWS:
        raise UsageError(
            f"unknown reward-model view {view!r}; views are {list(VIEWS)}", param="view"
        )
    refs = rubric.reference_text(item) if rubric and rubric.reward_model.references else ""
    r = _Rendered(item.messages, CONTEXT_CHARS)
    stops = [*_answer_cuts(item.messages), len(item.messages)]
    return [_single(r, stop, view, refs) for stop in stops]


def _request_view(r: _Rendered, stop: int, refs: str) -> View:
    """The reply after the last request before ``stop``, with that request alone as context."""
    msgs = r.messages
    last_user = _last_user(msgs, stop)
    if last_user == stop - 1 or last_user < 0:
        return _split(r, stop)._replace(references=refs)  # no reply after a request
    return View(r[last_user], _response(r, last_user + 1, stop), "end", refs)


def request_views(item: Item, rubric: Rubric, every_answer: bool = False) -> list[View]:
    """What the cross tier reads: the references and the request, then the reply.

    The first segment is what a judge compares the reply with: the rubric's
    references for the item (whatever its ``reward_model.references`` says) and
    the request the reply answers, the last user turn before it (for a push-back
    dialogue, the user's latest push-back; for a single turn, the prompt). A pair
    gives its two sides over the same first segment.

    Args:
        item: the item.
        rubric: the model's rubric (its references).
        every_answer: one view per answer of the dialogue (:func:`answer_prefixes`'s
            cuts), as ``combine: worst_answer`` scores them; else the last reply's alone.
    """
    refs = rubric.reference_text(item)
    if item.is_pairwise:
        ctx = canonical_messages(item.context or [])
        last = _last_user(ctx, len(ctx))
        request = _render(ctx[last]) if last >= 0 else ""
        return [
            View(request, render_messages(canonical_messages(side or [])), "end", refs)
            for side in (item.response_a, item.response_b)
        ]
    msgs = canonical_messages(item.messages)
    r = _Rendered(msgs, CONTEXT_CHARS)
    stops = [*_answer_cuts(msgs), len(msgs)] if every_answer else [len(msgs)]
    return [_request_view(r, stop, refs) for stop in stops]


def opening(text: str, n_chars: int = 300) -> str:
    """The first ``n_chars`` of a reply: where a refusal usually shows."""
    return text[:n_chars]
