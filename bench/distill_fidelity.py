"""Fidelity of each distilled tier to its teacher on XSTest (5-fold CV grouped by prompt).

Trains on ``judge:gpt-4`` labels only and reports, on out-of-fold predictions,
accuracy and Cohen's kappa with GPT-4, and with ``human:final`` beside GPT-4's
own kappa with ``human:final`` on the same rows. Results merge into
``bench/results/distill_fidelity.json`` (one entry per tier and setting).

    nice -n 10 .venv/bin/python bench/distill_fidelity.py --tier linear
    nice -n 10 .venv/bin/python bench/distill_fidelity.py --tier encoder --param max_length=256
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, cohen_kappa_score
from sklearn.model_selection import GroupKFold

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import TIERS, group_keys, make_model, training_set

RESULTS = Path(__file__).parent / "results" / "distill_fidelity.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).parents[2] / "shared/data/xstest"))
    ap.add_argument("--tier", default="linear")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--only-folds", type=int, default=None, help="run the first N folds only")
    ap.add_argument("--fold", type=int, default=None, help="run this one fold only (0-based)")
    ap.add_argument("--param", action="append", default=[], help="tier option KEY=VALUE")
    ap.add_argument("--tag", default="", help="suffix for this run's key in the JSON")
    ap.add_argument("--save-model", help="save fold 0's model here (for distill_speed.py)")
    ap.add_argument("--smoke", action="store_true", help="fold 0 only (the smoke test)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.smoke:
        args.fold = 0
    params = TIERS[args.tier].config_class.from_pairs(args.param)  # typed as the fields are
    logging.basicConfig(format="%(asctime)s %(message)s")
    logging.getLogger("tinyjudge.distill").setLevel(logging.INFO)

    data = run_import("xstest", Path(args.data))
    ts = training_set(data.items, data.labels, "judge:gpt-4", "compliance")
    human = {
        lab.item_id: lab.label
        for lab in data.labels
        if lab.source == "human:final" and lab.status == "ok"
    }
    groups = group_keys(ts.items, "metadata.prompt_id")
    y = np.array(ts.y_hard)
    pred = np.full(len(y), "", dtype=object)
    fold_kappas, fit_s = [], []
    splits = list(GroupKFold(n_splits=args.folds).split(y, groups=groups))
    chosen = [args.fold] if args.fold is not None else range(args.only_folds or args.folds)
    for f in chosen:
        tr, te = splits[f]
        model = make_model(args.tier, "compliance", **params)
        t0 = time.perf_counter()
        model.fit([ts.items[i] for i in tr], y[tr].tolist())
        fit_s.append(time.perf_counter() - t0)
        pred[te] = model.predict([ts.items[i] for i in te])
        if f == 0 and args.save_model:
            model.card_.update({"teacher_source": "judge:gpt-4", "note": "fold 0 of 5"})
            model.save(args.save_model)
        fold_kappas.append(float(cohen_kappa_score(y[te], pred[te].astype(str))))
        print(f"fold {f}: kappa {fold_kappas[-1]:.4f} (fit {fit_s[-1]:.1f}s)", flush=True)
        # Saved after every fold, so a long encoder run interrupted keeps what it finished.
        _save(args, params, ts, y, pred, human, fold_kappas, fit_s, chosen)


def _save(args, params, ts, y, pred, human, fold_kappas, fit_s, chosen) -> None:
    done = pred != ""
    rows = [i for i in np.flatnonzero(done) if ts.items[i].id in human]
    h = np.array([human[ts.items[i].id] for i in rows])
    p, t = pred[rows].astype(str), y[rows]
    result = {
        "tier": args.tier,
        "params": params,
        "folds_run": len(fold_kappas),
        "fold_indices": list(chosen)[: len(fold_kappas)],
        "folds": args.folds,
        "n_items": int(done.sum()),
        "n_unscored_teacher_left_out": ts.n_unscored,
        "vs_teacher": {
            "accuracy": float(accuracy_score(y[done], pred[done].astype(str))),
            "kappa": float(cohen_kappa_score(y[done], pred[done].astype(str))),
            "kappa_per_fold": fold_kappas,
        },
        "vs_human_final": {
            "n": len(rows),
            "student_kappa": float(cohen_kappa_score(h, p)),
            "student_accuracy": float(accuracy_score(h, p)),
            "teacher_kappa": float(cohen_kappa_score(h, t)),
            "teacher_accuracy": float(accuracy_score(h, t)),
        },
        "fit_seconds_mean": float(np.mean(fit_s)),
        "machine": f"{platform.processor() or platform.machine()}, torch threads default",
        "command": "nice -n 10 .venv/bin/python bench/distill_fidelity.py --tier "
        + args.tier
        + "".join(f" --param {q}" for q in args.param)
        + (f" --only-folds {args.only_folds}" if args.only_folds else "")
        + (f" --fold {args.fold}" if args.fold is not None else ""),
    }
    print(json.dumps(result["vs_teacher"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    saved[args.tier + (f":{args.tag}" if args.tag else "")] = result
    args.out.write_text(json.dumps(saved, indent=2) + "\n")


if __name__ == "__main__":
    main()
