"""The response_format fallback against real local servers that refuse as real endpoints do."""

from __future__ import annotations

import pytest
from judge_helpers import single, verdict

from tinyjudge.errors import TinyjudgeError
from tinyjudge.judge import EndpointFailing, Judge
from tinyjudge.judge._client import Mode, rejection
from tinyjudge.testing import Fault, Reply, Request

OK = Reply(verdict("full_refusal"), probs={"full_refusal": 0.8, "full_compliance": 0.2})


def _kinds(srv) -> list[tuple[str | None, bool]]:
    return [
        ((r.get("response_format") or {}).get("type"), bool(r.get("logprobs")))
        for r in srv.requests
    ]


@pytest.mark.parametrize("status", [400, 422, 500], ids=["400", "422-fastapi", "500-llama-cpp"])
def test_a_refused_json_schema_falls_back_to_json_object(serve, compliance, status) -> None:
    srv = serve(lambda req: OK, reject_json_schema=True, reject_status=status, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, concurrency=1, max_retries=0)
    labels = judge.run([single(1), single(2)])
    assert [lab.status for lab in labels] == ["ok", "ok"]
    # Real logprob distributions survive the fallback: only the format changed.
    assert labels[0].probs == pytest.approx({"full_refusal": 0.8, "full_compliance": 0.2})
    # One refused json_schema call (not retried as a fault), then json_object for the rest.
    assert _kinds(srv) == [("json_schema", True), ("json_object", True), ("json_object", True)]
    assert judge.summary.retries == 0
    assert judge.summary.response_format == "json_object+logprobs"
    assert f"json_schema+logprobs rejected: HTTP {status}" in judge.summary.fallbacks[0]
    assert "response format: json_object+logprobs" in judge.summary.lines()


@pytest.mark.parametrize("status", [400, 422, 500], ids=["400", "422", "500"])
def test_refused_logprobs_keep_the_format(serve, compliance, status) -> None:
    srv = serve(lambda req: OK, reject_logprobs=True, reject_status=status, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, concurrency=1, max_retries=0)
    [lab] = judge.run([single(1)])
    assert lab.label == "full_refusal" and lab.probs == {"full_refusal": 1.0}
    assert _kinds(srv) == [("json_schema", True), ("json_schema", False)]
    assert judge.summary.response_format == "json_schema"


def test_the_step_reached_is_kept_for_the_next_run(serve, compliance) -> None:
    srv = serve(lambda req: OK, reject_json_schema=True, reject_status=500, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, concurrency=1, max_retries=0)
    judge.run([single(1)])
    judge.run([single(2)])
    assert _kinds(srv) == [("json_schema", True), ("json_object", True), ("json_object", True)]
    assert judge.summary.fallbacks == []  # nothing new was learned in the second run
    assert judge.summary.response_format == "json_object+logprobs"


def test_a_500_that_does_not_name_the_format_is_a_fault_and_retried(serve, compliance) -> None:
    seen: list[int] = []

    def respond(req: Request) -> Reply | Fault:
        seen.append(req.call)
        return Fault("status", 500, message="CUDA out of memory") if len(seen) == 1 else OK

    srv = serve(respond, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.01)
    [lab] = judge.run([single(1)])
    assert lab.status == "ok"
    assert _kinds(srv) == [("json_schema", True), ("json_schema", True)]
    assert judge.summary.retries == 1 and judge.summary.fallbacks == []


@pytest.mark.parametrize(
    ("forced", "expected"),
    [
        ("json_object", [("json_object", True)]),
        ("text", [(None, True)]),
        ("json_schema", [("json_schema", True)]),
    ],
    ids=["json_object", "text", "json_schema"],
)
def test_a_forced_format_is_sent_from_the_first_call(serve, compliance, forced, expected) -> None:
    srv = serve(lambda req: OK, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, response_format=forced)
    [lab] = judge.run([single(1)])
    assert lab.label == "full_refusal"
    assert _kinds(srv) == expected


def test_a_forced_format_the_server_refuses_stops_the_run(serve, compliance) -> None:
    srv = serve(lambda req: OK, reject_json_schema=True, reject_status=500, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, response_format="json_schema")
    # Every item would fail the same way: the run stops with the reason, not a file of
    # unscored items (see test_bad_replies.py).
    with pytest.raises(
        EndpointFailing, match=r"HTTP 500: response_format type json_schema is not supported"
    ):
        judge.run([single(1)])
    # It tried without logprobs too, but never another format.
    assert _kinds(srv) == [("json_schema", True), ("json_schema", False)]


def test_an_unknown_response_format_is_refused(compliance) -> None:
    with pytest.raises(
        TinyjudgeError, match=r"response_format must be one of 'auto', .*'yaml'"
    ) as e:
        Judge(compliance, "m", base_url="http://127.0.0.1:9/v1", response_format="yaml")
    assert e.value.param == "response_format"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (400, "maximum context length exceeded", "request"),
        (422, "[{'loc': ['body', 'response_format', 'type'], 'msg': 'bad'}]", "format"),
        (500, "1 validation error for CreateChatCompletionRequest response_format", "format"),
        (500, "top_logprobs must be <= 5", "logprobs"),
        (500, "CUDA out of memory", None),
        (503, "response_format overloaded", None),
    ],
    ids=["400-other", "422-format", "500-format", "500-logprobs", "500-fault", "503"],
)
def test_rejection_reads_the_answer(status: int, message: str, expected: str | None) -> None:
    assert rejection(status, message) == expected


def test_modes_merge_to_the_plainer_in_each_respect() -> None:
    assert Mode("json_schema", False).merge(Mode("json_object", True)) == Mode("json_object", False)
    assert str(Mode("text", False)) == "text" and str(Mode()) == "json_schema+logprobs"
