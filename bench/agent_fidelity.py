"""Multi-turn distillation on SYCON: leave one answering model out, per-turn labels.

Trains a reward-model tier on GPT-4o's per-turn ``holds``/``caves`` labels of
three answering models' dialogues and tests on the fourth, for each of the four
models. Reports per fold accuracy and Cohen's kappa with GPT-4o on every turn,
and the per-dialogue turn of flip (turns held before the first ``caves``) of the
student beside the teacher's. The bar in the issue is a mean kappa of 0.75 for
the best tier. Results merge into ``bench/results/agent_fidelity.json`` (one
entry per tier and options).

    nice -n 10 .venv/bin/python bench/agent_fidelity.py --tier linear
    nice -n 10 .venv/bin/python bench/agent_fidelity.py --tier probe --param batch_size=32
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, cohen_kappa_score

from tinyjudge.audit.flips import compare_flips, dialogue_flips
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import make_model, parse_params, training_set

RESULTS = Path(__file__).parent / "results" / "agent_fidelity.json"
TEACHER = "judge:gpt-4o"
RUBRIC = "pushback_under_pressure"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="linear")
    ap.add_argument("--param", action="append", default=[], help="tier option KEY=VALUE")
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    params = parse_params(args.param)

    imported = run_import("sycon", args.data / "sycon")
    ts = training_set(imported.items, imported.labels, TEACHER, RUBRIC)
    models = sorted({it.metadata["answering_model"] for it in ts.items})
    folds = []
    start = time.perf_counter()
    for held_out in models:
        train = [i for i, it in enumerate(ts.items) if it.metadata["answering_model"] != held_out]
        test = [i for i, it in enumerate(ts.items) if it.metadata["answering_model"] == held_out]
        t0 = time.perf_counter()
        model = make_model(args.tier, RUBRIC, **params)
        model.fit([ts.items[i] for i in train], ts.y_soft[train])
        fit_s = time.perf_counter() - t0
        test_items = [ts.items[i] for i in test]
        student = model.score_items(test_items)
        pred = [lab.label for lab in student]
        truth = [ts.y_hard[i] for i in test]
        teacher_flips = dialogue_flips(test_items, imported.labels, TEACHER)
        student_flips = dialogue_flips(test_items, student, student[0].source)
        flips = compare_flips(teacher_flips, student_flips)
        fold = {
            "held_out": held_out,
            "n_train": len(train),
            "n_test": len(test),
            "accuracy": float(accuracy_score(truth, pred)),
            "cohen_kappa": float(cohen_kappa_score(truth, pred)),
            "teacher_caves_rate": float(np.mean([t == "caves" for t in truth])),
            "student_caves_rate": float(np.mean([p == "caves" for p in pred])),
            "turn_of_flip": flips.as_dict(),
            "fit_seconds": round(fit_s, 1),
        }
        folds.append(fold)
        # A slow tier may not finish all folds; what is done is kept, marked partial.
        _save(
            args.out,
            args.tier,
            params,
            {"tier": args.tier, "params": params, "complete": False, "folds": folds},
        )
        print(
            f"{args.tier:<8} held out {held_out:<24} acc {fold['accuracy']:.3f}  "
            f"kappa {fold['cohen_kappa']:.3f}  flip exact {flips.exact:.3f}  "
            f"|diff| {flips.mean_abs_diff:.2f} turns (teacher {flips.mean_a:.2f}, "
            f"student {flips.mean_b:.2f})  fit {fit_s:.0f}s",
            flush=True,
        )
    entry = {
        "tier": args.tier,
        "params": params,
        "teacher": TEACHER,
        "setting": "leave one answering model out, per-turn labels, 4 folds",
        "mean_kappa": float(np.mean([f["cohen_kappa"] for f in folds])),
        "mean_accuracy": float(np.mean([f["accuracy"] for f in folds])),
        "mean_flip_exact": float(np.mean([f["turn_of_flip"]["exact"] for f in folds])),
        "mean_flip_abs_diff": float(np.mean([f["turn_of_flip"]["mean_abs_diff"] for f in folds])),
        "bar_kappa": 0.75,
        "complete": True,
        "folds": folds,
        "seconds": round(time.perf_counter() - start, 1),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(
        f"{args.tier}: mean kappa {entry['mean_kappa']:.3f} (bar 0.75), mean accuracy "
        f"{entry['mean_accuracy']:.3f}, turn of flip exact {entry['mean_flip_exact']:.3f}, "
        f"|diff| {entry['mean_flip_abs_diff']:.2f} turns, {entry['seconds']:.0f}s"
    )
    _save(args.out, args.tier, params, entry)


def _save(out: Path, tier: str, params: dict, entry: dict) -> None:
    results = json.loads(out.read_text()) if out.exists() else {}
    results[tier + "".join(f" {k}={v}" for k, v in sorted(params.items()))] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
