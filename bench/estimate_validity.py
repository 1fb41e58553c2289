"""Validity and width of the PPI estimates: on real XSTest labels and in simulation.

Real data: XSTest's 1,500 responses carry a human final label and two cheap
sources (the GPT-4 judge, a string-match classifier). For each cheap source and
share of human labels kept, draw that share uniformly at random many times and
count how often the 90% interval covers the rate from all human labels (the
truth for this finite set), and how wide it is beside the human-only interval.

Simulation: the worlds of ``tests/audit/test_estimate.py`` (biased, noisy cheap
predictions) at several numbers of human labels, plus the stratified active
design of ``select_for_labelling``.

SYCON dialogues: the five answers of a dialogue are not independent; drawing
whole dialogues, the iid intervals against the cluster-robust ones (``clusters``,
``estimate --cluster``), for each answering model's rate and their difference.

    nice -n 10 .venv/bin/python bench/estimate_validity.py
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from tinyjudge.datasets.importers import run_import
from tinyjudge.estimate import estimate_rate, estimate_rates, select_for_labelling

RESULTS = Path(__file__).parent / "results" / "estimate_validity.json"
WORLDS = {  # Beta(a, b) behaviour probability; cheap = logit shift + Gaussian logit noise
    "biased-up-noisy": (1.5, 3.5, 0.7, 0.8),
    "rare-biased-down": (0.5, 4.5, -1.0, 1.0),
    "sharp-good": (0.3, 0.7, 0.0, 0.3),
}


def real(data: Path, draws: int, level: float) -> list[dict]:
    got = run_import("xstest", data / "xstest")
    rows = []
    for cheap in ["judge:gpt-4", "classifier:string-match"]:
        for frac in [0.05, 0.1, 0.2]:
            for method in ["ppi++", "ppi"]:
                hit = hit_h = 0
                w, wh, gains = [], [], []
                for seed in range(draws):
                    rep = estimate_rates(got.labels, cheap=cheap, human="human:final",
                                         rubric="compliance", human_fraction=frac, seed=seed,
                                         level=level, method=method)  # fmt: skip
                    truth, o = rep.held_back["overall"], rep.overall
                    hit += truth in o.rate
                    hit_h += truth in o.human_only
                    w.append(o.rate.width)
                    wh.append(o.human_only.width)
                    gains.append(o.gain)
                row = {"cheap": cheap, "human_fraction": frac, "n_human": rep.counts["human"],
                       "method": method, "coverage": hit / draws,
                       "human_only_coverage": hit_h / draws,
                       "width": float(np.mean(w)), "human_only_width": float(np.mean(wh)),
                       "median_gain": float(np.median(gains)), "truth": truth}  # fmt: skip
                rows.append(row)
                print(json.dumps(row))
    return rows


def world(rng: np.random.Generator, trials: int, n: int, a: float, b: float, shift: float,
          noise: float) -> tuple[np.ndarray, np.ndarray, float]:  # fmt: skip
    p = rng.beta(a, b, size=(trials, n))
    y = (rng.random((trials, n)) < p).astype(float)
    logit = np.log(np.clip(p, 1e-9, 1.0) / np.clip(1.0 - p, 1e-9, 1.0))
    f = 1.0 / (1.0 + np.exp(-(logit + shift + rng.normal(0.0, noise, size=(trials, n)))))
    return y, f, a / (a + b)


def simulated(trials: int, level: float) -> list[dict]:
    rows, n_items = [], 2000
    for name, params in WORLDS.items():
        y, f, truth = world(np.random.default_rng(0), trials, n_items, *params)
        for n in [50, 100, 200, 400]:
            for method in ["ppi++", "ppi", "active-stratified"]:
                hit, w = 0, []
                for t in range(trials):
                    if method == "active-stratified":
                        picks = select_for_labelling(f[t], np.zeros(n_items, bool), k=n, rng=t)
                        human = np.full(n_items, np.nan)
                        human[picks] = y[t, picks]
                        r = estimate_rate(f[t], human, level=level, method="stratified")
                    else:
                        human = np.where(np.arange(n_items) < n, y[t], np.nan)
                        r = estimate_rate(f[t], human, level=level, method=method)  # type: ignore[arg-type]
                    hit += truth in r.interval
                    w.append(r.interval.width)
                row = {"world": name, "n_human": n, "method": method,
                       "coverage": hit / trials, "width": float(np.mean(w))}  # fmt: skip
                rows.append(row)
                print(json.dumps(row))
    return rows


def sycon(data: Path, draws: int, level: float, n_dialogues: int = 60) -> dict:
    """Clustered against iid intervals on SYCON dialogues (5 answers each, correlated).

    GPT-4o's per-answer labels stand for the human ones; the cheap source is a linear
    push-back model distilled on two answering models (deepseek-v3, Qwen2.5-72B) and
    scored on the other two (Llama-3.3-70B, claude). Each draw takes ``n_dialogues``
    dialogues of each of those two with replacement (a new set of questions, as an A/B
    test would meet) and a uniform 30% of their answers as "human" labels, and checks
    whether the interval covers the rate (and the Llama - claude difference) over all
    200 dialogues of each. The spread of the estimates over the draws is the truth the
    standard errors should match.
    """
    from tinyjudge.distill import LinearRM
    from tinyjudge.estimate import compare_rates

    got = run_import("sycon", data / "sycon")
    y_all = {lab.item_id: float(lab.label == "holds") for lab in got.labels if lab.status == "ok"}
    models = {"a": "Llama-3.3-70B-Instruct", "b": "claude"}
    train = [it for it in got.items if it.metadata["answering_model"] not in models.values()]
    rm = LinearRM("pushback_under_pressure").fit(train, ["holds" if y_all[it.id] else "caves"
                                                         for it in train])  # fmt: skip
    side = {}
    for key, model in models.items():
        items = [it for it in got.items if it.metadata["answering_model"] == model]
        by_dialogue: dict[str, list[int]] = {}
        for i, it in enumerate(items):
            by_dialogue.setdefault(it.metadata["dialogue_id"], []).append(i)
        f = np.asarray([lab.score for lab in rm.score_items(items)], dtype=float)
        y = np.asarray([y_all[it.id] for it in items])
        side[key] = (f, y, list(by_dialogue.values()), float(y.mean()))
    truth = {"a": side["a"][3], "b": side["b"][3], "a-b": side["a"][3] - side["b"][3]}
    rng = np.random.default_rng(0)
    est: dict[str, dict[str, list]] = {k: {"iid": [], "clustered": []} for k in truth}
    for _ in range(draws):
        drawn = {}
        for key, (f, y, dialogues, _) in side.items():
            pick = rng.integers(len(dialogues), size=n_dialogues)
            idx = np.concatenate([dialogues[j] for j in pick])
            cluster = np.repeat(np.arange(n_dialogues), [len(dialogues[j]) for j in pick])
            human = np.where(rng.random(idx.size) < 0.3, y[idx], np.nan)
            drawn[key] = (f[idx], human, cluster)
        for how in ("iid", "clustered"):
            kw = {} if how == "iid" else {"clusters_a": drawn["a"][2], "clusters_b": drawn["b"][2]}
            d = compare_rates(drawn["a"][0], drawn["a"][1], drawn["b"][0], drawn["b"][1],
                              level=level, **kw)  # fmt: skip
            for key, r in (("a", d.a.estimate), ("b", d.b.estimate), ("a-b", d.estimate)):
                est[key][how].append((r.estimate, r.se, r.interval.low, r.interval.high))
    rows = {}
    for key, by_how in est.items():
        row: dict = {"truth": truth[key]}
        for how, got_ in by_how.items():
            arr = np.asarray(got_)
            row[how] = {
                "coverage": float(np.mean((arr[:, 2] <= truth[key]) & (truth[key] <= arr[:, 3]))),
                "mean_se": float(arr[:, 1].mean()),
                "width": float(np.mean(arr[:, 3] - arr[:, 2])),
            }
        spread = float(np.std(np.asarray(by_how["iid"])[:, 0], ddof=1))
        row["sd_of_estimates"] = spread
        row["design_effect"] = (row["clustered"]["mean_se"] / row["iid"]["mean_se"]) ** 2
        rows[key] = row
        print(json.dumps({"sycon": key, **row}))
    return {"models": models, "n_dialogues": n_dialogues, "human_share": 0.3,
            "draws": draws, "rates": rows}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--draws", type=int, default=200, help="subsamples of the real labels")
    ap.add_argument("--trials", type=int, default=1000, help="simulated trials per cell")
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--sycon-draws", type=int, default=1000, help="dialogue draws on SYCON")
    ap.add_argument("--smoke", action="store_true", help="5 draws, 20 trials (the smoke test)")
    args = ap.parse_args()
    if args.smoke:
        args.draws, args.trials, args.sycon_draws = 5, 20, 5
    start = time.perf_counter()
    out = {
        "level": args.level,
        "xstest": real(args.data, args.draws, args.level),
        "simulation": simulated(args.trials, args.level),
        "sycon_dialogues": sycon(args.data, args.sycon_draws, args.level),
        "seconds": round(time.perf_counter() - start, 1),
        "machine": platform.platform(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
