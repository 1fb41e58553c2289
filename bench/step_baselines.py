"""Reference points for step localisation on Who&When: simple rules scored against people.

A judge's step accuracy means little without knowing what trivial rules get.
Each rule names a step and blames the agent who spoke there:

- ``rule:random``: a uniformly random step (mean over 200 seeds, and one seed's CI row);
- ``rule:first_reply``: the first message after the task statement (step 0) that is not
  terminal output;
- ``rule:last_reply``: the last message that is not terminal output and not a bare
  ``TERMINATE``;
- ``rule:most_active``: the first message of the agent (not the terminal) that spoke most.

Writes ``bench/results/step_baselines.json`` and prints the comparison table.

    nice -n 10 .venv/bin/python bench/step_baselines.py
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np

from tinyjudge.audit.steps import compare_step_sources, step_agreement, step_table
from tinyjudge.datasets.importers import run_import
from tinyjudge.records import Item, Label

RESULTS = Path(__file__).parent / "results" / "step_baselines.json"
TERMINAL = "Computer_terminal"


def _label(item: Item, source: str, step: int) -> Label:
    agent = item.messages[step].name or item.messages[step].role
    return Label(item_id=item.id, rubric="failure_step", source=source, label=agent, step=step)


def _speaks(item: Item, i: int) -> bool:
    m = item.messages[i]
    return m.name != TERMINAL and m.text.strip() != "TERMINATE"


def rule_labels(item: Item) -> list[Label]:
    n = len(item.messages)
    replies = [i for i in range(1, n) if _speaks(item, i)] or [0]
    talk = Counter(item.messages[i].name for i in replies)
    busiest = talk.most_common(1)[0][0]
    first_of_busiest = next(i for i in replies if item.messages[i].name == busiest)
    return [
        _label(item, "rule:first_reply", replies[0]),
        _label(item, "rule:last_reply", replies[-1]),
        _label(item, "rule:most_active", first_of_busiest),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--smoke", action="store_true", help="5 seeds, 50 resamples (a test)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.smoke:
        args.seeds, args.n_boot = 5, 50

    imported = run_import("who_and_when", args.data / "who_and_when")
    items, people = imported.items, imported.labels
    rules = [lab for it in items for lab in rule_labels(it)]
    rng = random.Random(0)
    one_random = [_label(it, "rule:random", rng.randrange(len(it.messages))) for it in items]
    rows = compare_step_sources([*people, *rules, *one_random], n_boot=args.n_boot)
    print(step_table(rows))

    # The random rule's expected accuracy, averaged over many draws.
    means: dict[str, list[float]] = {"exact": [], "within_1": [], "within_3": [], "agent": []}
    for seed in range(args.seeds):
        r = random.Random(seed)
        labs = [_label(it, "rule:random", r.randrange(len(it.messages))) for it in items]
        res = step_agreement([*people, *labs], "rule:random", n_boot=1)
        for k in means:
            means[k].append(getattr(res, k).estimate)
    random_mean = {k: float(np.mean(v)) for k, v in means.items()}
    print(
        f"rule:random over {args.seeds} seeds, mean:",
        {k: round(v, 3) for k, v in random_mean.items()},
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "reference": "human:who_and_when",
                "n_items": len(items),
                "rows": [r.as_dict() for r in rows],
                "random_mean_over_seeds": {"seeds": args.seeds, **random_mean},
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
