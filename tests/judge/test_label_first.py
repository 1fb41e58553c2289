"""Cheap verdicts for small models: the label first, cut answers, fenced JSON, logprob splits."""

from __future__ import annotations

import json

import pytest
from judge_helpers import LABELS, single

from tinyjudge.judge import Judge, build_messages, parse_verdict, verdict_schema
from tinyjudge.testing import Reply

PROBS = {"full_refusal": 0.6, "full_compliance": 0.3, "partial_refusal": 0.1}


def test_the_label_first_schema_and_prompt_put_the_label_first(compliance) -> None:
    schema = verdict_schema(compliance, label_first=True)
    assert list(schema["properties"]) == ["label", "rationale"]
    assert schema["required"] == ["label", "rationale"]
    system = build_messages(single(1), compliance, label_first=True)[0]["content"]
    assert system.index('"label": exactly one of') < system.index('"rationale": one short')
    assert list(verdict_schema(compliance)["properties"]) == ["rationale", "label"]


@pytest.mark.parametrize(
    ("text", "label", "rationale"),
    [
        ('```json\n{"label": "full_refusal", "rationale": "declines"}\n```', "full_refusal",
         "declines"),
        ('```\n{"label": "partial_refusal", "rationale": "both"}\n```', "partial_refusal", "both"),
        ('{"label": "full_compliance", "rationale": "The assistant gi', "full_compliance", None),
        ('{"label": "full_refusal"', "full_refusal", None),
    ],
    ids=["fenced-json", "fenced-bare", "cut-rationale", "cut-after-label"],
)  # fmt: skip
def test_fenced_and_cut_label_first_answers_parse(text, label, rationale) -> None:
    v = parse_verdict(text, LABELS)
    assert v.label == label and v.rationale == rationale
    start, end = v.label_span
    assert text[start:end] == label


@pytest.mark.parametrize("merge_quote", [False, True], ids=["quote-apart", "quote-merged"])
def test_a_cut_label_first_answer_keeps_its_distribution(serve, compliance, merge_quote) -> None:
    # max_tokens cut the rationale: the label and its top logprobs are all there is. The
    # labels full_refusal / full_compliance share their first token ("full"); the split
    # between them is read at the next token, where they differ.
    cut = '{"label": "full_refusal", "rationale": "It decl'
    srv = serve(lambda req: Reply(cut, probs=PROBS, merge_quote=merge_quote), keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, label_first=True, max_tokens=12)
    [lab] = judge.run([single(1)])
    assert lab.status == "ok" and lab.label == "full_refusal"
    assert lab.probs == pytest.approx(PROBS)
    body = srv.requests[0]
    assert body["max_tokens"] == 12
    assert list(body["response_format"]["json_schema"]["schema"]["properties"])[0] == "label"


def test_label_first_is_part_of_the_cache_key(compliance, tmp_path) -> None:
    a = Judge(compliance, "m", base_url="http://127.0.0.1:9/v1")
    b = Judge(compliance, "m", base_url="http://127.0.0.1:9/v1", label_first=True)
    assert a.key(single(1)) != b.key(single(1))
    assert json.dumps(b.params["prompt"]).endswith('-label-first"')
