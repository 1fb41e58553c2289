"""One hinted step of a trajectory as a trainer's row: the prompt before the answer the
hint targets, the answer, and the hint.

TRL's self-distillation trainers build the teacher's prompt by rewriting the
prompt's last user turn, so the prompt must end on a user turn. An agent's step
after tool calls ends on tool results: those turns (everything after the agent's
last earlier answer) are folded into one user turn that holds each result's
text and tool name. System messages and earlier turns stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinyjudge.records import Item, Message

__all__ = ["Target", "find_target", "message_dict", "fold_prompt", "Refused"]


@dataclass(frozen=True)
class Refused:
    """A hinted label that gave no row, and why.

    Attributes:
        item_id: the item.
        step: the step the hint targets (None when the label names none).
        kind: ``no_step``, ``step_outside``, ``no_answer``, ``empty_prompt``,
            ``ends_on_answer``, ``empty_hint``, ``long_hint``, ``no_item`` or ``leak``.
        message: one line naming the item and what was wrong.
    """

    item_id: str
    step: int | None
    kind: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Target:
    """The answer a hint targets: its index in ``item.messages`` and the speaking agent."""

    index: int
    agent: str | None


def _is_answer(message: Message, agent: str | None) -> bool:
    """An answer of the policy: an assistant turn, or in a multi-agent transcript a turn
    of the blamed agent (Who&When's agents speak as ``user`` or ``assistant``)."""
    if agent is not None:
        return message.name == agent and message.role not in ("tool", "system", "developer")
    return message.role == "assistant"


def find_target(item: Item, step: int, blamed: str | None) -> Target | Refused:
    """The first answer at or after ``step``: a step at a failed tool result targets the
    answer that follows it.

    ``blamed`` (the label's verdict) names the agent when the transcript has messages
    spoken by it; the answer is then that agent's next turn.
    """
    n = len(item.messages)
    if not 0 <= step < n:
        return Refused(
            item.id, step, "step_outside",
            f"{item.id}: step {step} is outside the trajectory (0..{n - 1})",
        )  # fmt: skip
    agent = blamed if blamed and any(m.name == blamed for m in item.messages) else None
    for i in range(step, n):
        if _is_answer(item.messages[i], agent):
            return Target(i, agent)
    who = f"agent {agent!r}" if agent else "the assistant"
    return Refused(
        item.id, step, "no_answer", f"{item.id}: no answer of {who} at or after step {step}"
    )


def message_dict(message: Message) -> dict[str, Any]:
    """A message as the plain dict a chat template reads (content as text)."""
    out: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.name:
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def _tool_names(messages: list[Message]) -> dict[str, str]:
    return {
        c.id: c.function.name
        for m in messages
        if m.tool_calls
        for c in m.tool_calls
        if c.id is not None
    }


def _folded_text(turns: list[Message], names: dict[str, str]) -> str:
    parts = []
    for m in turns:
        if m.role == "tool":
            tool = names.get(m.tool_call_id or "", "") or "a tool"
            parts.append(f"[tool result of {tool}]\n{m.text}")
        else:
            parts.append(f"[{m.name or m.role}]\n{m.text}")
    return "\n\n".join(parts)


def fold_prompt(item: Item, target: Target) -> list[dict[str, Any]] | Refused:
    """The conversation before the targeted answer, ending on a user turn.

    When it ends on other turns (tool results, other agents' turns), those after the
    agent's last earlier answer are folded into one user turn.
    """
    before = item.messages[: target.index]
    if not any(m.role not in ("system", "developer") for m in before):
        return Refused(
            item.id, target.index, "empty_prompt",
            f"{item.id}: nothing but system turns before the answer at step {target.index}",
        )  # fmt: skip
    if before[-1].role == "user":
        return [message_dict(m) for m in before]
    answers = [i for i, m in enumerate(before) if _is_answer(m, target.agent)]
    if answers:
        start = answers[-1] + 1
    else:  # no earlier answer: the trailing turns that are not the user's
        start = len(before)
        while start > 0 and before[start - 1].role not in ("user", "system", "developer"):
            start -= 1
    tail = before[start:]
    if not tail:
        return Refused(
            item.id, target.index, "ends_on_answer",
            f"{item.id}: the turn before the answer at step {target.index} is the agent's own",
        )  # fmt: skip
    folded = {"role": "user", "content": _folded_text(tail, _tool_names(before))}
    return [*(message_dict(m) for m in before[:start]), folded]
