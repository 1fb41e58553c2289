"""Multi-turn distillation on SYCON: leave one answering model out, per-turn labels.

Trains a reward-model tier on GPT-4o's per-turn ``holds``/``caves`` labels of
three answering models' dialogues and tests on the fourth (``--held-out`` picks
the folds; all four by default). Reports per fold accuracy and Cohen's kappa
with GPT-4o on every turn, the per-dialogue turn of flip (turns held before the
first ``caves``) of the student beside the teacher's, training minutes and
scoring items/s. What the model reads is the rubric's ``reward_model``
(``--view``, ``--combine`` and ``--references`` override it); ``--tier baseline``
is the plain scikit-learn baseline of bench/linear_baseline.py on the same view.
The bar in the issue is a kappa of 0.75. Results merge into
``bench/results/agent_fidelity.json`` (one entry per tier, view, references,
combine and options, saved after every fold); ``--table`` prints them all as the
markdown table of docs/agent_trajectories.md.

    nice -n 10 .venv/bin/python bench/agent_fidelity.py --tier linear --view window
    nice -n 10 .venv/bin/python bench/agent_fidelity.py --tier encoder \\
        --held-out deepseek-v3 --param epochs=2
    .venv/bin/python bench/agent_fidelity.py --table
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import platform
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, cohen_kappa_score

from tinyjudge.audit.flips import compare_flips, dialogue_flips
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import TIERS, make_model, training_set
from tinyjudge.records import Label
from tinyjudge.rubric import VIEWS, Rubric, load_rubric

RESULTS = Path(__file__).parent / "results" / "agent_fidelity.json"
TEACHER = "judge:gpt-4o"
RUBRIC = "pushback_under_pressure"
MODELS = ("Llama-3.3-70B-Instruct", "Qwen2.5-72B-Instruct", "claude", "deepseek-v3")
# What "training length" means per tier in the table.
LENGTH_KEYS = {"encoder": ("epochs", "max_length", "lr")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="linear", help="a tier, or 'baseline' (plain TF-IDF + LR)")
    ap.add_argument("--param", action="append", default=[], help="tier option KEY=VALUE")
    ap.add_argument("--view", choices=VIEWS, help="override the rubric's reward_model.view")
    ap.add_argument("--combine", choices=("last", "worst_answer"), help="override its combine")
    ap.add_argument(
        "--references",
        choices=("yes", "no"),
        help="override its reward_model.references (the false premise and the correction)",
    )
    ap.add_argument("--held-out", action="append", default=[], help="answering model(s) to test")
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--table", action="store_true", help="print the results table and exit")
    ap.add_argument("--smoke", action="store_true", help="one held-out model (the smoke test)")
    args = ap.parse_args()
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(message)s", force=True
    )  # training progress
    # typed as the tier's config declares its fields
    params = {} if args.tier == "baseline" else TIERS[args.tier].config_class.from_pairs(args.param)
    rubric = load_rubric(RUBRIC)
    override: dict[str, object] = {
        k: v for k, v in (("view", args.view), ("combine", args.combine)) if v
    }
    if args.references:
        override["references"] = args.references == "yes"
    spec = rubric.reward_model.model_copy(update=override)
    rubric = rubric.model_copy(update={"reward_model": spec})

    imported = run_import("sycon", args.data / "sycon")
    ts = training_set(imported.items, imported.labels, TEACHER, rubric)
    models = sorted({it.metadata["answering_model"] for it in ts.items})
    held_outs = args.held_out or (models[:1] if args.smoke else models)
    effective = {
        k: v
        for k, v in _make(args.tier, rubric, params).get_params().items()
        if k not in ("rubric", "name")
    }
    refs = " references" if spec.references else ""
    key = f"{args.tier} view={spec.view}{refs} combine={spec.combine}" + "".join(
        f" {k}={v}" for k, v in sorted(params.items())
    )
    entry = {
        "tier": args.tier,
        "view": spec.view,
        "combine": spec.combine,
        "references": spec.references,
        "params": params,
        "effective_params": effective,
        "teacher": TEACHER,
        "setting": "leave one answering model out, per-turn labels",
        "bar_kappa": 0.75,
        "complete": False,
        "folds": [],
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    done = {f["held_out"]: f for f in results.get(key, {}).get("folds", [])}
    start = time.perf_counter()
    for held_out in held_outs:
        if held_out not in models:
            raise SystemExit(f"--held-out {held_out!r}: not one of {models}")
        train = [i for i, it in enumerate(ts.items) if it.metadata["answering_model"] != held_out]
        test = [i for i, it in enumerate(ts.items) if it.metadata["answering_model"] == held_out]
        t0 = time.perf_counter()
        model = _make(args.tier, rubric, params)
        model.fit([ts.items[i] for i in train], ts.y_soft[train])
        fit_s = time.perf_counter() - t0
        test_items = [ts.items[i] for i in test]
        t0 = time.perf_counter()
        student = model.score_items(test_items)
        score_s = time.perf_counter() - t0
        pred = [lab.label for lab in student]
        truth = [ts.y_hard[i] for i in test]
        teacher_flips = dialogue_flips(test_items, imported.labels, TEACHER)
        student_flips = dialogue_flips(test_items, student, student[0].source)
        flips = compare_flips(teacher_flips, student_flips)
        done[held_out] = {
            "held_out": held_out,
            "n_train": len(train),
            "n_fitted": model.card_["n_train"],
            "n_test": len(test),
            "accuracy": float(accuracy_score(truth, pred)),
            "cohen_kappa": float(cohen_kappa_score(truth, pred)),
            "teacher_caves_rate": float(np.mean([t == "caves" for t in truth])),
            "student_caves_rate": float(np.mean([p == "caves" for p in pred])),
            "turn_of_flip": flips.as_dict(),
            "fit_seconds": round(fit_s, 1),
            "score_items_per_s": round(len(test) / score_s, 1),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        folds = [done[m] for m in models if m in done]
        entry.update(_summary(folds), folds=folds, complete=len(folds) == len(models))
        # A slow tier may not finish all folds: what is done is saved after each.
        _save(args.out, key, entry)
        f = done[held_out]
        print(
            f"{key}: held out {held_out:<24} acc {f['accuracy']:.3f}  "
            f"kappa {f['cohen_kappa']:.3f}  flip exact {flips.exact:.3f}  "
            f"|diff| {flips.mean_abs_diff:.2f} turns (teacher {flips.mean_a:.2f}, "
            f"student {flips.mean_b:.2f})  fit {fit_s:.0f}s  {f['score_items_per_s']} items/s",
            flush=True,
        )
    print(
        f"{key}: mean kappa {entry['mean_kappa']:.3f} over {len(entry['folds'])} fold(s) "
        f"(bar 0.75), turn of flip exact {entry['mean_flip_exact']:.3f}, "
        f"{time.perf_counter() - start:.0f}s"
    )


class PlainBaseline:
    """scikit-learn's TF-IDF (1-2 grams, sublinear, min_df 2) + balanced logistic regression
    on the text the tier would read (bench/linear_baseline.py), each item scored as it is."""

    def __init__(self, rubric: Rubric) -> None:
        self.rubric = rubric

    def get_params(self) -> dict:
        return {}

    def fit(self, items: list, Y: np.ndarray) -> PlainBaseline:
        from linear_baseline import baseline_text
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self._text = baseline_text
        self.vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
        X = self.vec.fit_transform([baseline_text(it, self.rubric) for it in items])
        names = self.rubric.label_names
        y = [names[j] for j in np.asarray(Y).argmax(axis=1)]
        self.lr = LogisticRegression(class_weight="balanced", max_iter=2000).fit(X, y)
        self.card_ = {"n_train": len(items)}
        return self

    def score_items(self, items: list) -> list[Label]:
        X = self.vec.transform([self._text(it, self.rubric) for it in items])
        return [
            Label(item_id=it.id, rubric=self.rubric.id, source="rm:baseline", label=str(y))
            for it, y in zip(items, self.lr.predict(X), strict=True)
        ]


def _make(tier: str, rubric: Rubric, params: dict):
    return PlainBaseline(rubric) if tier == "baseline" else make_model(tier, rubric, **params)


def _summary(folds: list[dict]) -> dict:
    return {
        "mean_kappa": float(np.mean([f["cohen_kappa"] for f in folds])),
        "mean_accuracy": float(np.mean([f["accuracy"] for f in folds])),
        "mean_flip_exact": float(np.mean([f["turn_of_flip"]["exact"] for f in folds])),
        "mean_flip_abs_diff": float(np.mean([f["turn_of_flip"]["mean_abs_diff"] for f in folds])),
    }


def _save(out: Path, key: str, entry: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    # Runs may share the file (other tiers, or other folds of this entry run in
    # parallel): one writer at a time, and folds already saved are kept.
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = json.loads(out.read_text()) if out.exists() else {}
        folds = {f["held_out"]: f for f in results.get(key, {}).get("folds", [])}
        folds.update({f["held_out"]: f for f in entry["folds"]})
        merged = [folds[m] for m in sorted(folds)]
        results[key] = {
            **entry,
            **_summary(merged),
            "folds": merged,
            "complete": len(merged) == len(MODELS),
        }
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(results, indent=2) + "\n")
        tmp.replace(out)


def table(results: dict) -> str:
    """Markdown: one row per entry; kappa per held-out model ('-' where not run)."""
    head = (
        "| tier | view | references | combine | training length | "
        + " | ".join(m.split("-Instruct")[0] for m in MODELS)
        + " | mean kappa | turn of flip exact | train min/fold | items/s |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for e in results.values():
        folds = {f["held_out"]: f for f in e.get("folds", [])}
        if not folds:
            continue
        lengths = LENGTH_KEYS.get(e["tier"], ())
        eff = e.get("effective_params", e.get("params", {}))
        length = ", ".join(f"{k} {eff[k]}" for k in lengths if k in eff) or "-"
        extra = "".join(f" {k}={v}" for k, v in e.get("params", {}).items() if k not in lengths)
        kappas = [f"{folds[m]['cohen_kappa']:.3f}" if m in folds else "-" for m in MODELS]
        mean = f"{e['mean_kappa']:.3f}"
        if len(folds) < len(MODELS):
            mean += f" ({len(folds)} of {len(MODELS)})"
        rates = [f["score_items_per_s"] for f in folds.values() if "score_items_per_s" in f]
        minutes = np.mean([f["fit_seconds"] for f in folds.values()]) / 60
        cells = [
            e["tier"] + extra,
            e.get("view", "window"),
            "yes" if e.get("references") else "no",
            e.get("combine", "last"),
            length,
            *kappas,
            mean,
            f"{e['mean_flip_exact']:.3f}",
            f"{minutes:.1f}",
            f"{np.mean(rates):.0f}" if rates else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
