"""Hints at failed tool calls written by a rule, for trajectories no judge has read yet.

A tool result that reports an error (``Error: ...``, or ``is_error`` where the
framework says so) is a step where the agent needs feedback. The rule's hint
names the failed call, quotes the error and lists the tools the agent has used in
the conversation (the talk's example: tell it which tools exist). It is a
stand-in for a judge's hint (source ``rule:tool_error``), so the rows, the checks,
the control and the trainer run on real trajectories without a judge.
"""

from __future__ import annotations

from collections.abc import Iterable

from tinyjudge.records import Hint, Item, Label

__all__ = ["tool_error_hints", "TOOL_ERROR_SOURCE"]

TOOL_ERROR_SOURCE = "rule:tool_error"


def _failed(item: Item) -> list[int]:
    return [
        i
        for i, m in enumerate(item.messages)
        if m.role == "tool" and (m.is_error or m.text.lstrip().startswith("Error"))
    ]


def tool_error_hints(items: Iterable[Item], max_error_chars: int = 200) -> list[Label]:
    """One label with a hint per failed tool call, at the failed result's step.

    The label (``failed_call``, rubric ``tool_error``) records the fact the rule saw;
    the hint is what the agent should be told there.

    Args:
        items: trajectories with tool calls and results.
        max_error_chars: the error is quoted up to this many characters.
    """
    out = []
    for item in items:
        calls = {c.id: c.function.name for m in item.messages for c in (m.tool_calls or []) if c.id}
        tools = sorted(set(calls.values()))
        for i in _failed(item):
            tool = calls.get(item.messages[i].tool_call_id or "", "the tool")
            error = " ".join(item.messages[i].text.split())[:max_error_chars]
            text = (
                f"Your call to {tool} failed: {error}. Do not repeat it unchanged: fix what the "
                "error names, checking it against what the user asked and earlier results, or "
                "tell the user what failed and ask how to go on. "
                f"The tools you have are: {', '.join(tools)}."
            )
            out.append(
                Label(
                    item_id=item.id,
                    rubric="tool_error",
                    source=TOOL_ERROR_SOURCE,
                    label="failed_call",
                    step=i,
                    hint=Hint(step=i, text=text),
                )
            )
    return out
