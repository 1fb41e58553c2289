"""The loop in one place (examples/sdpo_with_hints.py): TRL's own SDPOTrainer trains a tiny
policy for 2 steps on hints from real trajectories, with a tinyjudge reward model as its
reward function; the hints reach the teacher, the distillation loss is not zero, and the
shuffled control shows the teacher another item's hint."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support import DATA_SLICES, REPO, SHARED_DATA

from tinyjudge.distill import load_model
from tinyjudge.hints._effect import FEEDBACK, REPROMPT


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "sdpo_example", REPO / "examples" / "sdpo_with_hints.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data() -> Path:
    for root in (SHARED_DATA, DATA_SLICES):
        if (root / "who_and_when").is_dir() and (root / "tau_bench").is_dir():
            return root
    pytest.skip("who_and_when and tau_bench: neither ../shared/data nor the bundled slices")


def _rows_of(teacher: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose prompt's last user turn the teacher's prompt was built from (two
    trials of one tau-bench task can end on the same failed call)."""
    found = [r for r in rows if str(r["prompt"][-1]["content"])[-60:] in teacher]
    assert found, teacher[-300:]
    return found


@pytest.mark.slow
def test_sdpo_trains_two_steps_on_the_hints_and_the_control_moves_them(tmp_path: Path) -> None:
    pytest.importorskip("trl.experimental.sdpo")
    ex = _example()
    data = _data()
    rm_dir = ex.reward_model(data, tmp_path / "rm")
    every = ex.hinted_rows(data)
    tau = [r for r in every if r["item_id"].startswith("tau_bench:")]
    # two steps after failed tool calls (tool turns in the prompt) and two people-blamed steps
    rows = ex.shortest(tau, 2) + ex.shortest([r for r in every if r not in tau], 2)
    assert len({r["item_id"] for r in rows}) == 4
    for r in rows[:2]:
        assert any(m.get("tool_calls") for m in r["prompt"])
        assert r["prompt"][-1]["content"].startswith("[tool result of ")

    result = ex.train(rows, rm_dir, tmp_path / "run", steps=2)
    logs = [h for h in result["logs"] if "self_distillation/distillation_loss" in h]
    assert len(logs) == 2
    for log in logs:
        assert log["self_distillation/feedback_used_fraction"] == 1.0
        assert abs(log["self_distillation/distillation_loss"]) > 0.0
    # the rewards are the tinyjudge model's: P(pass) under task_success, for real rollouts
    # (4 rollouts a step: 2 prompts x 2 generations), and they are what TRL logged
    rewards = result["rewards"]
    assert len(rewards) == 8 and all(0.0 <= r <= 1.0 for r in rewards)
    for k, log in enumerate(logs):
        mean = sum(rewards[4 * k : 4 * k + 4]) / 4
        assert log["self_distillation/reward_mean"] == pytest.approx(mean, abs=1e-6)
    model = load_model(rm_dir)
    assert model.rubric.id == "task_success"
    # every teacher prompt holds its own row's hint, in TRL's feedback template
    assert len(result["teacher"]) == 8
    for teacher in result["teacher"]:
        assert any(r["privileged_context"] in teacher for r in _rows_of(teacher, rows))
        assert "feedback from your unsuccessful earlier attempt" in teacher

    moved_all = {(r["item_id"], r["step"]): r for r in ex.hinted_rows(data, control="shuffled")}
    control = [moved_all[(r["item_id"], r["step"])] for r in rows]
    own = {r["item_id"]: r["privileged_context"] for r in rows}
    assert all(r["privileged_context"] != own[r["item_id"]] for r in control)
    moved = ex.train(control, rm_dir, tmp_path / "control", steps=2)
    assert len(moved["teacher"]) == 8
    for teacher in moved["teacher"]:
        assert any(
            r["privileged_context"] in teacher and own[r["item_id"]] not in teacher
            for r in _rows_of(teacher, control)
        )


def test_the_teacher_prompt_is_trls() -> None:
    """hint_effect's teacher prompt is SDPOTrainer's: same templates, same last-turn rewrite."""
    sdpo = pytest.importorskip("trl.experimental.sdpo")
    from tinyjudge.hints._effect import teacher_prompt

    cfg = sdpo.SDPOConfig(output_dir="unused", report_to="none", use_cpu=True)
    assert (cfg.reprompt_template, cfg.feedback_template) == (REPROMPT, FEEDBACK)
    prompt = [{"role": "system", "content": "s"}, {"role": "user", "content": "book it"}]
    got = teacher_prompt(prompt, "ask first")
    text = REPROMPT.format(
        prompt="book it", solution="", feedback=FEEDBACK.format(feedback_raw="ask first")
    )
    assert got == [prompt[0], {"role": "user", "content": text}]
