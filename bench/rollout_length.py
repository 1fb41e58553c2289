"""Scoring cost against a rollout's length: 100, 1,000 and 10,000 turns, every combine.

A reward model fitted on SYCON-Bench dialogues (linear tier, GPT-4o's labels) scores
one synthetic rollout of N turns (SYCON's own user and assistant turns, repeated) under
each view with ``combine: worst_answer`` (every answer scored, the worst kept) and
``last``. The cost should grow linearly with N: each answer's view is built once and
its context is bounded (``tinyjudge.distill._text.CONTEXT_CHARS``). Before issue 33,
``worst_answer`` re-rendered each answer's whole prefix (400 turns 0.7 s, 1,600 turns
18-20 s). Prints a table and writes ``bench/results/rollout_length.json``.

    nice -n 10 .venv/bin/python bench/rollout_length.py
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from tinyjudge.datasets.importers.sycon import import_sycon
from tinyjudge.distill import LinearRM, training_set
from tinyjudge.records import Item, Message
from tinyjudge.rubric import Rubric, load_rubric

RESULTS = Path(__file__).parent / "results"
TURNS = (100, 1_000, 10_000)
CASES = (
    ("answer", "worst_answer"),  # pushback_under_pressure as shipped
    ("window", "worst_answer"),
    ("first_user_first_last_answer", "worst_answer"),
    ("window", "last"),
)


def _rubric(view: str, combine: str) -> Rubric:
    base = load_rubric("pushback_under_pressure")
    spec = base.reward_model.model_copy(update={"view": view, "combine": combine})
    return base.model_copy(update={"reward_model": spec})


def _rollout(items: list[Item], turns: int) -> Item:
    """``turns`` messages, user and assistant in turn, taken from SYCON's dialogues.

    Each carries its turn number, so no two answers' views are equal (equal views are
    scored once, which would hide the cost).
    """
    users = [m.text for it in items for m in it.messages if m.role == "user"]
    answers = [m.text for it in items for m in it.messages if m.role == "assistant"]
    msgs = [
        Message(role="user", content=f"{users[i // 2 % len(users)]} (turn {i})")
        if i % 2 == 0
        else Message(role="assistant", content=f"{answers[i // 2 % len(answers)]} (turn {i})")
        for i in range(turns)
    ]
    return items[-1].model_copy(update={"id": f"rollout-{turns}", "messages": msgs})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=RESULTS / "rollout_length.json")
    ap.add_argument("--smoke", action="store_true", help="10 and 100 turns only")
    ap.add_argument("--repeats", type=int, default=3, help="timings per row (the least kept)")
    ap.add_argument("--turns", type=int, nargs="*", help="rollout lengths (default 100 1000 10000)")
    args = ap.parse_args()

    imported = import_sycon(args.data / "sycon")
    keep = [it for it in imported.items if it.metadata["question_id"] <= 10]
    turns = args.turns or ((10, 100) if args.smoke else TURNS)
    rows = []
    print(f"{'view':<30}{'combine':<14}{'turns':>8}{'chars':>12}{'seconds':>10}{'us/turn':>10}")
    for view, combine in CASES:
        rubric = _rubric(view, combine)
        data = training_set(keep, imported.labels, "judge:gpt-4o", rubric)
        model = LinearRM(rubric).fit(data.items, data.y_hard)
        for n in turns:
            item = _rollout(keep, n)
            times = []
            for _ in range(max(1, args.repeats if n < 10_000 else 1)):
                t0 = time.perf_counter()
                model.predict_proba([item])
                times.append(time.perf_counter() - t0)
            chars = sum(len(m.text) for m in item.messages)
            row = {
                "view": view,
                "combine": combine,
                "turns": n,
                "chars": chars,
                "seconds": round(min(times), 4),
                "us_per_turn": round(min(times) / n * 1e6, 1),
            }
            rows.append(row)
            print(
                f"{view:<30}{combine:<14}{n:>8}{chars:>12}{row['seconds']:>10.3f}"
                f"{row['us_per_turn']:>10.1f}"
            )
    result = {
        "rows": rows,
        "tier": "linear",
        "trained_on": "SYCON-Bench questions 1-10 (200 turns), judge:gpt-4o",
        "machine": {"python": platform.python_version(), "cpu": platform.processor()},
        "smoke": args.smoke,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
