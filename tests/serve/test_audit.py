"""``serve`` audits itself: a sampled quarter of live traffic goes to a replayed judge."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx

from tinyjudge.cascade import AuditSampler
from tinyjudge.judge import Judge
from tinyjudge.records import Item
from tinyjudge.serve import create_app
from tinyjudge.testing import replay_server

from .conftest import running


def _stripped(item: Item) -> Item:
    """The item as the server's reader keeps it (text without edge whitespace), so that the
    replay server recognises the prompts the audit judge is sent."""
    messages = [m.model_copy(update={"content": m.text.strip()}) for m in item.messages]
    return item.model_copy(update={"messages": messages})


def test_health_and_metrics_report_the_agreement_of_a_sampled_quarter(
    linear_model, xstest_items_labels
) -> None:
    items, labels = xstest_items_labels
    gpt4 = {lab.item_id: lab for lab in labels if lab.source == "judge:gpt-4"}
    items = [_stripped(it) for it in items if it.id in gpt4 and gpt4[it.id].status == "ok"][:240]
    with replay_server(list(gpt4.values()), "judge:gpt-4", items=items, rubric="compliance") as srv:
        judge = Judge("compliance", "replay-gpt-4", base_url=srv.base_url)
        sampler = AuditSampler(judge, rate=0.25, seed=7, baseline=0.5)
        rewards = {}
        with running(create_app(linear_model, audit=sampler)) as url, httpx.Client() as client:
            for start in range(0, len(items), 30):  # live traffic: batch after batch
                batch = items[start : start + 30]
                body = {"items": [it.model_dump(mode="json", exclude_none=True) for it in batch]}
                r = client.post(f"{url}/score", json=body, timeout=30)
                assert r.status_code == 200, r.text
                rewards.update({lab["item_id"]: lab["label"] for lab in r.json()["labels"]})
            deadline = time.monotonic() + 60
            while True:
                audit = client.get(f"{url}/health", timeout=10).json()["audit"]
                if audit["pending"] == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            metrics = client.get(f"{url}/metrics", timeout=10).text
        judged = set(srv.calls_by_item)
    assert len(rewards) == len(items)
    assert audit["pending"] == 0 and audit["judged"] == len(judged) == audit["drawn"]
    assert 0.15 < len(judged) / len(items) < 0.35  # a quarter of the traffic, drawn at random
    expected = sum(rewards[i] == gpt4[i].label for i in judged) / len(judged)
    assert abs(audit["agreement"]["value"] - expected) < 1e-9
    low, high = audit["agreement"]["low"], audit["agreement"]["high"]
    assert low < high and low <= expected <= high and audit["baseline"] == 0.5
    assert f"tinyjudge_audit_judged {len(judged)}" in metrics
    assert "tinyjudge_audit_agreement " in metrics


def test_without_an_audit_health_has_none(linear_model) -> None:
    with running(create_app(linear_model)) as url:
        health = httpx.get(f"{url}/health", timeout=10).json()
    assert "audit" not in health


def test_the_serve_command_audits_with_its_flags(
    linear_model, xstest_items_labels, tmp_path: Path
) -> None:
    from support import tinyjudge_command

    from .conftest import free_port

    items, labels = xstest_items_labels
    gpt4 = {lab.item_id: lab for lab in labels if lab.source == "judge:gpt-4"}
    items = [_stripped(it) for it in items if it.id in gpt4 and gpt4[it.id].status == "ok"][:120]
    model_dir = linear_model.save(tmp_path / "rm")
    port = free_port()
    with replay_server(list(gpt4.values()), "judge:gpt-4", items=items, rubric="compliance") as srv:
        args = ["serve", model_dir, "--port", port, "--audit-model", "replay-gpt-4",
                "--audit-base-url", srv.base_url, "--audit-rate", "0.25"]  # fmt: skip
        proc = subprocess.Popen([*tinyjudge_command(), *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{url}/health", timeout=2)
                    break
                except httpx.HTTPError:
                    assert proc.poll() is None and time.monotonic() < deadline, "no server"
                    time.sleep(0.1)
            body = {"items": [it.model_dump(mode="json", exclude_none=True) for it in items]}
            assert httpx.post(f"{url}/score", json=body, timeout=60).status_code == 200
            while (audit := httpx.get(f"{url}/health", timeout=5).json()["audit"])["pending"]:
                assert time.monotonic() < deadline + 60
                time.sleep(0.1)
        finally:
            proc.terminate()
            printed, _ = proc.communicate(timeout=20)
        judged = set(srv.calls_by_item)
    assert "auditing 25.0% of rollouts with judge:replay-gpt-4" in printed
    assert audit["judged"] == len(judged) > 0 and audit["agreement"]["low"] is not None


def test_a_burst_of_400_at_rate_a_quarter_is_drawn_uniformly_and_judged_meanwhile(
    linear_model, xstest_items_labels
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    items, labels = xstest_items_labels
    gpt4 = {lab.item_id: lab for lab in labels if lab.source == "judge:gpt-4"}
    # distinct texts only: two models' identical refusals of one prompt are one request to the
    # replay server, which would credit both to the first id
    by_text = {}
    for it in items:
        if it.id in gpt4 and gpt4[it.id].status == "ok":
            by_text.setdefault(json.dumps([m.model_dump(mode="json") for m in it.messages]), it)
    items = [_stripped(it) for it in by_text.values()][:400]
    assert len(items) == 400
    with replay_server(list(gpt4.values()), "judge:gpt-4", items=items, rubric="compliance") as srv:
        sampler = AuditSampler(Judge("compliance", "replay-gpt-4", base_url=srv.base_url),
                               rate=0.25, seed=11)  # fmt: skip
        with running(create_app(linear_model, audit=sampler)) as url, httpx.Client() as client:

            def post(start: int) -> None:
                body = {"items": [it.model_dump(mode="json", exclude_none=True)
                                  for it in items[start : start + 20]]}  # fmt: skip
                r = client.post(f"{url}/score", json=body, timeout=60)
                assert r.status_code == 200, r.text

            with ThreadPoolExecutor(20) as pool:  # 20 requests of 20 at once: one burst
                list(pool.map(post, range(0, 400, 20)))
            right_after = client.get(f"{url}/health", timeout=10).json()["audit"]
            deadline = time.monotonic() + 120
            while (audit := client.get(f"{url}/health", timeout=10).json()["audit"])["pending"]:
                assert time.monotonic() < deadline, audit
                time.sleep(0.05)
            metrics = client.get(f"{url}/metrics", timeout=10).text
        judged = set(srv.calls_by_item)
    # every scored rollout had its draw, none was dropped, and the judge caught up after
    assert right_after["offered"] == audit["offered"] == 400 and audit["rate"] == 0.25, audit
    assert audit["drawn"] == right_after["drawn"], (right_after, audit)  # drawn with the reward
    assert 60 <= audit["judged"] <= 140 and audit["judged"] == len(judged), audit
    assert audit["drawn"] == audit["judged"] + audit["dropped"] + audit["failed"], audit
    assert audit["dropped"] == audit["failed"] == audit["pending"] == 0, audit
    # the judged items are the drawn ones (no item judged twice, none outside the traffic)
    calls = dict(srv.calls_by_item)
    assert judged <= {it.id for it in items} and set(calls.values()) == {1}, calls
    # XSTest's five answers to a prompt are a group: the interval is over prompts
    assert audit["group_by"] == "metadata.prompt_id" and audit["groups"] < audit["judged"], audit
    assert "tinyjudge_audit_rate 0.25" in metrics and "tinyjudge_audit_offered 400" in metrics
    assert f"tinyjudge_audit_drawn {audit['drawn']}" in metrics
