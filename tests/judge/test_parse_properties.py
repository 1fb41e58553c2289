"""Properties of reading a judge's reply: any body gives a label or an unscored one, never a crash.

A chat.completion body drawn by hypothesis (choices, message content with and
without verdict objects, logprobs of any shape, usage of any type) goes the way
the runner takes it: ``_read_completion``, ``result_from_outputs``,
``make_label``. The only exception allowed is the client's ``_Malformed`` (a
body without choices), which the runner turns into an unscored item; whatever
parses is a valid Label whose label the rubric offers. A pairwise item gets a
second body for its swapped order, as the runner asks both.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import FAST, JSON, record

from tinyjudge.judge import ParseFailure, Verdict, parse_verdict
from tinyjudge.judge._client import _Malformed, _read_completion
from tinyjudge.judge._verdicts import make_label, result_from_outputs, swap_result
from tinyjudge.records import Item, Label
from tinyjudge.rubric import load_rubric

AGENTS = ["Planner", "Coder"]
ITEM = Item(
    id="i",
    messages=[
        {"role": "user", "content": "task"},
        {"role": "assistant", "name": "Planner", "content": "plan"},
        {"role": "assistant", "name": "Coder", "content": "code"},
    ],
)
PAIR = Item(
    id="p",
    context=[{"role": "user", "content": "which?"}],
    response_a=[{"role": "assistant", "content": "a"}],
    response_b=[{"role": "assistant", "content": "b"}],
)
RUBRICS = {
    name: load_rubric(name)
    for name in ("compliance", "reward_hacking", "failure_step", "instruction_following")
}


def _labels(name: str) -> list[str]:
    return AGENTS if RUBRICS[name].type == "step" else RUBRICS[name].label_names


WORDS = st.sampled_from(
    ["full_compliance", "full_refusal", "partial_refusal", "Planner", "Coder", "a", "b", "tie", "?"]
)
VERDICT = record(["label", "verdict", "agent", "rationale", "step", "hint", "text"], WORDS | JSON)
REPLY = st.one_of(
    st.text(max_size=60),
    VERDICT.map(json.dumps),
    st.tuples(st.text(max_size=20), VERDICT.map(json.dumps), st.text(max_size=20)).map("".join),
    st.lists(VERDICT.map(json.dumps), min_size=2, max_size=3).map("\n".join),
    WORDS.map(lambda w: f"label: {w}"),
    st.integers(0, 60).map(lambda n: '{"label": ' * n),  # an object that never closes
)
TOKEN = st.fixed_dictionaries(
    {"token": st.text(max_size=6) | JSON, "logprob": st.floats() | JSON},
    optional={"top_logprobs": st.lists(record(["token", "logprob"]), max_size=3) | JSON},
)
CHOICE = st.fixed_dictionaries(
    {"message": st.fixed_dictionaries({"content": REPLY | JSON}) | JSON},
    optional={"logprobs": st.fixed_dictionaries({"content": st.lists(TOKEN, max_size=6)}) | JSON},
)
USAGE = record(["prompt_tokens", "completion_tokens"], st.floats() | JSON)
BODY = (
    st.fixed_dictionaries(
        {"choices": st.lists(CHOICE, max_size=3) | JSON}, optional={"usage": USAGE | JSON}
    )
    | JSON
)


@FAST
@given(reply=REPLY | st.text(), name=st.sampled_from(sorted(RUBRICS)), n_steps=st.integers(-1, 5))
def test_any_reply_is_a_verdict_of_the_rubric_or_a_failure(reply: str, name, n_steps) -> None:
    rubric = RUBRICS[name]
    got = parse_verdict(
        reply,
        _labels(name),
        step=rubric.step,
        step_required=rubric.type == "step",
        n_steps=n_steps,
        hint=rubric.hint,
    )
    assert isinstance(got, Verdict | ParseFailure)
    if isinstance(got, Verdict):
        assert got.label in _labels(name)
        if got.label_span is not None:
            start, end = got.label_span
            assert 0 <= start <= end <= len(reply)
    else:
        assert got.reason


def _result(body, name: str, item: Item) -> dict:
    """What the runner makes of one body: the parsed result, or the failure it records."""
    try:
        texts, lps, tokens_in, tokens_out = _read_completion(body)
    except _Malformed as e:
        assert str(e)
        return {"status": "unscored", "reason": str(e), "raw": None, "usage": {}}
    assert tokens_in >= 0 and tokens_out >= 0
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    n_steps = len(item.messages or [])
    return result_from_outputs(texts, lps, _labels(name), RUBRICS[name], n_steps, usage)


@FAST
@given(body=BODY, other=BODY, name=st.sampled_from(sorted(RUBRICS)))
def test_any_completion_body_makes_a_label(body, other, name: str) -> None:
    rubric = RUBRICS[name]
    item = PAIR if rubric.type == "pairwise" else ITEM
    results = {"ab": _result(body, name, item)}
    if item.is_pairwise:
        results["ba"] = swap_result(_result(other, name, item))  # as the runner does
    label = make_label(item, rubric, "judge:m", results, cached=False)
    Label.model_validate_json(label.model_dump_json())
    if label.status == "ok":
        assert label.label in _labels(name)
        assert sum(label.probs.values()) == pytest.approx(1.0)
    else:
        assert label.reason
