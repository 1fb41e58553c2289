"""Message, Item and Label: what the records accept and what they refuse."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from support import make_label

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Hint, Item, Label, Message, ToolCall, content_text, join_sources


def _tool_call(call_id: str = "call_1") -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "search_flights", "arguments": '{"from": "SFO", "to": "JFK"}'},
    }


def test_message_with_tool_calls_and_tool_result() -> None:
    call = Message(role="assistant", content=None, tool_calls=[_tool_call()])
    result = Message(role="tool", tool_call_id="call_1", content='{"flights": []}')
    assert isinstance(call.tool_calls[0], ToolCall)
    assert call.tool_calls[0].function.name == "search_flights"
    assert call.text == ""
    assert result.text == '{"flights": []}'


def test_message_content_parts_flatten_to_text() -> None:
    parts = [
        {"type": "text", "text": "first"},
        {"type": "image_url"},
        {"type": "text", "text": "b"},
    ]
    msg = Message(role="user", content=parts)
    assert msg.text == "first\n[image]\nb"  # the image stands as a stated placeholder
    assert content_text(None) == ""


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"role": "user", "content": "x", "tool_calls": [_tool_call()]}, "only assistant"),
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}, "name"),
    ],
    ids=[
        "user-with-tool-calls",
        "unknown-role",
        "tool-call-without-name",
    ],
)
def test_message_rejects(fields: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        Message(**fields)


def test_pairwise_item_shape() -> None:
    item = Item(
        id="p1",
        context=[Message(role="user", content="Name a red fruit.")],
        response_a=[Message(role="assistant", content="Cherry")],
        response_b=[Message(role="assistant", content="Banana")],
    )
    assert item.is_pairwise
    assert not Item(id="s1", messages=[Message(role="user", content="hi")]).is_pairwise


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"id": "x"}, 'needs non-empty "messages"'),
        ({"id": "x", "response_a": [{"role": "assistant", "content": "a"}]}, "both"),
        (
            {
                "id": "x",
                "messages": [{"role": "user", "content": "q"}],
                "response_a": [{"role": "assistant", "content": "a"}],
                "response_b": [{"role": "assistant", "content": "b"}],
            },
            "not both",
        ),
        ({"id": "", "messages": [{"role": "user", "content": "q"}]}, '"id" must not be empty'),
        ({"id": "x", "messages": [{"role": "user", "content": "q"}], "extra": 1}, "Extra"),
    ],
    ids=["empty", "half-pair", "pair-and-messages", "empty-id", "unknown-field"],
)
def test_item_rejects(fields: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        Item.model_validate(fields)


def test_item_content_hash_ignores_id_and_metadata() -> None:
    msgs = [Message(role="user", content="q"), Message(role="assistant", content="a")]
    a = Item(id="a", messages=msgs, metadata={"k": 1})
    b = Item(id="b", messages=msgs)
    c = Item(id="a", messages=[msgs[0], Message(role="assistant", content="a!")])
    assert a.content_hash() == b.content_hash()
    assert a.content_hash() != c.content_hash()


def test_item_get_dotted_key() -> None:
    item = Item(id="i", messages=[Message(role="user", content="q")], metadata={"m": {"n": 3}})
    assert item.get("metadata.m.n") == 3
    assert item.get("metadata.absent.deeper") is None
    assert item.get("id") == "i"


def test_label_ok_and_unscored() -> None:
    ok = Label(
        item_id="i",
        rubric="compliance",
        source="judge:m",
        label="full_refusal",
        probs={"full_refusal": 0.7, "full_compliance": 0.3},
        hint=Hint(step=2, text="ask"),
    )
    assert ok.status == "ok"
    unscored = Label(
        item_id="i",
        rubric="compliance",
        source="judge:gpt-4",
        status="unscored",
        raw="I'm sorry, but I can't assist with that.",
        reason="not a label",
    )
    assert unscored.label is None and unscored.raw.startswith("I'm sorry")
    assert Label(item_id="i", rubric="r", source="rm:x", score=0.25).label is None


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"status": "ok"}, 'needs "label" or "score"'),
        ({"status": "unscored", "label": "a", "reason": "r"}, 'must not carry "label"'),
        ({"status": "unscored", "raw": "garbage"}, 'needs a "reason"'),
        ({"label": "a", "probs": {"a": 0.5, "b": 0.4}}, "must sum to 1, got 0.9000"),
        (
            {"label": "a", "probs": {"a": 1.5, "b": -0.5}},
            r'"probs\["a"\]" is 1.5, not in \[0, 1\]',
        ),
        ({"label": "a", "probs": {"a": float("nan")}}, r'"probs\["a"\]" is nan, not in \[0, 1\]'),
        ({"label": "a", "source": ""}, '"source" must not be empty'),
        ({"label": "a", "status": "maybe"}, "status"),
        ({"label": "a", "confidence": 0.9}, "Extra"),
    ],
    ids=[
        "ok-without-label",
        "unscored-with-label",
        "unscored-without-reason",
        "probs-sum",
        "probs-negative",
        "probs-nan",
        "empty-source",
        "unknown-status",
        "unknown-field",
    ],
)
def test_label_rejects(fields: dict, match: str) -> None:
    base = {"item_id": "i", "rubric": "r", "source": "judge:m"}
    with pytest.raises(ValidationError, match=match):
        Label.model_validate({**base, **fields})


def test_label_probs_sum_tolerance() -> None:
    Label(item_id="i", rubric="r", source="s", label="a", probs={"a": 0.3334, "b": 0.6670})
    with pytest.raises(ValidationError, match="sum to 1"):
        Label(item_id="i", rubric="r", source="s", label="a", probs={"a": 0.5, "b": 0.502})


def test_pairwise_label_with_orders() -> None:
    lab = Label(
        item_id="p",
        rubric="instruction_following",
        source="judge:gpt-4",
        label="a",
        orders={"ab": "a", "ba": "a"},
        consistent=True,
    )
    assert lab.orders == {"ab": "a", "ba": "a"} and lab.consistent


def _join_table() -> list[Label]:
    lab = make_label  # item, source, label (None: unscored)
    return [
        lab("1", "human:x", "yes"), lab("1", "judge:m", "yes"),
        lab("2", "human:x", "no"), lab("2", "judge:m", None),      # judge unscored
        lab("3", "human:x", None), lab("3", "judge:m", None),      # both unscored
        lab("4", "human:x", "no"), lab("4", "judge:m", "yes"),
        lab("5", "human:x", "yes"),                                # judge never saw it
        lab("6", "judge:m", "no"), lab("7", "judge:m", None),      # human never saw them
    ]  # fmt: skip


def test_join_sources_pairs_and_counts_each_side() -> None:
    j = join_sources(_join_table(), "human:x", "judge:m")
    assert j.item_ids == ["1", "4"]
    assert [(x.label, y.label) for x, y in j.pairs] == [("yes", "yes"), ("no", "yes")]
    assert (j.unscored_a, j.unscored_b, j.n_unscored) == (1, 2, 2)
    assert (j.only_a, j.only_b) == (1, 2)
    assert list(j.scored_a) == ["1", "2", "4", "5"]
    assert list(j.scored_b) == ["1", "4", "6"]
    assert (j.n_a, j.n_b, j.left_out_a, j.left_out_b) == (5, 6, 1, 3)


def test_join_sources_usable_test_and_later_label_wins() -> None:
    labels = [
        *_join_table(),
        Label(item_id="5", rubric="r", source="judge:m", label="no"),
        Label(item_id="1", rubric="r", source="judge:m", label="no"),  # later: replaces "yes"
    ]
    j = join_sources(labels, "human:x", "judge:m", usable=lambda lab: lab.label == "yes")
    assert j.item_ids == []
    assert j.only_b == 2 and j.only_a == 0
    assert list(j.scored_a) == ["1", "5"]


@pytest.mark.parametrize(
    "sources, match",
    [
        (("human:y", "judge:m"), r"no labels from source 'human:y'; sources present: \['human:x'"),
        (("human:x", "z"), r"no labels from source 'z'"),
    ],
    ids=["first-missing", "second-missing"],
)
def test_join_sources_unknown_source_lists_present_ones(
    sources: tuple[str, str], match: str
) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        join_sources(_join_table(), *sources)
