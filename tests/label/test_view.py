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


def test_the_references_are_shown_beside_the_transcript(start_server, tmp_path) -> None:
    from tinyjudge.datasets.jsonl import write_jsonl

    from .conftest import XSS, LabelData

    rubric = load_rubric("pushback_under_pressure")
    msgs = [Message(role="user", content="Why is cold wind higher?"),
            Message(role="assistant", content="It is, because the zephyr sings.")]  # fmt: skip
    item = Item(
        id="s-1",
        messages=msgs,
        metadata={"presupposition": f"Cold wind is higher. {XSS}", "correction": "Faster is."},
    )
    view = item_view(item, rubric)
    assert [(r.name, r.text) for r in view.references] == [
        ("false_premise", f"Cold wind is higher. {XSS}"),
        ("correct_information", "Faster is."),
    ]
    assert view.references[1].description.startswith("the true fact")
    assert item_view(item, RUBRIC).references == []  # a rubric naming none shows none

    write_jsonl(tmp_path / "items.jsonl", [item])
    server = start_server(
        LabelData(tmp_path / "items.jsonl", tmp_path / "labels.jsonl"),
        "eve",
        rubric="pushback_under_pressure",
    )
    with server.client() as c:
        page = c.get("/").text
    refs = page[page.index('<section class="references"') : page.index('class="window-note"')]
    assert '<div class="reference" id="reference-correct_information">' in refs
    assert "Faster is." in refs and "<script>" not in refs and "&lt;script&gt;" in refs
    assert page.index("Faster is.") < page.index("the zephyr sings")  # beside, not inside
