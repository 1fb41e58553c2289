"""A bad reply costs its item at most; ids stay on this machine; a dead endpoint stops the run.

Each reply below once killed a whole run (an exception outside the retry path
cancelled every worker, nothing was written, and each re-run crashed on the same
item) or was stored whole. Now the item is unscored with the reason, the run
goes on, and the summary counts it.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from judge_helpers import single, verdict

from tinyjudge.errors import TinyjudgeError
from tinyjudge.judge import EndpointFailing, Judge
from tinyjudge.judge._parse import MAX_TEXT
from tinyjudge.records import Item, Message
from tinyjudge.testing import Fault, LocalServer, Reply, Request

OK = Reply(verdict("full_refusal"))


def _body(content: str, *, logprob: object = -0.1, usage: str = '{"prompt_tokens": 3}') -> bytes:
    """A chat.completion body with the label's token carrying ``logprob``."""
    start = content.index("full_refusal")
    tokens = [
        {"token": content[:start], "logprob": -0.01, "top_logprobs": []},
        {
            "token": content[start:],
            "logprob": logprob,
            "top_logprobs": [{"token": content[start:], "logprob": logprob}],
        },
    ]
    choice = {"index": 0, "message": {"role": "assistant", "content": content},
              "logprobs": {"content": tokens}, "finish_reason": "stop"}  # fmt: skip
    body = json.dumps({"object": "chat.completion", "choices": [choice]})
    return (body[:-1] + f', "usage": {usage}}}').encode()


def _plain(content: str) -> Fault:
    """A reply of ``content`` sent as it is (no logprobs: the test server stays quick)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": content}}
    return Fault("body", body=json.dumps({"choices": [choice]}).encode())


DEEP = 20_000  # the JSON decoder gives up at 1,000 levels
BAD_REPLIES = [
    ("logprob_1000", Fault("body", body=_body(verdict("full_refusal"), logprob=1000))),
    ("logprob_not_a_number", Fault("body", body=_body(verdict("full_refusal"), logprob="x"))),
    ("logprob_huge_int", Fault("body", body=_body(verdict("full_refusal"), logprob=10**400))),
    (
        "usage_1e999",
        Fault("body", body=_body(verdict("full_refusal"), usage='{"prompt_tokens": 1e999}')),
    ),
    ("usage_a_string", Fault("body", body=_body(verdict("full_refusal"), usage='{"x": "y"}'))),
    ("answer_nested_deep", _plain('{"label": ' * DEEP + '"full_refusal"' + "}" * DEEP)),
    ("answer_of_brackets", _plain("{[" * DEEP)),
    ("body_nested_deep", Fault("body", body=b'{"choices": ' + b"[" * DEEP + b"]" * DEEP + b"}")),
    ("answer_5000_digit_step", _plain('{"label": "full_refusal", "step": ' + "9" * 5000 + "}")),
    ("answer_not_a_string", Fault("body", body=b'{"choices": [{"message": {"content": 7}}]}')),
]


@pytest.mark.parametrize("reply", [b[1] for b in BAD_REPLIES], ids=[b[0] for b in BAD_REPLIES])
def test_a_bad_reply_costs_its_item_at_most(serve, compliance, reply, tmp_path: Path) -> None:
    srv = serve(lambda req: reply if req.item_id == "it-1" else OK)
    judge = Judge(
        compliance, "m", base_url=srv.base_url, backoff=0.001, max_retries=1,
        cache=tmp_path / "c.sqlite", concurrency=2,
    )  # fmt: skip
    labels = judge.run([single(i) for i in range(4)])
    assert [lab.item_id for lab in labels] == ["it-0", "it-1", "it-2", "it-3"]
    bad = labels[1]
    others = [lab for lab in labels if lab.item_id != "it-1"]
    assert all(lab.label == "full_refusal" for lab in others)
    # The bad reply is either read (a label, the garbage ignored) or unscored with a reason.
    assert bad.status == "ok" or bad.reason
    assert judge.summary.items == 4 and judge.summary.ok + judge.summary.unscored == 4
    assert judge.summary.tokens_in < 10**6
    # A second run does not crash on it either.
    assert len(judge.run([single(i) for i in range(4)])) == 4


def test_the_replies_that_crashed_come_out_as_said(serve, compliance) -> None:
    replies = dict(BAD_REPLIES)
    srv = serve(lambda req: {
        "it-0": replies["logprob_1000"], "it-1": replies["answer_nested_deep"],
        "it-2": replies["body_nested_deep"], "it-3": replies["usage_1e999"],
    }[req.item_id])  # fmt: skip
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.001, max_retries=0)
    lp, nested, body, usage = judge.run([single(i) for i in range(4)])
    # A nonsense logprob is ignored: the verdict stands, from the text.
    assert lp.label == "full_refusal" and lp.probs == {"full_refusal": 1.0}
    assert nested.label == "full_refusal"  # read from its `"label": "..."` text
    assert body.status == "unscored" and "nested too deep" in (body.reason or "")
    assert usage.label == "full_refusal"
    assert judge.summary.unscored == 1 and judge.summary.failed == 1


def test_a_runaway_completion_is_kept_bounded(serve, compliance) -> None:
    huge = "blah " * 400_000  # 2 MB, far past what is kept
    srv = serve(
        lambda req: _plain(huge) if req.item_id == "it-0"
        else _plain(json.dumps({"rationale": huge, "label": "full_refusal"}))
    )  # fmt: skip
    garbage, long_rationale = Judge(compliance, "m", base_url=srv.base_url).run(
        [single(0), single(1)]
    )
    assert garbage.status == "unscored" and isinstance(garbage.raw, str)
    assert len(garbage.raw) < MAX_TEXT + 100 and "more characters not kept" in garbage.raw
    assert long_rationale.label == "full_refusal"
    assert len(long_rationale.rationale or "") < MAX_TEXT + 100
    assert len(long_rationale.model_dump_json()) < 3 * MAX_TEXT + 1000


ODD_IDS = ["café-1", "猫の評価", "tab\there", "new\nline", "emoji-🙂", "x" * 5000]


def test_ids_never_leave_the_machine_and_any_id_is_judged(compliance) -> None:
    items = [
        Item(id=i, messages=[Message(role="user", content=f"q{n}"),
                             Message(role="assistant", content="no")])
        for n, i in enumerate(ODD_IDS)
    ]  # fmt: skip
    seen: list[Request] = []

    def respond(req: Request) -> Reply:
        seen.append(req)
        return OK

    with LocalServer(respond, items=items, rubric=compliance) as url:
        judge = Judge(compliance, "m", base_url=url, max_retries=0)
        labels = judge.run(items)
    assert [lab.item_id for lab in labels] == ODD_IDS
    assert [lab.label for lab in labels] == ["full_refusal"] * len(items)
    assert sorted(r.item_id for r in seen) == sorted(ODD_IDS)  # recognised from the prompt
    for req in seen:
        wire = json.dumps(req.headers, ensure_ascii=False) + json.dumps(req.body)
        assert not any(i in wire or json.dumps(i)[1:-1] in wire for i in ODD_IDS)


def test_a_second_different_verdict_is_counted_ambiguous(serve, compliance) -> None:
    echoed = verdict("full_refusal") + '\nThe transcript said {"label": "full_compliance"}.'
    srv = serve(lambda req: Reply(echoed) if req.item_id == "it-0" else OK)
    judge = Judge(compliance, "m", base_url=srv.base_url)
    first, plain = judge.run([single(0), single(1)])
    assert first.label == "full_refusal"
    assert (first.reason or "").startswith("ambiguous: a later verdict in the same answer says")
    assert plain.reason is None
    assert judge.summary.ambiguous == 1
    assert any("1 ambiguous" in line for line in judge.summary.lines())


def test_duplicate_ids_are_refused_before_any_call(serve, compliance) -> None:
    srv = serve(lambda req: OK)
    with pytest.raises(TinyjudgeError, match=r"item id 'it-1' appears twice \(items 2 and 3\)"):
        Judge(compliance, "m", base_url=srv.base_url).run([single(0), single(1), single(1)])
    assert srv.calls == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_stops_the_run_early(compliance) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    judge = Judge(compliance, "m", base_url=url, backoff=0.001, max_retries=1, stop_after=4,
                  concurrency=2)  # fmt: skip
    with pytest.raises(EndpointFailing, match=r"stopped: 4 items in a row failed at http://127"):
        judge.run([single(i) for i in range(40)])
    assert judge.summary.calls < 20  # stopped after the fourth failed item, not the 40th


def test_an_endpoint_failing_every_call_stops_the_run(serve, compliance, tmp_path: Path) -> None:
    srv = serve(lambda req: Fault("status", 500, message="down"))
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.001, max_retries=1,
                  cache=tmp_path / "c.sqlite")  # fmt: skip
    with pytest.raises(EndpointFailing, match=r"\(last: HTTP 500: down .*\); finished judgments"):
        judge.run([single(i) for i in range(40)])
    assert len(srv.calls_by_item) < 40


def test_a_small_run_that_fails_entirely_stops_with_an_error(serve, compliance) -> None:
    srv = serve(lambda req: Fault("status", 503))
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.001, max_retries=0)
    with pytest.raises(EndpointFailing, match="stopped: 2 items in a row failed"):
        judge.run([single(0), single(1)])


def test_failures_between_successes_do_not_stop_the_run(serve, compliance) -> None:
    srv = serve(lambda req: OK if int(req.item_id.split("-")[1]) % 3 == 0 else Fault("status", 500))
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.001, max_retries=0,
                  stop_after=3, concurrency=1)  # fmt: skip
    labels = judge.run([single(i) for i in range(12)])
    assert judge.summary.ok == 4 and judge.summary.failed == 8 and len(labels) == 12
