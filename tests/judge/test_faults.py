"""Faults over real HTTP: retried with backoff, then the item is unscored and the run goes on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from judge_helpers import single, verdict

from tinyjudge.errors import TinyjudgeError
from tinyjudge.judge import Judge
from tinyjudge.judge._store import Store
from tinyjudge.testing import Fault, Reply, Request

OK = Reply(verdict("full_refusal"))


def faulty(first: Fault, times: int = 1):
    """Answer each item with ``first`` for its first ``times`` calls, then a verdict."""
    seen: dict[str, int] = {}
    stamps: dict[str, list[float]] = {}

    def respond(req: Request) -> Reply | Fault:
        n = seen[req.item_id] = seen.get(req.item_id, 0) + 1
        stamps.setdefault(req.item_id, []).append(time.monotonic())
        return first if n <= times else OK

    respond.stamps = stamps  # type: ignore[attr-defined]
    return respond


FAULTS = [
    ("rate_limited", Fault("status", 429, retry_after=0)),
    ("server_error", Fault("status", 500)),
    ("bad_gateway", Fault("status", 502)),
    ("unavailable", Fault("status", 503)),
    ("not_json", Fault("garbage")),
    ("json_without_choices", Fault("body", body=b'{"object": "chat.completion", "choices": []}')),
    ("choice_without_message", Fault("body", body=b'{"choices": [{"index": 0}]}')),
    ("dropped_connection", Fault("drop")),
    ("too_slow", Fault("slow", delay=3.0, then=OK)),
]


@pytest.mark.parametrize("fault", [f[1] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_a_fault_is_retried_then_succeeds(serve, compliance, fault: Fault) -> None:
    srv = serve(faulty(fault, times=2))
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.01, timeout=1.0, max_retries=3)
    labels = judge.run([single(1), single(2)])
    assert [lab.label for lab in labels] == ["full_refusal", "full_refusal"]
    assert srv.calls_by_item == {"it-1": 3, "it-2": 3}
    assert judge.summary.retries == 4 and judge.summary.unscored == 0
    assert all(lab.usage["retries"] == 2 for lab in labels)


@pytest.mark.parametrize("fault", [f[1] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_a_fault_that_persists_leaves_the_item_unscored(
    serve, compliance, fault: Fault, tmp_path: Path
) -> None:
    def respond(req: Request) -> Reply | Fault:
        return fault if req.item_id == "it-1" else OK

    srv = serve(respond)
    cache = tmp_path / "c.sqlite"
    judge = Judge(
        compliance,
        "m",
        base_url=srv.base_url,
        backoff=0.01,
        timeout=1.0,
        max_retries=2,
        cache=cache,
    )
    bad, good = judge.run([single(1), single(2)])
    assert good.label == "full_refusal"
    assert (
        bad.status == "unscored" and bad.label is None and "after 2 retries" in (bad.reason or "")
    )
    assert srv.calls_by_item["it-1"] == 3
    assert judge.summary.unscored == 1 and judge.summary.failed == 1
    # A failed call is not a judgment: it is not cached, so the next run asks again.
    with Store(cache) as store:
        assert store.item_ids() == {"it-2"}
    srv.responder = lambda req: OK
    again = judge.run([single(1), single(2)])
    assert [lab.label for lab in again] == ["full_refusal", "full_refusal"]
    assert srv.calls_by_item["it-1"] == 4 and srv.calls_by_item["it-2"] == 1


@pytest.mark.parametrize("retry_after", ["0.4", "http_date"], ids=["seconds", "http_date"])
def test_retry_after_is_honoured(serve, compliance, retry_after: str) -> None:
    if retry_after == "http_date":
        import email.utils

        retry_after = email.utils.formatdate(time.time() + 1.2, usegmt=True)
        least = 0.15  # an HTTP date has one-second resolution
    else:
        least = 0.4
    responder = faulty(Fault("status", 429, retry_after=retry_after))
    srv = serve(responder)
    # A tiny backoff: only Retry-After can explain a long gap.
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.001)
    [lab] = judge.run([single(1)])
    first, second = responder.stamps["it-1"]
    assert lab.label == "full_refusal"
    assert second - first >= least


def test_a_client_error_is_not_retried(serve, compliance) -> None:
    srv = serve(
        lambda req: (
            OK if req.item_id == "it-2" else Fault("status", 413, message="payload too large")
        )
    )
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.01)
    lab, good = judge.run([single(1), single(2)])
    assert (
        srv.calls_by_item["it-1"] == 1
        and lab.status == "unscored"
        and "HTTP 413: payload too large" in (lab.reason or "")
    )
    assert good.label == "full_refusal"


def test_a_422_for_every_format_is_the_requests_fault(serve, compliance) -> None:
    # A 422 may refuse the format (then a plainer step works, see test_fallback.py),
    # so each step is tried once; refused in all of them, the item is unscored, not retried.
    srv = serve(
        lambda req: OK if req.item_id == "it-2" else Fault("status", 422, message="unprocessable")
    )
    judge = Judge(compliance, "m", base_url=srv.base_url, backoff=0.01, concurrency=1)
    lab, _ = judge.run([single(1), single(2)])
    assert srv.calls_by_item["it-1"] == 4 and lab.status == "unscored"
    assert lab.reason == "HTTP 422: unprocessable"


@pytest.mark.parametrize("status", [401, 403, 404], ids=["unauthorized", "forbidden", "no_model"])
def test_an_error_no_item_can_pass_stops_the_run(
    serve, compliance, status: int, tmp_path: Path
) -> None:
    def respond(req: Request) -> Reply | Fault:
        return OK if req.item_id == "it-0" else Fault("status", status, message="nope")

    srv = serve(respond)
    cache = tmp_path / "c.sqlite"
    judge = Judge(compliance, "m", base_url=srv.base_url, cache=cache, concurrency=1)
    with pytest.raises(
        TinyjudgeError, match=f"the endpoint refused the judge: HTTP {status}: nope; finished"
    ):
        judge.run([single(i) for i in range(5)])
    with Store(cache) as store:
        assert store.item_ids() == {"it-0"}
    assert srv.calls == 2


def test_json_schema_rejected_falls_back_to_json_object(serve, compliance) -> None:
    srv = serve(
        lambda req: Reply(verdict("full_refusal")), reject_json_schema=True, keep_requests=True
    )
    judge = Judge(compliance, "m", base_url=srv.base_url, concurrency=1)
    labels = judge.run([single(1), single(2)])
    assert [lab.label for lab in labels] == ["full_refusal", "full_refusal"]
    kinds = [r.get("response_format", {}).get("type") for r in srv.requests]
    # One rejected json_schema call, then json_object for everything after it.
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert srv.requests[1]["response_format"]["schema"]["properties"]["label"]["enum"]
    assert judge.summary.fallbacks and "json_schema+logprobs rejected" in judge.summary.fallbacks[0]
    assert judge.summary.retries == 0


def test_a_400_for_one_item_does_not_downgrade_the_rest(serve, compliance) -> None:
    # A request the server refuses whatever the format (here: "too long") makes that
    # item unscored; it must not switch the rest of the run off json_schema and logprobs.
    def respond(req: Request) -> Reply | Fault:
        if req.item_id == "it-0":
            return Fault("status", 400, message="maximum context length exceeded")
        return OK

    srv = serve(respond, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url, concurrency=1)
    first, *rest = judge.run([single(0), single(1), single(2)])
    assert first.status == "unscored"
    assert first.reason == "HTTP 400: maximum context length exceeded"
    assert [lab.label for lab in rest] == ["full_refusal", "full_refusal"]
    later = srv.requests[-2:]
    assert [r["response_format"]["type"] for r in later] == ["json_schema", "json_schema"]
    assert all(r["logprobs"] for r in later)
    assert judge.summary.fallbacks == []


def test_every_format_rejected_ends_in_plain_text(serve, compliance) -> None:
    def respond(req: Request) -> Reply | Fault:
        if req.body.get("response_format") or req.body.get("logprobs"):
            return Fault("status", 400, message="unsupported parameter")
        return Reply("Verdict: full_refusal")

    srv = serve(respond, keep_requests=True)
    judge = Judge(compliance, "m", base_url=srv.base_url)
    [lab] = judge.run([single(1)])
    assert lab.label == "full_refusal" and len(judge.summary.fallbacks) == 3
    assert "response_format" not in srv.requests[-1] and not srv.requests[-1].get("logprobs")
