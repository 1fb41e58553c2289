"""Label distributions from top logprobs (multi-token labels, shared prefixes) and from samples."""

from __future__ import annotations

import math

import pytest

from tinyjudge.judge import parse_verdict
from tinyjudge.judge._probs import mean_probs, probs_from_logprobs, probs_from_samples
from tinyjudge.testing import Reply, completion_body

LABELS = ["full_compliance", "full_refusal", "partial_refusal"]


def tok(token: str, alts: dict[str, float] | None = None) -> dict:
    alts = alts or {token: 1.0}
    return {
        "token": token,
        "logprob": math.log(alts.get(token, 1e-9)),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alts.items()],
    }


def span_of(tokens: list[dict]) -> tuple[int, int]:
    text = "".join(t["token"] for t in tokens)
    got = parse_verdict(text, LABELS)
    assert got.label_span is not None  # type: ignore[union-attr]
    return got.label_span  # type: ignore[union-attr]


def test_single_token_labels_take_their_own_mass() -> None:
    tokens = [
        tok('{"label": "'),
        tok("a", {"a": 0.6, "b": 0.3, "tie": 0.05, "the": 0.05}),
        tok('"}'),
    ]
    text = "".join(t["token"] for t in tokens)
    span = parse_verdict(text, ["a", "b", "tie"]).label_span  # type: ignore[union-attr]
    got = probs_from_logprobs(tokens, span, ["a", "b", "tie"])
    # "the" is not a label: its mass is dropped and the rest renormalized.
    assert got == pytest.approx({"a": 0.6 / 0.95, "b": 0.3 / 0.95, "tie": 0.05 / 0.95})


def test_shared_prefix_is_split_by_the_next_token() -> None:
    tokens = [
        tok('{"label": "'),
        tok("full", {"full": 0.8, "part": 0.2}),
        tok("_", {"_": 1.0}),
        tok("refu", {"refu": 0.75, "comp": 0.25}),
        tok('sal"}'),
    ]
    got = probs_from_logprobs(tokens, span_of(tokens), LABELS)
    assert got == pytest.approx(
        {"full_refusal": 0.6, "full_compliance": 0.2, "partial_refusal": 0.2}
    )
    assert sum(got.values()) == pytest.approx(1.0)  # type: ignore[union-attr]


def test_quote_merged_into_the_first_token() -> None:
    tokens = [
        tok('{"label":'),
        tok(' "part', {' "part': 0.5, ' "full': 0.4, " null": 0.1}),
        tok("ial_refusal"),
        tok('"}'),
    ]
    got = probs_from_logprobs(tokens, span_of(tokens), LABELS)
    # The unchosen shared prefix "full" is split evenly between the two full_* labels.
    assert got == pytest.approx(
        {"partial_refusal": 0.5 / 0.9, "full_compliance": 0.2 / 0.9, "full_refusal": 0.2 / 0.9}
    )


def test_whole_label_in_one_token_with_closing_quote() -> None:
    tokens = [
        tok('{"label": "'),
        tok('full_refusal"', {'full_refusal"': 0.9, 'partial_refusal"': 0.1}),
        tok("}"),
    ]
    got = probs_from_logprobs(tokens, span_of(tokens), LABELS)
    assert got == pytest.approx({"full_refusal": 0.9, "partial_refusal": 0.1})


@pytest.mark.parametrize("content", [None, []], ids=["none", "empty"])
def test_no_logprobs_gives_none(content: list | None) -> None:
    assert probs_from_logprobs(content, (0, 4), LABELS) is None


def test_tokens_that_do_not_line_up_give_none() -> None:
    tokens = [tok("xyz")]
    assert probs_from_logprobs(tokens, (10, 14), LABELS) is None


@pytest.mark.parametrize("merge_quote", [False, True], ids=["quote_apart", "quote_merged"])
def test_round_trip_through_the_servers_logprobs(merge_quote: bool) -> None:
    probs = {"full_compliance": 0.15, "full_refusal": 0.6, "partial_refusal": 0.25}
    text = '{"rationale": "it declines", "label": "full_refusal"}'
    body = completion_body([Reply(text, probs=probs, merge_quote=merge_quote)], "m", logprobs=True)
    content = body["choices"][0]["logprobs"]["content"]
    assert "".join(t["token"] for t in content) == text
    got = probs_from_logprobs(content, span_of(content), LABELS)
    assert got == pytest.approx(probs, abs=1e-6)


def test_samples_give_shares() -> None:
    got = probs_from_samples(["a", "b", "a", "a"])
    assert got == {"a": 0.75, "b": 0.25}


def test_mean_of_distributions_sums_to_one() -> None:
    got = mean_probs([{"a": 1.0}, {"a": 0.5, "b": 0.5}])
    assert got == pytest.approx({"a": 0.75, "b": 0.25})
