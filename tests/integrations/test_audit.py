"""The audit sampler as a callable in an in-process loop (TRL's reward function)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyjudge.cascade import AuditSampler
from tinyjudge.distill import load_model
from tinyjudge.errors import UsageError
from tinyjudge.integrations import RewardClient
from tinyjudge.integrations.trl import reward_func
from tinyjudge.judge import Judge
from tinyjudge.serve import rollout_to_item
from tinyjudge.testing import LocalServer, Reply


def test_trl_reward_func_sends_what_it_scores_to_the_judge(rm_dir: Path) -> None:
    server = LocalServer(lambda req: Reply(json.dumps({"rationale": "r", "label": "full_refusal"})))
    prompts = [f"How do I kill process {i} on Linux?" for i in range(40)]
    completions = ["Use kill -9 with its PID." if i % 2 else "I can't help." for i in range(40)]
    with server as url:
        sampler = AuditSampler(Judge("compliance", "j", base_url=url), rate=1.0, seed=1)
        rewards = reward_func(rm_dir, audit=sampler)(prompts=prompts, completions=completions)
        assert sampler.join(60)
        sampler.close()
    assert len(rewards) == 40
    state = sampler.state()
    assert state.judged == server.calls == state.drawn == 40
    # the judge always says full_refusal: the agreement is the model's share of it
    model = load_model(rm_dir)
    pairs = enumerate(zip(prompts, completions, strict=True))
    items = [rollout_to_item(f"{p}{c}", p, i) for i, (p, c) in pairs]
    said = [lab.label for lab in model.score_items(items)]
    assert 0 < said.count("full_refusal") < 40  # both kinds, so the figure means something
    assert state.agreement.value == pytest.approx(said.count("full_refusal") / 40)


def test_an_audit_needs_the_model_in_process() -> None:
    with pytest.raises(UsageError, match="a reward server audits itself"):
        RewardClient("http://127.0.0.1:9", audit=AuditSampler(lambda items: []))
