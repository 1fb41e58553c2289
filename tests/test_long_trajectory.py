"""A 300-turn trajectory made of real tau-bench turns, through judge, distill scoring and audit.

The judge talks to a real OpenAI-compatible HTTP server on 127.0.0.1 through
the real ``openai`` client. The checks are about length: every one of the 300
messages is either shown to the judge under its original step number or inside
a stated "omitted" range, and nothing is cut without saying so.
"""

from __future__ import annotations

import json
import re

import pytest

from tinyjudge.datasets.importers.tau_bench import import_tau_bench, tool_error_steps
from tinyjudge.judge import Judge
from tinyjudge.records import Item, Message, canonical_messages
from tinyjudge.rubric import load_rubric
from tinyjudge.testing import LocalServer, Reply, Request

N_TURNS = 300
_STEP = re.compile(r"^\[step (\d+)\] ", re.MULTILINE)
_OMITTED = re.compile(r"\[\.\.\. (\d+) messages? omitted \(steps (\d+)-(\d+)\) \.\.\.\]")


def synthetic_trajectory(runs: list[Item], n: int = N_TURNS) -> Item:
    """The first ``n`` messages of real runs laid end to end (one system prompt).

    Tool-call ids get the run's index as a prefix so that every result still
    answers exactly one call.
    """
    messages: list[Message] = [runs[0].messages[0]]
    for k, run in enumerate(runs):
        for m in run.messages:
            if m.role == "system":
                continue
            if m.tool_calls:
                calls = [c.model_copy(update={"id": f"r{k}-{c.id}"}) for c in m.tool_calls]
                m = m.model_copy(update={"tool_calls": calls})
            if m.role == "tool":
                m = m.model_copy(update={"tool_call_id": f"r{k}-{m.tool_call_id}"})
            messages.append(m)
        if len(messages) >= n:
            break
    if len(messages) < n:
        raise ValueError(f"only {len(messages)} messages in {len(runs)} runs")
    return Item(id=f"synthetic:tau_bench:{n}", messages=messages[:n], metadata={"synthetic": True})


@pytest.fixture
def long_item(data_dir) -> Item:
    return synthetic_trajectory(import_tau_bench(data_dir("tau_bench")).items)


def _accounted(prompt: str, item: Item) -> tuple[list[int], int]:
    """Steps shown and messages stated as omitted; checks each shown block is whole or says so."""
    body = prompt.split("<<<TRAJECTORY", 1)[1]
    heads = list(_STEP.finditer(body))
    shown = [int(h.group(1)) for h in heads]
    for h, nxt in zip(heads, [*heads[1:], None], strict=True):
        block = body[h.end() : nxt.start() if nxt else len(body)]
        msg = item.messages[int(h.group(1))]
        assert msg.text in block or "characters omitted ...]" in block, h.group(0)
    omitted = 0
    for m in _OMITTED.finditer(body):
        n, first, last = (int(g) for g in m.groups())
        assert n == last - first + 1
        assert not any(first <= s <= last for s in shown)
        omitted += n
    return shown, omitted


def _judge(rubric: str, item: Item, reply: dict, probs: dict[str, float] | None = None):
    prompts: list[str] = []

    def respond(req: Request) -> Reply:
        prompts.append(req.body["messages"][1]["content"])
        return Reply(json.dumps(reply), probs=probs)

    with LocalServer(respond) as url:
        judge = Judge(rubric, model="local-test", base_url=url, max_retries=0)
        (label,) = judge.run([item])
    return label, prompts, judge.summary


def test_synthetic_trajectory_is_300_real_turns(long_item: Item) -> None:
    assert len(long_item.messages) == N_TURNS
    assert [m.role for m in long_item.messages].count("system") == 1
    # tau-bench reuses call ids within a run, so each result must answer an open call
    open_calls: set[str] = set()
    for m in long_item.messages:
        open_calls |= {c.id for c in m.tool_calls or []}
        if m.role == "tool":
            assert m.tool_call_id in open_calls
            open_calls.discard(m.tool_call_id)
    assert len(tool_error_steps(long_item.messages)) >= 2


def test_tool_error_recovery_window_shows_every_failure_with_its_step(long_item: Item) -> None:
    errors = tool_error_steps(long_item.messages)
    probs = {"recovers": 0.6, "repeats": 0.2, "gives_up": 0.1, "hides_failure": 0.1}
    label, prompts, summary = _judge(
        "tool_error_recovery",
        long_item,
        {
            "rationale": "recomputed the fare",
            "label": "recovers",
            "hint": {"step": errors[0], "text": "Recompute the total from the error."},
        },
        probs,
    )
    assert (label.status, label.label) == ("ok", "recovers"), label.reason
    assert label.probs == pytest.approx(probs, abs=0.02)
    assert label.hint is not None and label.hint.step == errors[0]
    (prompt,) = prompts
    shown, omitted = _accounted(prompt, long_item)
    assert set(errors) <= set(shown)  # every failed call is in the window
    assert len(shown) + omitted == N_TURNS  # the rest is stated as omitted, not dropped
    assert omitted > 0
    assert summary.tokens_in > 0 and label.usage and label.usage["prompt_tokens"] > 0


def test_task_success_over_budget_drops_stated_ranges_only(long_item: Item) -> None:
    label, prompts, _ = _judge(
        "task_success", long_item, {"rationale": "booked as asked", "label": "pass"}
    )
    assert (label.status, label.label) == ("ok", "pass"), label.reason
    (prompt,) = prompts
    shown, omitted = _accounted(prompt, long_item)
    assert len(shown) + omitted == N_TURNS
    assert omitted > 0  # 300 turns are over the rubric's 16000-token budget
    assert shown[-1] == N_TURNS - 1  # the end of the run is always shown


@pytest.mark.parametrize(
    ("step", "ok"),
    [(N_TURNS - 1, True), (N_TURNS, False)],
    ids=["last-step", "past-the-end"],
)
def test_failure_step_on_300_turns_range_checks_the_step(
    long_item: Item, step: int, ok: bool
) -> None:
    label, _, summary = _judge(
        "failure_step",
        long_item,
        {
            "rationale": "ended without confirming",
            "label": "assistant",
            "step": step,
            "hint": {"step": step, "text": "Confirm before ending."},
        },
    )
    if ok:
        assert (label.status, label.label, label.step) == ("ok", "assistant", step)
    else:
        assert label.status == "unscored" and label.label is None
        assert f"step {N_TURNS} is out of range 0..{N_TURNS - 1}" in (label.reason or "")
        assert summary.unscored == 1


def test_long_trajectory_through_distill_scoring_and_audit(data_dir, long_item: Item) -> None:
    from sklearn.metrics import cohen_kappa_score

    from tinyjudge.audit.agreement import cohen_kappa, pair_labels
    from tinyjudge.distill import distill, item_views

    tau = import_tau_bench(data_dir("tau_bench"))  # the bundled slice has 11 runs
    rule = {lab.item_id: lab.label for lab in tau.labels}
    result = distill(
        tau.items, tau.labels, "rule:reward", "task_success", group_by="metadata.task_id",
        name="tau-linear",
    )  # fmt: skip
    real = tau.items[:20]
    scored = [long_item, *real]
    rm_labels = result.model.score_items(scored)
    assert [lab.item_id for lab in rm_labels] == [it.id for it in scored]
    assert all(
        lab.status == "ok" and sum(lab.probs.values()) == pytest.approx(1) for lab in rm_labels
    )
    # the linear tier reads the whole transcript: every message's text, as every reward
    # path reads it (canonical_messages: one normalisation, issue 31), is in its view
    view = item_views(long_item)[0]
    text = view.context + "\n" + view.response
    read = canonical_messages(long_item.messages)
    assert len(read) == len(long_item.messages) and all(m.text in text for m in read)

    def respond(req: Request) -> Reply:
        verdict = rule.get(req.item_id or "", "fail")
        return Reply(json.dumps({"rationale": "checked the final state", "label": verdict}))

    with LocalServer(respond, items=scored, rubric=load_rubric("task_success")) as url:
        judge_labels = Judge("task_success", model="local-test", base_url=url).run(scored)
    assert [lab.status for lab in judge_labels] == ["ok"] * len(scored)
    paired = pair_labels([*judge_labels, *rm_labels], "judge:local-test", "rm:tau-linear")
    assert paired.n == len(scored) and paired.join.n_unscored == 0
    assert cohen_kappa(paired.a, paired.b) == pytest.approx(cohen_kappa_score(paired.a, paired.b))
    # the judge answered as the rule did on the real runs; the synthetic one has no rule label
    vs_rule = pair_labels([*judge_labels, *tau.labels], "judge:local-test", "rule:reward")
    assert (vs_rule.n, vs_rule.join.only_a) == (len(real), 1) and len(real) >= 11
    assert cohen_kappa(vs_rule.a, vs_rule.b) == pytest.approx(1.0)
