"""Which messages of a long trajectory the judge sees, and what it is told was left out.

Steps are 0-based indices into ``item.messages`` (for a pairwise item, into
``item.context``). Nothing is cut silently: every omitted range and every
shortened message is stated in the prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from tinyjudge.records import Item, Message
from tinyjudge.rubric import Rubric, Window

__all__ = ["Shown", "Windowed", "window_messages", "estimate_tokens", "is_tool_error"]

# A cheap, tokenizer-free estimate (about 4 characters a token for English and code);
# the budget is a guard against runaway prompts, not an exact count.
_CHARS_PER_TOKEN = 4
_PER_MESSAGE_TOKENS = 6
_ERROR_TEXT = re.compile(
    r"^\s*(error\b|\w*(error|exception)\s*:|failed\b|traceback \(most recent call last\))"
    r"|traceback \(most recent call last\)",
    re.IGNORECASE,
)


def estimate_tokens(text: str) -> int:
    """A cheap token estimate: characters / 4, rounded up."""
    return -(-len(text) // _CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Shown:
    """One message the judge sees: its original step index and the text shown.

    ``cut`` is how many characters of the message were left out to fit the
    token budget (0 when shown whole); the text then says so itself.
    """

    step: int
    message: Message
    text: str
    cut: int = 0


@dataclass(frozen=True)
class Windowed:
    """The part of a trajectory shown to the judge.

    Attributes:
        shown: the messages shown, in order, with their original step indices.
        omitted: ``(first, last)`` inclusive step ranges left out.
        total: how many messages the trajectory has.
        strategy: the window strategy actually used.
        note: why a fallback strategy was used, if one was.
    """

    shown: list[Shown]
    omitted: list[tuple[int, int]] = field(default_factory=list)
    total: int = 0
    strategy: str = "full"
    note: str | None = None

    @property
    def steps(self) -> list[int]:
        return [s.step for s in self.shown]


def message_text(msg: Message) -> str:
    """A message's content with its tool calls, as the judge reads it."""
    parts = [msg.text]
    for call in msg.tool_calls or []:
        parts.append(f"-> tool call {call.function.name}({call.function.arguments}) [id {call.id}]")
    return "\n".join(p for p in parts if p)


def is_tool_error(msg: Message) -> bool:
    """Whether a tool result reports a failure.

    The message's ``is_error``, where the framework that wrote it said so, comes
    first; else an error payload, an "error" key, or exception text.
    """
    if msg.role != "tool":
        return False
    if msg.is_error is not None:
        return msg.is_error
    text = msg.text.strip()
    try:
        payload = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        payload = None
    if isinstance(payload, dict):
        if payload.get("error") or payload.get("exception"):
            return True
        if str(payload.get("status", "")).lower() in {"error", "failed", "failure"}:
            return True
        return False
    return bool(_ERROR_TEXT.search(text[:2000]))


def _first_user(messages: list[Message]) -> list[int]:
    return next(([i] for i, m in enumerate(messages) if m.role == "user"), [0] if messages else [])


def _near(focus: list[int], around: int, n: int) -> list[int]:
    steps = {j for f in focus for j in range(max(0, f - around), min(n, f + around + 1))}
    return sorted(steps)


def _plan(
    item: Item, messages: list[Message], win: Window
) -> tuple[list[int], list[int], str, str | None]:
    """(must-show steps, the rest in priority order, strategy used, fallback note)."""
    n = len(messages)
    everything = list(range(n))
    strategy: str = win.strategy
    note = None
    focus: list[int] = []
    if strategy == "around_step":
        flagged = item.metadata.get("flagged_step")
        if isinstance(flagged, int) and not isinstance(flagged, bool) and 0 <= flagged < n:
            focus = [flagged]
        else:
            note = f"no valid metadata.flagged_step ({flagged!r}); showing first and last turns"
            strategy = "first_and_last"
    elif strategy == "around_tool_errors":
        focus = [i for i, m in enumerate(messages) if is_tool_error(m)]
        if not focus:
            note = "no failed tool call found; showing first and last turns"
            strategy = "first_and_last"
    if strategy == "full":
        must = _first_user(messages)
        return must, everything[::-1], strategy, note
    if strategy == "first_and_last":
        last = everything[-win.last_turns :]
        must = sorted(set(_first_user(messages)) | set(last))
        return must, [], strategy, note
    must = sorted(set(_first_user(messages)) | set(focus))
    near = _near(focus, win.around, n)
    # Nearer neighbours first, so a tight budget keeps the closest context.
    rest = sorted(set(near) - set(must), key=lambda j: min(abs(j - f) for f in focus))
    return must, rest, strategy, note


def _shorten(text: str, budget_tokens: int) -> tuple[str, int]:
    keep = max(200, budget_tokens * _CHARS_PER_TOKEN)
    if len(text) <= keep:
        return text, 0
    cut = len(text) - keep
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :]
    return f"{head}\n[... {cut} characters omitted ...]\n{tail}", cut


def window_messages(item: Item, rubric: Rubric | Window) -> Windowed:
    """Choose which messages of ``item`` the judge sees, as ``rubric.window`` says.

    Strategies: ``full`` (everything; over budget, the oldest turns after the
    first user turn go first), ``first_and_last`` (the first user turn plus the
    last ``last_turns`` messages), ``around_step`` (the first user turn plus
    ``around`` messages either side of ``item.metadata["flagged_step"]``) and
    ``around_tool_errors`` (the same around each failed tool result). The two
    ``around_*`` strategies fall back to ``first_and_last`` when there is
    nothing to centre on, and say so in ``note``.

    The token budget ``max_tokens`` is estimated cheaply (characters / 4). Over
    budget, lower-priority messages are dropped and, if the must-show messages
    alone are too long, the longest are shortened in the middle; both are
    stated in the prompt, never silent.

    Args:
        item: the item; for a pairwise item its ``context`` is windowed (the
            two responses are always shown whole).
        rubric: the rubric (or just its ``Window``).

    Returns:
        A :class:`Windowed` with the shown messages and their 0-based step
        indices, and the omitted step ranges.
    """
    win = rubric if isinstance(rubric, Window) else rubric.window
    messages = list(item.context or []) if item.is_pairwise else list(item.messages)
    must, rest, strategy, note = _plan(item, messages, win)
    texts = {i: message_text(messages[i]) for i in range(len(messages))}
    cost = {i: estimate_tokens(t) + _PER_MESSAGE_TOKENS for i, t in texts.items()}
    budget = win.max_tokens
    used = sum(cost[i] for i in must)
    cuts: dict[int, int] = {}
    if used > budget:
        # Shorten the longest must-show messages until they fit, largest first.
        for i in sorted(must, key=lambda j: -cost[j]):
            if used <= budget:
                break
            others = used - cost[i]
            allowed = max(50, budget - others - _PER_MESSAGE_TOKENS)
            texts[i], cuts[i] = _shorten(texts[i], allowed)
            new_cost = estimate_tokens(texts[i]) + _PER_MESSAGE_TOKENS
            used, cost[i] = others + new_cost, new_cost
    chosen = set(must)
    for i in rest:
        if used + cost[i] > budget:
            break
        chosen.add(i)
        used += cost[i]
    steps = sorted(chosen)
    omitted: list[tuple[int, int]] = []
    prev = -1
    for s in [*steps, len(messages)]:
        if s - prev > 1:
            omitted.append((prev + 1, s - 1))
        prev = s
    shown = [Shown(i, messages[i], texts[i], cuts.get(i, 0)) for i in steps]
    return Windowed(shown, omitted, len(messages), strategy, note)
