"""Scoring cost is linear in a rollout's length under every view and combine (issue 33):
each answer's view is built once, with a bounded context, and is the same view the
prefixes of the dialogue would give. Real SYCON-Bench dialogues, a real linear-tier model.

The bench row (100 / 1,000 / 10,000 turns): ``bench/rollout_length.py``.
"""

from __future__ import annotations

import time

import pytest
from support import real_data

from tinyjudge.datasets.importers.sycon import import_sycon
from tinyjudge.distill import LinearRM, item_views, training_set
from tinyjudge.distill._text import CONTEXT_CHARS, answer_prefixes, answer_views
from tinyjudge.records import Item, Message
from tinyjudge.rubric import VIEWS, Rubric, load_rubric


def _rubric(view: str, combine: str = "worst_answer") -> Rubric:
    base = load_rubric("pushback_under_pressure")
    spec = base.reward_model.model_copy(update={"view": view, "combine": combine})
    return base.model_copy(update={"reward_model": spec})


@pytest.fixture(scope="module")
def sycon() -> tuple[list[Item], list]:
    root = real_data("sycon")
    if root is None:
        pytest.skip("no SYCON-Bench data, shared or bundled")
    imported = import_sycon(root)
    keep = [it for it in imported.items if it.metadata["question_id"] <= 10]
    return keep, imported.labels


def _rollout(items: list[Item], turns: int) -> Item:
    """``turns`` messages of SYCON's users and answers in turn, each numbered (all distinct)."""
    users = [m.text for it in items for m in it.messages if m.role == "user"]
    answers = [m.text for it in items for m in it.messages if m.role == "assistant"]
    pool = {0: users, 1: answers}
    msgs = [
        Message(role="user" if i % 2 == 0 else "assistant",
                content=f"{pool[i % 2][i // 2 % len(pool[i % 2])]} (turn {i})")
        for i in range(turns)
    ]  # fmt: skip
    return items[-1].model_copy(update={"id": f"rollout-{turns}", "messages": msgs})


@pytest.mark.parametrize("view", VIEWS)
def test_answer_views_are_the_views_of_the_prefixes(sycon, view: str) -> None:
    items, _ = sycon
    rubric = _rubric(view)
    for it in items[4::5]:  # the full dialogues (five turns each)
        expected = [item_views(p, view, rubric)[0] for p in answer_prefixes(it)]
        assert answer_views(it, view, rubric) == expected
        assert len(expected) == 5


def test_a_context_is_bounded_and_keeps_the_end_of_the_window(sycon) -> None:
    items, _ = sycon
    long = _rollout(items, 400)
    (v,) = item_views(long, "window", _rubric("window"))
    assert len(v.context) == CONTEXT_CHARS
    assert v.context.endswith(long.messages[-2].text)  # the last request is kept
    (first,) = item_views(long, "first_user_last_answer", _rubric("first_user_last_answer"))
    assert first.context.startswith("user: " + long.messages[0].text[:50])
    assert answer_views(long, "window", _rubric("window"))[-1] == v
    # one view of the whole item (combine: last) keeps all of it
    (whole,) = item_views(long, "window", _rubric("window", "last"))
    assert len(whole.context) > 10 * CONTEXT_CHARS and whole.context.endswith(v.context)


@pytest.mark.parametrize(
    ("view", "turns", "seconds"),
    [("answer", 10_000, 30.0), ("window", 2_000, 30.0)],
    ids=["answer-10000-turns", "window-2000-turns"],
)
def test_worst_answer_scoring_is_linear_in_the_turns(sycon, view, turns, seconds) -> None:
    """Before issue 33 each answer re-rendered its whole prefix: the window view took 24 s
    for 1,000 turns (about 100 s for 2,000); now about 1 s per 1,000 turns on this tier."""
    items, labels = sycon
    rubric = _rubric(view)
    data = training_set(items, labels, "judge:gpt-4o", rubric)
    model = LinearRM(rubric).fit(data.items, data.y_hard)
    rollout = _rollout(items, turns)
    t0 = time.perf_counter()
    P = model.predict_proba([rollout])
    took = time.perf_counter() - t0
    assert P.shape == (1, len(rubric.label_names))
    assert took < seconds, f"{turns} turns took {took:.1f} s"
