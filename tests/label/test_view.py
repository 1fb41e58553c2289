"""What the page shows of an item: the judge's window, folded tools, pretty JSON."""

from __future__ import annotations

from tinyjudge.datasets.jsonl import read_items
from tinyjudge.judge import window_messages
from tinyjudge.label._view import item_view
from tinyjudge.records import Item, Message
from tinyjudge.rubric import load_rubric

RUBRIC = load_rubric("compliance")


def test_a_long_trajectory_marks_the_judge_window_and_failed_tools(long_data):
    (item,) = read_items(long_data.items)
    view = item_view(item, RUBRIC)
    assert view.partial_window
    assert [m.step for m in view.messages if m.in_window] == window_messages(item, RUBRIC).steps
    assert view.window_note == "the judge did not see steps 0, 2-155"
    tools = [m for m in view.messages if m.role == "tool"]
    assert [m.error for m in tools] == [t % 5 == 4 for t in range(40)]
    assert tools[0].text == '{\n  "order": 0,\n  "status": "shipped"\n}'
    (call,) = view.messages[2].tool_calls
    assert (call.name, call.arguments) == ("lookup", '{\n  "order": 0\n}')


def test_a_short_exchange_is_all_in_the_window_and_text_is_kept_verbatim():
    item = Item(
        id="s",
        messages=[
            Message(
                role="user", content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
            ),
            Message(role="assistant", content="  [1, 2]  ", name="helper"),
            Message(role="tool", tool_call_id="c", content="42"),
        ],
    )
    view = item_view(item, RUBRIC)
    assert not view.partial_window and view.response_a is None
    assert [m.text for m in view.messages] == ["a\nb", "  [1, 2]  ", "42"]
    assert view.messages[1].name == "helper"
