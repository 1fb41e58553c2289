"""``label --select teach``: how well its order finds the replies where people overturn the judge.

XSTest. Each draw gives people's labels (``human:final``) on the replies of N/5 prompts
drawn at random; GPT-4's labels (``judge:gpt-4``) are on every reply. A reward model is
fitted on both (the way named by ``--ways``: judge only, ``weighted``, ``people`` or
``auto``, the linear tier), and the other replies are ordered for labelling. The figure is
the AUC of each order at finding the replies whose people's label differs from GPT-4's:

- doubt: ``1 - p_rm(judge's label)``, what ``teach`` was (and is before anyone has labelled);
- teach: the page's order now (:func:`tinyjudge.label.select.teach_values`), the doubt
  corrected by the judge's confusion against the people's labels so far, or the doubt alone
  where the model's head read the judge's logits (``auto`` chose ``stack``);
- confusion: the doubt corrected by the confusion whatever the head read (``auto`` rows
  only: what ``teach`` did before it read the card);
- class rate: the judge's class's overturn rate on people's labels alone (no model).

    nice -n 10 .venv/bin/python bench/teach.py                 # 3 draws, N = 50 100 300
    nice -n 10 .venv/bin/python bench/teach.py --ways judge weighted --draws 5
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from tinyjudge._people_items import card_people_method
from tinyjudge._people_methods import READS_JUDGE
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM
from tinyjudge.distill._people import fit_with_people, people_targets
from tinyjudge.label.select import teach_values
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric

RESULTS = Path(__file__).parent / "results"
JUDGE, HUMAN = "judge:gpt-4", "human:final"
WAYS = ("judge", "weighted", "people", "auto")
ORDERS = ("doubt", "teach", "class rate")


def run_draw(data: Any, way: str, n: int, draw: int) -> dict[str, Any]:
    """One draw: people's labels on n/5 prompts, a model fitted ``way``, each order's AUC."""
    rubric = load_rubric("compliance")
    items, names = data.items, rubric.label_names
    prompts = sorted({it.metadata["prompt_id"] for it in items})
    asked = set(np.random.default_rng(draw).permutation(prompts)[: max(1, n // 5)])
    labelled = {it.id for it in items if it.metadata["prompt_id"] in asked}
    judge = [lab for lab in data.labels if lab.source == JUDGE]
    people = [lab for lab in data.labels if lab.source == HUMAN and lab.item_id in labelled]
    said = {lab.item_id: lab.label for lab in judge if lab.label}
    t0 = time.perf_counter()
    if way == "judge":
        fit = [it for it in items if it.id in said]
        model = LinearRM(rubric).fit(fit, [said[it.id] for it in fit])
    else:
        pt = people_targets(items, judge + people, JUDGE, HUMAN, rubric, way)
        groups = [it.metadata["prompt_id"] for it in pt.items]
        model = fit_with_people(LinearRM(rubric), pt, groups=groups)
    truth = {lab.item_id: lab.label for lab in data.labels if lab.source == HUMAN}
    pool = [it for it in items if it.id not in labelled and it.id in said and it.id in truth]
    ids = [it.id for it in pool]
    P = model.predict_proba(pool)
    rm = [
        Label(item_id=i, rubric=rubric.id, rubric_hash=rubric.hash, source="rm:bench",
              label=names[int(p.argmax())], probs=dict(zip(names, p.tolist(), strict=True)))
        for i, p in zip(ids, P, strict=True)
    ]  # fmt: skip
    overturned = np.array([truth[i] != said[i] for i in ids])
    seen = [(said[lab.item_id], lab.label) for lab in people if lab.item_id in said]
    rate = {
        j: (sum(h != j for jj, h in seen if jj == j) + 0.5) / (sum(jj == j for jj, _ in seen) + 1)
        for j in names
    }
    reads_judge = card_people_method(getattr(model, "card_", {})) in READS_JUDGE
    scores = {
        "doubt": teach_values(judge + rm, rubric, ids)[2],
        "teach": teach_values(judge + rm + people, rubric, ids, reads_judge=reads_judge)[2],
        "class rate": np.array([rate[said[i]] for i in ids]),
    }
    if way == "auto":
        scores["confusion"] = teach_values(judge + rm + people, rubric, ids)[2]
    out: dict[str, Any] = {
        "way": way, "n_human": len(people), "draw": draw, "n_pool": len(ids),
        "n_overturned": int(overturned.sum()), "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    out |= {o: float(roc_auc_score(overturned, s)) for o, s in scores.items()}
    if way == "auto":
        out["chosen"] = model.card_["combination"]["chosen"]
    return out


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model and budget: each order's mean, min and max AUC over the draws."""
    table = []
    for way in dict.fromkeys(r["way"] for r in rows):
        for n in dict.fromkeys(r["n_target"] for r in rows if r["way"] == way):
            some = [r for r in rows if r["way"] == way and r["n_target"] == n]
            row: dict[str, Any] = {"way": way, "n_human": n, "draws": len(some)}
            for o in (*ORDERS, "confusion"):
                if o not in some[0]:
                    continue
                v = np.array([r[o] for r in some])
                row[o] = {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max())}
            table.append(row)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).parents[2] / "shared/data/xstest"))
    ap.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    ap.add_argument("--n", type=int, nargs="+", default=[50, 100, 300])
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "teach.json")
    ap.add_argument("--smoke", action="store_true", help="60 prompts, N=50, one draw (a test)")
    args = ap.parse_args()
    data = run_import("xstest", Path(args.data))
    if args.smoke:
        args.ways, args.n, args.draws = ["judge", "weighted"], [50], 1
        keep = {it.id for it in data.items[:300]}
        data.items = [it for it in data.items if it.id in keep]
        data.labels = [lab for lab in data.labels if lab.item_id in keep]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for way in args.ways:
        for n in args.n:
            for draw in range(args.draws):
                row = {"n_target": n, **run_draw(data, way, n, draw)}
                rows.append(row)
                print(
                    f"{way:8s} N={n:4d} draw {draw}: "
                    + "  ".join(f"{o} {row[o]:.3f}" for o in (*ORDERS, "confusion") if o in row)
                    + f"  ({row['n_overturned']}/{row['n_pool']} overturned, "
                    + f"{row['seconds']} s{', chose ' + row['chosen'] if 'chosen' in row else ''})",
                    flush=True,
                )
                result = {
                    "dataset": "xstest", "tier": "linear", "table": summarise(rows), "draws": rows,
                    "command": "bench/teach.py --ways {} --n {} --draws {}".format(
                        " ".join(args.ways), " ".join(map(str, args.n)), args.draws),
                    "machine": f"{platform.processor() or platform.machine()}, 2 shared cores",
                    "seconds": round(time.perf_counter() - t0, 1),
                }  # fmt: skip
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("| model | N | " + " | ".join(ORDERS) + " |")
    for r in summarise(rows):
        cells = [f"{r[o]['mean']:.3f} [{r[o]['min']:.3f}, {r[o]['max']:.3f}]" for o in ORDERS]
        print(f"| {r['way']} | {r['n_human']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
