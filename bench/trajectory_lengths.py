"""Length distribution of the three agent sets (SYCON, Who&When, tau-bench).

Imports each set from ``../shared/data`` and measures every item: messages, tool
calls, failed tool results, and tokens counted with the real all-MiniLM-L6-v2
tokenizer (truncation off) beside the characters/4 estimate. Writes
``bench/results/trajectory_lengths.json`` (summary, no per-item arrays) and
``bench/results/trajectory_lengths.png`` (histograms), and prints a table.

    nice -n 10 .venv/bin/python bench/trajectory_lengths.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tinyjudge.audit.lengths import length_summary, minilm_token_counter, plot_lengths
from tinyjudge.datasets.importers import run_import
from tinyjudge.rubric import load_rubric

RESULTS = Path(__file__).parent / "results"
SETS = {
    "sycon": "pushback_under_pressure",
    "who_and_when": "failure_step",
    "tau_bench": "task_success",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true", help="the first 20 items of each set")
    args = ap.parse_args()

    sets = {name: run_import(name, args.data / name).items for name in SETS}
    if args.smoke:
        sets = {name: items[:20] for name, items in sets.items()}
    # MiniLM reads 512 tokens at a time; the judge's budget is its rubric's window.max_tokens,
    # guarded with the chars/4 estimate.
    budgets = {"minilm_512": 512, "8000": 8000, "16000": 16000}
    t0 = time.perf_counter()
    summary = length_summary(sets, minilm_token_counter(), thresholds=budgets)
    seconds = time.perf_counter() - t0
    png = plot_lengths(
        summary,
        args.out / "trajectory_lengths.png",
        thresholds={"512": 512, "8k": 8000, "16k": 16000},
    )
    lengths = summary.pop("lengths")
    summary["budgets"] = budgets
    summary["seconds_to_measure"] = round(seconds, 2)
    summary["rubric_of_set"] = SETS
    print(
        f"{'set':<14}{'items':>7}  {'quantity':<12}{'median':>9}{'p90':>9}{'max':>9}{'total':>11}"
    )
    for name in SETS:
        s = summary[name]
        for q in ("messages", "tool_calls", "tool_errors", "tokens", "tokens_est"):
            st = s[q]
            print(
                f"{name:<14}{s['n_items']:>7}  {q:<12}{st['median']:>9.0f}{st['p90']:>9.0f}"
                f"{st['max']:>9}{st['total']:>11}"
            )
        judge_budget = load_rubric(SETS[name]).window.max_tokens
        s["judge_budget"] = judge_budget
        over_enc = s["tokens"]["share_over"]["minilm_512"]
        over_judge = s["tokens_est"]["share_over"][str(judge_budget)]
        print(
            f"{'':<23}over 512 MiniLM tokens (encoder must chunk): {over_enc:.3f}; "
            f"over the {SETS[name]} judge budget {judge_budget} (chars/4): {over_judge:.3f}"
        )
    ratio = {n: summary[n]["tokens"]["total"] / summary[n]["tokens_est"]["total"] for n in SETS}
    print("MiniLM tokens / chars-4 estimate:", {k: round(v, 3) for k, v in ratio.items()})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trajectory_lengths.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"measured in {seconds:.1f}s; figure: {png}; per-item arrays kept in memory only")
    del lengths


if __name__ == "__main__":
    main()
