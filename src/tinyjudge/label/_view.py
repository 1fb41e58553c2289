"""What the page shows of an item: messages turned into plain view data for the template.

Nothing here builds HTML: the template escapes every string (Jinja2 autoescape), so a
transcript holding ``<script>`` or markup is shown as text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tinyjudge.judge import is_tool_error, window_messages
from tinyjudge.records import Item, Message
from tinyjudge.rubric import Rubric

__all__ = ["MessageView", "ItemView", "ReferenceView", "item_view", "judge_window"]

# A message longer than this starts folded, so a long transcript stays navigable.
_FOLD_CHARS = 1500


@dataclass
class ToolCallView:
    name: str
    call_id: str | None
    arguments: str


@dataclass
class MessageView:
    step: int
    role: str
    name: str | None
    text: str
    tool_calls: list[ToolCallView] = field(default_factory=list)
    tool_call_id: str | None = None
    in_window: bool = True
    long: bool = False
    error: bool = False


@dataclass
class ReferenceView:
    """One of the rubric's references for the item: what the grader is given beside it."""

    name: str
    description: str
    text: str


@dataclass
class ItemView:
    id: str
    messages: list[MessageView]
    response_a: list[MessageView] | None
    response_b: list[MessageView] | None
    window_note: str | None
    references: list[ReferenceView] = field(default_factory=list)

    @property
    def partial_window(self) -> bool:
        """Whether the judge saw only part of the transcript (then it is highlighted)."""
        return any(not m.in_window for m in self.messages)


def _pretty(text: str) -> str:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text
    if not isinstance(value, dict | list):
        return text
    return json.dumps(value, indent=2, ensure_ascii=False)


def judge_window(item: Item, rubric: Rubric) -> tuple[set[int], str | None]:
    """The step indices the judge saw (:func:`tinyjudge.judge.window_messages`) and a note
    on what it did not see."""
    shown = window_messages(item, rubric)
    note = shown.note
    if shown.omitted:
        gaps = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in shown.omitted)
        note = "; ".join(x for x in (note, f"the judge did not see steps {gaps}") if x)
    return set(shown.steps), note


def _views(messages: list[Message], window: set[int] | None, offset: int = 0) -> list[MessageView]:
    out = []
    for i, m in enumerate(messages):
        # A tool's JSON answer reads better indented, as the tool call's arguments do.
        text = _pretty(m.text) if m.role == "tool" else m.text
        out.append(
            MessageView(
                step=offset + i,
                role=m.role,
                name=m.name,
                text=text,
                tool_calls=[
                    ToolCallView(c.function.name, c.id, _pretty(c.function.arguments))
                    for c in m.tool_calls or []
                ],
                tool_call_id=m.tool_call_id,
                in_window=window is None or i in window,
                long=len(text) > _FOLD_CHARS,
                error=is_tool_error(m),
            )
        )
    return out


def _references(item: Item, rubric: Rubric) -> list[ReferenceView]:
    given = rubric.item_references(item)
    return [
        ReferenceView(r.name, r.description, _pretty(given[r.name]))
        for r in rubric.references
        if r.name in given
    ]


def item_view(item: Item, rubric: Rubric) -> ItemView:
    """The view data of an item: the judge's window marked on each message, and the
    rubric's references for it (what the judge was given beside the transcript)."""
    window, note = judge_window(item, rubric)
    references = _references(item, rubric)
    if item.is_pairwise:
        context = item.context or []
        return ItemView(
            id=item.id,
            messages=_views(context, window),
            response_a=_views(item.response_a or [], None),
            response_b=_views(item.response_b or [], None),
            window_note=note,
            references=references,
        )
    return ItemView(
        id=item.id,
        messages=_views(item.messages, window),
        response_a=None,
        response_b=None,
        window_note=note,
        references=references,
    )
