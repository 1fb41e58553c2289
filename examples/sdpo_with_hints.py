"""The loop in one place: a judge's hints at failing steps as the privileged context of TRL's
``SDPOTrainer``, with a tinyjudge reward model as its reward function.

    python examples/sdpo_with_hints.py --data ../shared/data --out runs/sdpo [--control shuffled]

1. Hinted steps from real trajectories: Who&When's people-written mistake reasons at the
   step they blame (``hint_from="rationale"``), and tau-bench's failed tool calls with a
   rule's hint (``tool_error_hints``; a judge's ``tool_error_recovery`` hints take its place
   when you have run one: ``tinyjudge judge ... --rubric tool_error_recovery``).
2. ``hint_rows``: one row per hinted step (``prompt`` ending on a user turn, the hint as
   ``privileged_context``, the given answer as ``completion``); ``control="shuffled"``
   for the control run, where each row carries another item's hint.
3. A reward model distilled by tinyjudge (here the linear tier on tau-bench's task-success
   rule labels) scores every rollout: ``reward_func(model_dir)``.
4. ``SDPOTrainer`` with ``include_environment_feedback=True``: the teacher is the policy
   given the hint; its per-token log-probabilities on the rollouts are distilled.

The policy here is a tiny Qwen2 built from a config with a tokenizer trained on the rows'
text (no decoder weights are packaged, and the Hub is not reached), so the run shows the
plumbing on CPU in seconds, not what SDPO does to a real model. Put a real policy's path in
``--policy`` to train one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _texts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for row in rows:
        for m in [*row["prompt"], *row["completion"]]:
            out.append(str(m.get("content") or ""))
        out.append(str(row["privileged_context"]))
    return out


def tiny_policy(rows: list[dict[str, Any]], out_dir: Path, vocab_size: int = 800) -> Path:
    """A 2-layer, 32-wide Qwen2 (random weights) with a byte-level BPE trained on the rows.

    Args:
        rows: rows of ``hint_rows``; their text trains the tokenizer.
        out_dir: where the model and tokenizer are saved (``from_pretrained`` reads it).
        vocab_size: the tokenizer's vocabulary.
    """
    from tinyjudge.testing import tiny_decoder

    return tiny_decoder(
        _texts(rows), out_dir, vocab_size=vocab_size, max_positions=32768, tie_embeddings=True
    )


def hinted_rows(data: Path, control: str = "none") -> list[dict[str, Any]]:
    """Rows from Who&When's mistake reasons and tau-bench's failed tool calls."""
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.hints import hint_rows, shuffle_hints, tool_error_hints

    ww = run_import("who_and_when", data / "who_and_when")
    tb = run_import("tau_bench", data / "tau_bench")
    people = hint_rows(ww.items, ww.labels, hint_from="rationale")
    rule = hint_rows(tb.items, tool_error_hints(tb.items))
    rows = people.rows + rule.rows
    # one permutation across both sets: each row gets another item's hint
    return shuffle_hints(rows, seed=0) if control == "shuffled" else rows


def reward_model(data: Path, out_dir: Path) -> Path:
    """A linear reward model of task success distilled from tau-bench's rule labels."""
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.distill import LinearRM

    tb = run_import("tau_bench", data / "tau_bench")
    verdict = {lab.item_id: lab.label for lab in tb.labels if lab.status == "ok"}
    items = [it for it in tb.items if verdict.get(it.id)]
    LinearRM("task_success").fit(items, [verdict[it.id] for it in items]).save(out_dir)
    return out_dir


def shortest(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The ``n`` rows with the shortest prompts (a CPU run keeps its contexts small)."""
    size = lambda r: sum(len(str(m.get("content") or "")) for m in r["prompt"])  # noqa: E731
    return sorted(rows, key=size)[:n]


def train(
    rows: list[dict[str, Any]],
    rm_dir: Path,
    out_dir: Path,
    policy: str | None = None,
    steps: int = 2,
) -> dict[str, Any]:
    """Run ``SDPOTrainer`` for ``steps`` steps on the rows; return its logs and the rewards seen."""
    from datasets import Dataset
    from trl.experimental.sdpo import SDPOConfig, SDPOTrainer

    from tinyjudge.integrations.trl import reward_func

    policy = policy or str(tiny_policy(rows, out_dir / "policy"))
    ours = reward_func(rm_dir)
    seen: list[float] = []

    def reward(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
        got = ours(prompts=prompts, completions=completions, **kwargs)
        seen.extend(got)
        return got

    args = SDPOConfig(
        output_dir=str(out_dir / "sdpo"), max_steps=steps, per_device_train_batch_size=4,
        num_generations=2, max_completion_length=8, max_prompt_length=256,
        max_reprompt_len=512, include_environment_feedback=True,
        use_successful_as_teacher=False, logging_steps=1, report_to="none", use_cpu=True,
        save_strategy="no", bf16=False, dataloader_num_workers=0, seed=0,
    )  # fmt: skip
    keep = ("prompt", "privileged_context", "completion", "item_id", "step")
    data = Dataset.from_list([{k: r[k] for k in keep} for r in rows])
    trainer = SDPOTrainer(model=policy, reward_funcs=[reward], args=args, train_dataset=data)
    teacher: list[str] = []  # what the teacher was shown, decoded (the hint is in it)
    build = trainer.teacher_context_builder.build

    def recorded(*a: Any, **k: Any) -> Any:
        got = build(*a, **k)
        for ids, mask in zip(got["teacher_input_ids"], got["teacher_attention_mask"], strict=True):
            teacher.append(trainer.processing_class.decode(ids[mask.bool()]))
        return got

    trainer.teacher_context_builder.build = recorded  # type: ignore[method-assign]
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h or "reward" in h]
    return {"logs": logs, "rewards": seen, "teacher": teacher}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("runs/sdpo"))
    parser.add_argument("--control", choices=["none", "shuffled"], default="none")
    parser.add_argument("--policy", default=None, help="a causal LM's path (default: tiny)")
    parser.add_argument("--rows", type=int, default=8, help="train on this many rows")
    parser.add_argument("--steps", type=int, default=2)
    a = parser.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    rows = shortest(hinted_rows(a.data, a.control), a.rows)
    result = train(rows, reward_model(a.data, a.out / "rm"), a.out, a.policy, a.steps)
    for log in result["logs"]:
        print(json.dumps({k: v for k, v in log.items() if "distillation" in k or "feedback" in k}))
    return result


if __name__ == "__main__":
    main()
