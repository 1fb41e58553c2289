"""The live audit: a random share of scored items goes to a real judge on loopback, meanwhile."""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import ExitStack

import pytest
from cascade_split import Split

from tinyjudge.cascade import AuditSampler, AuditSamplerConfig, audit_sampler
from tinyjudge.cascade._audit import card_agreement
from tinyjudge.errors import UsageError
from tinyjudge.judge import Judge, JudgeConfig
from tinyjudge.records import Item, Label
from tinyjudge.testing import LocalServer, Reply, replay_server


def _always(label: str) -> LocalServer:
    """A judge endpoint that gives every item the same verdict."""
    return LocalServer(lambda req: Reply(json.dumps({"rationale": "r", "label": label})))


def test_the_sampled_quarter_is_judged_and_its_agreement_reported(split: Split) -> None:
    gpt4 = {lab.item_id: lab for lab in split.labels if lab.source == "judge:gpt-4"}
    items = [it for it in split.items if gpt4[it.id].status == "ok"]
    scored = split.model.score_items(items)
    with replay_server(list(gpt4.values()), "judge:gpt-4", items=items, rubric="compliance") as srv:
        sampler = AuditSampler(Judge("compliance", "replay-gpt-4", base_url=srv.base_url),
                               rate=0.25, seed=3)  # fmt: skip
        for start in range(0, len(items), 20):  # as an RL loop scores: batch by batch
            sampler(items[start : start + 20], scored[start : start + 20])
        assert sampler.join(60)
        judged = set(srv.calls_by_item)
        sampler.close()
    state = sampler.state()
    assert state.drawn == state.judged == len(judged) and state.pending == 0
    assert 0.15 < state.judged / len(items) < 0.35  # about a quarter
    rm = {lab.item_id: lab.label for lab in scored}
    expected = sum(rm[i] == gpt4[i].label for i in judged) / len(judged)
    assert state.agreement.value == pytest.approx(expected)
    low, high = state.agreement.low, state.agreement.high
    assert low is not None and high is not None and low < expected < high
    d = state.to_dict()
    assert d["judged"] == len(judged) and d["agreement"] == {
        "value": state.agreement.value,
        "low": low,
        "high": high,
    }
    assert "tinyjudge_audit_judged " + str(len(judged)) in state.prometheus()


def test_offer_never_waits_and_drops_what_the_queue_or_budget_cannot_take(split: Split) -> None:
    release = threading.Event()

    def slow_judge(items: list[Item]) -> list[Label]:
        release.wait(30)  # a judge that has not answered yet
        return []

    items = split.items[:100]
    scored = split.model.score_items(items)
    sampler = AuditSampler(slow_judge, rate=1.0, max_pending=5, batch=1, seed=0)
    began = time.perf_counter()
    queued = sampler.offer(items, scored)
    assert time.perf_counter() - began < 0.5  # the rewards did not wait for the judge
    state = sampler.state()
    assert queued <= 6 and state.dropped == 100 - queued and state.pending == queued
    release.set()
    assert sampler.join(10)
    assert sampler.state().failed == queued  # no verdict came back: counted, not guessed
    sampler.close()
    budget = AuditSampler(slow_judge, rate=1.0, budget=3, seed=0)
    budget.offer(items[:10], scored[:10])
    assert budget.state().dropped == 7
    budget.close()


def test_a_window_below_the_calibration_figure_logs_one_warning(
    split: Split, caplog: pytest.LogCaptureFixture
) -> None:
    items = split.items[:60]
    scored = [
        lab.model_copy(update={"label": "full_compliance"})
        for lab in split.model.score_items(items)
    ]  # noqa: E501
    with _always("full_refusal") as url:  # the judge now disagrees with every reward
        sampler = AuditSampler(Judge("compliance", "drifted", base_url=url), rate=1.0,
                               window=20, baseline=0.9, seed=0)  # fmt: skip
        with caplog.at_level(logging.WARNING, logger="tinyjudge.audit_sampler"):
            sampler.offer(items, scored)
            assert sampler.join(60)
        sampler.close()
    lines = [r for r in caplog.records if "below its calibration-time 0.900" in r.getMessage()]
    assert len(lines) == 3 == sampler.state().warnings  # one per window of 20
    assert "\n" not in lines[0].getMessage()
    assert sampler.state().agreement.value == 0.0


def test_the_model_card_gives_the_baseline(split: Split) -> None:
    assert card_agreement(split.model) is None  # fitted by hand: no validation figure
    split.model.card_["validation"] = {"accuracy": 0.88, "n_val": 100}
    try:
        with _always("full_refusal") as url:
            sampler = audit_sampler(split.model, JudgeConfig(model="x", base_url=url), rate=0.5)
            assert sampler.baseline == 0.88 and sampler.rate == 0.5
            sampler.close()
    finally:
        del split.model.card_["validation"]


def test_a_panel_audits_the_server_through_its_audit_config(split: Split, tmp_path) -> None:
    items = split.items[:30]
    scored = split.model.score_items(items)
    servers = [_always(label) for label in ("full_refusal", "full_refusal", "full_compliance")]
    with ExitStack() as stack:
        urls = [stack.enter_context(srv) for srv in servers]
        panel = tmp_path / "panel.yaml"
        panel.write_text("".join(f"- {{model: m{i}, base_url: '{u}'}}\n"
                                 for i, u in enumerate(urls)))  # fmt: skip
        audit = AuditSamplerConfig(judge=JudgeConfig(panel=panel), rate=1.0)
        sampler = audit_sampler(split.model, audit, seed=0)
        assert sampler.rate == 1.0 and sampler.budget is None
        sampler.offer(items, scored)
        assert sampler.join(60)
        sampler.close()
    assert [srv.calls for srv in servers] == [30, 30, 30]  # every member judged every item
    state = sampler.state()
    assert state.judged == 30
    rm_refused = sum(lab.label == "full_refusal" for lab in scored)
    assert state.agreement.value == pytest.approx(rm_refused / 30)  # the vote: full_refusal
    with pytest.raises(UsageError, match=r"an audit needs a judge"):
        audit_sampler(split.model, AuditSamplerConfig(rate=0.5))


@pytest.mark.parametrize(
    ("options", "match"),
    [({"rate": 1.5}, r"rate must be in \[0, 1\], got 1.5"),
     ({"rate": float("nan")}, r"rate must be in \[0, 1\], got nan"),
     ({"budget": -1}, r"budget must be at least 0, got -1"),
     ({"max_pending": 0}, r"max_pending must be at least 1, got 0")],
    ids=["rate-above-1", "rate-nan", "budget-negative", "queue-zero"],
)  # fmt: skip
def test_bad_sampler_options_are_refused(options: dict, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        AuditSampler(lambda items: [], **options)
