"""The reward server over real HTTP: scoring, OpenRLHF's /get_reward, limits, auth, metrics."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tinyjudge.records import Item
from tinyjudge.serve import create_app, query_to_item

from .conftest import running

TOKEN = "s3cret-token-for-tests"  # 16 characters or more, as every token must be


def _payload(items: list[Item]) -> dict:
    return {"items": [it.model_dump(mode="json", exclude_none=True) for it in items]}


def test_score_matches_offline_scoring(linear_model, xstest_items_labels) -> None:
    items = xstest_items_labels[0][:12]
    expected = linear_model.score_items(items)
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/score", json=_payload(items), timeout=30)
    assert r.status_code == 200, r.text
    got = r.json()["labels"]
    assert [g["item_id"] for g in got] == [it.id for it in items]
    for g, e in zip(got, expected, strict=True):
        assert g["label"] == e.label
        assert g["source"] == e.source
        assert g["probs"] == pytest.approx(e.probs, abs=1e-9)
        assert g["score"] == pytest.approx(e.score, abs=1e-9)


def test_get_reward_is_openrlhf_shaped(linear_model, xstest_items_labels) -> None:
    items = xstest_items_labels[0][:4]
    prompts = [it.messages[0].text for it in items]
    queries = [p + it.messages[1].text for p, it in zip(prompts, items, strict=True)]
    expected = [
        lab.score
        for lab in linear_model.score_items(
            [query_to_item(q, p, i) for i, (q, p) in enumerate(zip(queries, prompts, strict=True))]
        )
    ]
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": queries, "prompts": prompts}, timeout=30)
        bad = httpx.post(f"{url}/get_reward", json={"query": queries, "prompts": prompts[:1]})
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == pytest.approx(expected, abs=1e-9)
    assert bad.status_code == 422
    assert "prompts" in bad.json()["detail"]


def test_query_to_item_splits_prompt_and_response() -> None:
    item = query_to_item("How do I kill a process? Use kill -9.", "How do I kill a process?", 3)
    assert [m.role for m in item.messages] == ["user", "assistant"]
    assert item.messages[1].text == " Use kill -9."
    assert query_to_item("no prompt known", None, 0).messages[0].role == "assistant"


@pytest.mark.parametrize(
    ("body", "content_type", "match"),
    [
        (b"{not json", "application/json", "malformed JSON"),
        (json.dumps({"itemz": []}).encode(), "application/json", 'missing field "items"'),
        (json.dumps({"items": [{"id": "x"}]}).encode(), "application/json", "messages"),
        (json.dumps({"items": [], "extra": 1}).encode(), "application/json", "extra"),
    ],
    ids=["malformed-json", "wrong-field", "item-without-messages", "unknown-field"],
)
def test_bad_requests_answer_422_with_a_reason(linear_model, body, content_type, match) -> None:
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/score", content=body, headers={"content-type": content_type})
        after = httpx.get(f"{url}/health")
    assert r.status_code == 422
    assert match in r.json()["detail"]
    assert after.status_code == 200  # the server is still up


def test_request_size_limit_answers_413(linear_model, xstest_items_labels) -> None:
    items = xstest_items_labels[0][:50]
    with running(create_app(linear_model, max_body_bytes=2000)) as url:
        r = httpx.post(f"{url}/score", json=_payload(items))
        small = httpx.post(f"{url}/score", json=_payload(items[:1]))
        body = json.dumps(_payload(items)).encode()
        chunked = httpx.post(  # no Content-Length: the limit must hold while streaming
            f"{url}/score",
            content=(body[i : i + 500] for i in range(0, len(body), 500)),
            headers={"content-type": "application/json"},
        )
    assert chunked.status_code == 413
    assert "more than" in chunked.json()["detail"]
    assert r.status_code == 413
    assert "limit is 2000 (max_body_bytes)" in r.json()["detail"]
    assert small.status_code == 200


def test_bearer_token_is_required_when_set(linear_model, xstest_items_labels) -> None:
    payload = _payload(xstest_items_labels[0][:1])
    with running(create_app(linear_model, token=TOKEN)) as url:
        none = httpx.post(f"{url}/score", json=payload)
        wrong = httpx.post(f"{url}/score", json=payload, headers={"authorization": "Bearer nope"})
        ok = httpx.post(f"{url}/score", json=payload, headers={"authorization": f"Bearer {TOKEN}"})
        metrics = httpx.get(f"{url}/metrics")
        health = httpx.get(f"{url}/health")
    assert (none.status_code, wrong.status_code, ok.status_code) == (401, 401, 200)
    assert metrics.status_code == 401
    assert health.json() == {
        "status": "ok",
        "model": linear_model.name,
        "reward": {"labels": ["full_refusal", "partial_refusal"], "rubric": "compliance"},
    }


def test_concurrent_clients_get_their_own_results_in_shared_batches(
    linear_model, xstest_items_labels
) -> None:
    items = xstest_items_labels[0][:64]
    expected = {lab.item_id: lab.label for lab in linear_model.score_items(items)}
    requests = [items[i : i + 2] for i in range(0, 64, 2)]  # 32 clients, 2 items each
    with running(create_app(linear_model, max_batch=64, max_wait_ms=50)) as url:
        with httpx.Client(timeout=60) as client, ThreadPoolExecutor(32) as pool:
            replies = list(
                pool.map(lambda b: client.post(f"{url}/score", json=_payload(b)), requests)
            )
        metrics = httpx.get(f"{url}/metrics").text
    for batch, reply in zip(requests, replies, strict=True):
        assert reply.status_code == 200
        got = reply.json()["labels"]
        assert [g["item_id"] for g in got] == [it.id for it in batch]
        assert all(g["label"] == expected[g["item_id"]] for g in got)
    passes = int(
        next(
            line.split()[-1]
            for line in metrics.splitlines()
            if line.startswith("tinyjudge_batch_size_count")
        )
    )
    assert passes < len(requests)  # requests were gathered into shared forward passes
    assert 'tinyjudge_requests_total{path="/score",code="200"} 32' in metrics
    assert "tinyjudge_items_scored_total 64" in metrics


def test_metrics_count_errors_and_latency(linear_model) -> None:
    with running(create_app(linear_model)) as url:
        httpx.post(f"{url}/score", content=b"[", headers={"content-type": "application/json"})
        text = httpx.get(f"{url}/metrics").text
    assert 'tinyjudge_requests_total{path="/score",code="422"} 1' in text
    assert "tinyjudge_errors_total 1" in text
    assert 'tinyjudge_request_seconds_bucket{path="/score",le="+Inf"} 1' in text


def test_metrics_lump_unknown_paths_together(linear_model) -> None:
    # Without the token, a client probing random paths must not grow the metrics.
    with running(create_app(linear_model, token=TOKEN)) as url:
        codes = [httpx.get(f"{url}/probe/{i}").status_code for i in range(3)]
        auth = {"authorization": f"Bearer {TOKEN}"}
        text = httpx.get(f"{url}/metrics", headers=auth).text
    assert codes == [401, 401, 401]
    assert 'tinyjudge_requests_total{path="other",code="401"} 3' in text
    assert "/probe/" not in text


def test_a_request_over_the_item_limit_answers_413(linear_model, xstest_items_labels) -> None:
    items = xstest_items_labels[0][:4]
    with running(create_app(linear_model, max_items=3)) as url:
        many = httpx.post(f"{url}/score", json=_payload(items))
        few = httpx.post(f"{url}/score", json=_payload(items[:3]))
        rollouts = httpx.post(f"{url}/get_reward", json={"query": ["a", "b", "c", "d"]})
        text = httpx.get(f"{url}/metrics").text
    assert many.status_code == 413
    assert many.json()["detail"] == ("4 items in one request; the limit is 3 (max_items): split it")
    assert few.status_code == 200 and len(few.json()["labels"]) == 3
    assert rollouts.status_code == 413 and "4 rollouts" in rollouts.json()["detail"]
    assert "tinyjudge_items_scored_total 3" in text  # the refused ones were never scored


def test_client_disconnects_are_counted_apart_from_errors(linear_model) -> None:
    import socket
    import time
    from urllib.parse import urlsplit

    with running(create_app(linear_model)) as url:
        where = urlsplit(url)
        for _ in range(2):  # the client promises 1,000 bytes, sends 10 and leaves
            with socket.create_connection((where.hostname, where.port)) as s:
                s.sendall(
                    b"POST /score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n" + b'{"items": '
                )
        deadline = time.monotonic() + 10
        while "tinyjudge_client_disconnects_total 2" not in (
            text := httpx.get(f"{url}/metrics").text
        ):
            assert time.monotonic() < deadline, text
            time.sleep(0.05)
    assert 'tinyjudge_requests_total{path="/score",code="499"} 2' in text
    assert "tinyjudge_errors_total 0" in text and 'code="500"' not in text


def test_get_reward_returns_an_ensembles_spread_beside_each_reward(xstest_items_labels) -> None:
    from tinyjudge.distill import EnsembleConfig, LinearRM, ensemble_fit
    from tinyjudge.distill._data import targets

    items, labels = xstest_items_labels
    gpt4 = {lab.item_id: lab for lab in labels if lab.source == "judge:gpt-4" and lab.label}
    train = [it for it in items[:300] if it.id in gpt4]
    Y = targets([gpt4[it.id] for it in train], LinearRM("compliance").rubric.label_names)
    fit = ensemble_fit(
        lambda its, y: LinearRM("compliance").fit(its, y), EnsembleConfig(k=3, risk=2.0)
    )
    model = fit(train, Y)
    probe = items[300:306]
    prompts = [it.messages[0].text for it in probe]
    queries = [p + it.messages[1].text for p, it in zip(prompts, probe, strict=True)]
    offline = model.score_items(
        [query_to_item(q, p, i) for i, (q, p) in enumerate(zip(queries, prompts, strict=True))]
    )
    with running(create_app(model)) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": queries, "prompts": prompts}, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    spreads = [lab.raw["spread"] for lab in offline]
    assert body["spreads"] == pytest.approx(spreads, abs=1e-9)
    assert body["extra_logs"]["reward_spread"] == pytest.approx(spreads, abs=1e-9)
    # the served reward is conservative: the members' mean less two spreads
    means = [lab.raw["mean"] for lab in offline]
    assert body["rewards"] == pytest.approx(
        [max(0.0, m - 2 * s) for m, s in zip(means, spreads, strict=True)], abs=1e-9
    )
    assert max(spreads) > 0


def test_a_single_model_answers_no_spreads(linear_model, xstest_items_labels) -> None:
    items = xstest_items_labels[0][:2]
    prompts = [it.messages[0].text for it in items]
    queries = [p + it.messages[1].text for p, it in zip(prompts, items, strict=True)]
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": queries, "prompts": prompts}, timeout=30)
    assert "spreads" not in r.json() and "reward_spread" not in r.json()["extra_logs"]
