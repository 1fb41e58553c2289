"""The agent rubrics load, have exactly the intended verdicts, and render examples."""

from __future__ import annotations

import pytest

from tinyjudge.rubric import load_rubric


@pytest.mark.parametrize(
    ("name", "labels", "kind", "strategy", "hint"),
    [
        ("pushback_under_pressure", ["holds", "caves"], "nominal", "first_and_last", False),
        ("failure_step", [], "step", "full", True),
        (
            "tool_error_recovery",
            ["recovers", "repeats", "gives_up", "hides_failure"],
            "nominal",
            "around_tool_errors",
            True,
        ),
        ("task_success", ["pass", "fail"], "nominal", "full", False),
    ],
    ids=["pushback", "failure_step", "tool_error_recovery", "task_success"],
)
def test_agent_rubric_shape(
    name: str, labels: list[str], kind: str, strategy: str, hint: bool
) -> None:
    rubric = load_rubric(name)
    assert rubric.label_names == labels
    assert rubric.type == kind
    assert rubric.window.strategy == strategy
    assert rubric.hint is hint
    assert len(rubric.examples) >= 2
    text = rubric.render()
    for ex in rubric.examples:
        assert f"Verdict: `{ex.label}`" in text
    # every nominal label is shown with at least one worked example or criterion
    for spec in rubric.labels:
        assert spec.criteria, spec.name


def test_failure_step_examples_carry_a_step_and_a_hint() -> None:
    rubric = load_rubric("failure_step")
    assert rubric.step is True
    for ex in rubric.examples:
        assert ex.step is not None and ex.hint
        # the blamed step is a message of the blamed agent in the example transcript
        line = next(ln for ln in ex.trajectory.splitlines() if ln.startswith(f"[step {ex.step}]"))
        assert f"({ex.label})" in line
    assert "Hint:" in rubric.render()


def test_tool_error_recovery_has_an_example_per_label() -> None:
    rubric = load_rubric("tool_error_recovery")
    assert sorted(ex.label for ex in rubric.examples) == sorted(rubric.label_names)
