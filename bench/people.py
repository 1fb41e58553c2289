"""Learning curves: agreement with people against the number of people's labels, for
judge only, people only and tinyjudge's combination (``distill --human``'s default).

XSTest (1,500 replies, 5 per prompt). Each draw holds out half the prompts (750
replies no model ever sees); on the other half GPT-4's labels (``judge:gpt-4``) are
known on every reply and people's (``human:final``) on the replies of N/5 prompts
drawn at random. Measured on the held-out replies against people: Cohen's kappa,
top-label ECE and log loss, over several draws (mean, min, max).

- judge only: the tier fitted on GPT-4's labels;
- people only: the tier's features on every training reply, its head on people's rows
  (TF-IDF + logistic regression on the human rows, the plain baseline);
- combination: ``people_targets(method="auto")`` + ``fit_with_people`` grouped by prompt,
  as ``distill --source judge:gpt-4 --human human:final --group-by metadata.prompt_id``
  fits on its training split.

    nice -n 10 .venv/bin/python bench/people.py                    # linear, 25..300, 3 draws
    nice -n 10 .venv/bin/python bench/people.py --n 100 300 --draws 2 --tier probe
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.audit.agreement import cohen_kappa
from tinyjudge.calibrate import expected_calibration_error
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import group_keys, make_model
from tinyjudge.distill._people import fit_with_people, people_targets

RESULTS = Path(__file__).parent / "results"
PLOT = Path(__file__).parents[1] / "docs" / "img" / "people.png"
JUDGE, HUMAN, RUBRIC, GROUP = "judge:gpt-4", "human:final", "compliance", "metadata.prompt_id"
WAYS = ("judge only", "people only", "combination")


def _figures(y: np.ndarray, P: np.ndarray) -> dict[str, float]:
    p_true = np.clip(P[np.arange(len(y)), y], 1e-12, 1.0)
    return {
        "kappa": float(cohen_kappa(y, P.argmax(axis=1))),
        "ece": float(expected_calibration_error(y, P)),
        "log_loss": float(-np.log(p_true).mean()),
    }


def run_draw(data: Any, tier: str, n: int, draw: int) -> dict[str, Any]:
    """One draw at ``n`` people's labels: each way's held-out figures, and what auto chose."""
    items = data.items
    groups = np.array(group_keys(items, GROUP))
    rng = np.random.default_rng(draw)
    prompts = rng.permutation(np.unique(groups))
    test_p, train_p = set(prompts[: len(prompts) // 2]), prompts[len(prompts) // 2 :]
    people_p = set(rng.choice(train_p, size=max(1, n // 5), replace=False))
    train = [it for it, g in zip(items, groups, strict=True) if g not in test_p]
    test = [it for it, g in zip(items, groups, strict=True) if g in test_p]
    shown = {it.id for it in train if it.metadata["prompt_id"] in people_p}
    labels = [
        lab
        for lab in data.labels
        if (lab.source == JUDGE and lab.item_id not in {t.id for t in test})
        or (lab.source == HUMAN and lab.item_id in shown)
    ]
    truth = {lab.item_id: lab.label for lab in data.labels if lab.source == HUMAN}
    out: dict[str, Any] = {"n_human": len(shown), "draw": draw, "n_test": len(test)}
    models: dict[str, Any] = {}
    t0 = time.perf_counter()
    judged = {lab.item_id: lab.label for lab in labels if lab.source == JUDGE and lab.label}
    fit_items = [it for it in train if it.id in judged]
    models["judge only"] = make_model(tier, RUBRIC).fit(
        fit_items, [judged[it.id] for it in fit_items]
    )
    pt = people_targets(train, labels, JUDGE, HUMAN, RUBRIC, "people")
    models["people only"] = fit_with_people(make_model(tier, RUBRIC), pt)
    pt = people_targets(train, labels, JUDGE, HUMAN, RUBRIC, "auto")
    models["combination"] = fit_with_people(
        make_model(tier, RUBRIC), pt, groups=group_keys(pt.items, GROUP)
    )
    names = models["combination"].classes_
    y = np.array([names.index(truth[it.id]) for it in test])
    for way in WAYS:
        out[way] = _figures(y, models[way].predict_proba(test))
    out["chosen"] = models["combination"].card_["combination"]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per budget and way: mean, min and max of each figure over the draws."""
    table = []
    for n in sorted({r["n_target"] for r in rows}):
        at = [r for r in rows if r["n_target"] == n]
        for way in WAYS:
            entry: dict[str, Any] = {"n_human": n, "way": way, "draws": len(at)}
            for fig in ("kappa", "ece", "log_loss"):
                vals = [r[way][fig] for r in at]
                entry[fig] = {"mean": float(np.mean(vals)), "min": min(vals), "max": max(vals)}
            table.append(entry)
    return table


def plot(table: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for way in WAYS:
        rs = [r for r in table if r["way"] == way]
        x = [r["n_human"] for r in rs]
        ax.plot(x, [r["kappa"]["mean"] for r in rs], marker="o", label=way)
        ax.fill_between(
            x, [r["kappa"]["min"] for r in rs], [r["kappa"]["max"] for r in rs], alpha=0.12
        )
    ax.axhline(0.80, color="black", ls=":", label="aim at 300 (0.80)")
    ax.set_xscale("log")
    ax.set_xticks(x, [str(v) for v in x])
    ax.minorticks_off()
    ax.set_xlabel("people's labels (replies; 5 per prompt)")
    ax.set_ylabel("Cohen's kappa with people, held-out prompts")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).parents[2] / "shared/data/xstest"))
    ap.add_argument("--tier", default="linear")
    ap.add_argument("--n", type=int, nargs="+", default=[25, 100, 300])
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--first-draw", type=int, default=0, help="seed of the first draw")
    ap.add_argument("--out", type=Path, default=RESULTS / "people.json")
    ap.add_argument("--png", type=Path, default=PLOT)
    ap.add_argument("--smoke", action="store_true", help="60 prompts, N=25, one draw (a test)")
    args = ap.parse_args()
    data = run_import("xstest", Path(args.data))
    if args.smoke:
        args.n, args.draws = [25], 1
        keep = {it.id for it in data.items[:300]}
        data.items = [it for it in data.items if it.id in keep]
        data.labels = [lab for lab in data.labels if lab.item_id in keep]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for n in args.n:
        for draw in range(args.first_draw, args.first_draw + args.draws):
            row = {"n_target": n, **run_draw(data, args.tier, n, draw)}
            rows.append(row)
            print(
                f"{args.tier} N={n:4d} draw {draw}: "
                + "  ".join(
                    f"{w} kappa {row[w]['kappa']:.3f} ECE {row[w]['ece']:.3f}" for w in WAYS
                )
                + f"  (auto chose {row['chosen']['chosen']}, {row['seconds']} s)",
                flush=True,
            )
            table = summarise(rows)
            result = {
                "dataset": "xstest", "tier": args.tier, "table": table, "draws": rows,
                "command": "bench/people.py --tier {} --n {} --draws {} --first-draw {}".format(
                    args.tier, " ".join(map(str, args.n)), args.draws, args.first_draw),
                "machine": f"{platform.processor() or platform.machine()}, 2 shared cores",
                "seconds": round(time.perf_counter() - t0, 1),
            }  # fmt: skip
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in summarise(rows):
        k, e = r["kappa"], r["ece"]
        print(
            f"N={r['n_human']:4d} {r['way']:12s} kappa {k['mean']:.3f} "
            f"[{k['min']:.3f}, {k['max']:.3f}]  ECE {e['mean']:.3f}"
        )
    plot(summarise(rows), args.png, f"XSTest, {args.tier} tier: GPT-4's labels + N of people's")


if __name__ == "__main__":
    main()
