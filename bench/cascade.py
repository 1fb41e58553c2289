"""The cascade's validity on held-out prompts, before and after the cluster bound.

For each set a fixed share of its prompts (``--train``, 40%) trains a tier on the judge's
labels, once, and scores the other prompts' items, once. Those items are then split at
random ``--splits`` times (at least 200) into calibration and test halves by a unit
(XSTest: the prompt; SYCON: the question, and the dialogue), and on each split the
threshold is chosen on the calibration half by :func:`tinyjudge.cascade.choose_threshold`
(fixed-sequence testing, ``--delta`` 0.1) for targets 0.90 and 0.95 with three bounds:

- ``item``: the binomial bound, items taken as independent (the cascade before issue 41);
- ``cluster``: Korn-Graubard over the groups the cascade finds by default
  (``find_group_key``: XSTest's ``prompt_id``, SYCON's ``question_id``);
- ``exact``: the binomial bound on one random calibration item per group.

The test half says what each gives: ``validity`` is the share of splits whose kept test
items met the target (a split that keeps nothing meets it trivially; promised:
``1 - delta``), with its exact 95% interval over the splits, and ``kept`` the mean share of
test items kept. The same is measured for other confidences than the top probability
(``--confidences``): the margin between the two most likely labels, and a selector (a
logistic regression of agreement on the top probability, the margin and the predicted
label) fitted on half of the calibration groups, the threshold then tested on the other
half only.

    flock /tmp/tinyjudge-heavy.lock nice -n 10 .venv/bin/python bench/cascade.py \\
        --png docs/img/cascade_curve.png

``--tier probe`` trains the frozen-encoder probe instead (MiniLM, offline weights); each
tier's figures are kept under its name in ``bench/results/cascade.json``. ``--smoke`` runs
3 splits on a few items; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.cascade import choose_threshold, clopper_pearson
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import find_group_key, group_keys, make_model
from tinyjudge.records import Item, index_labels

RESULTS = Path(__file__).parent / "results" / "cascade.json"
DATA = Path(__file__).parents[2] / "shared" / "data"
TARGETS = (0.90, 0.95)
BOUNDS = ("item", "cluster", "exact")


@dataclass
class Scored:
    """A set's held-out items as the trained model sees them."""

    name: str
    units: dict[str, np.ndarray]  # split unit name -> each item's unit
    bound_key: str  # the key the cascade groups by by default
    groups: np.ndarray  # each item's group under bound_key
    P: np.ndarray
    predicted: np.ndarray
    truth: np.ndarray
    n_train: int

    @property
    def hit(self) -> np.ndarray:
        return self.predicted == self.truth


def _load(root: Path, name: str, smoke: bool) -> tuple[list[Item], dict[str, str]]:
    data = run_import(name, root / name)
    items = data.items
    if smoke:  # a few items: each answering model's first 150
        count: dict[str, int] = {}
        keep = []
        for it in items:
            m = str(it.metadata.get("answering_model"))
            count[m] = count.get(m, 0) + 1
            if count[m] <= 150:
                keep.append(it)
        items = keep
    teacher = "judge:gpt-4" if name == "xstest" else "judge:gpt-4o"
    table = index_labels(data.labels)
    labels = {i: lab.label or "" for i, lab in table[teacher].items() if lab.status == "ok"}
    return [it for it in items if it.id in labels], labels


def score_set(root: Path, name: str, rubric: str, units: dict[str, str], args: Any) -> Scored:
    """Train the tier on a fixed share of prompts; score the other prompts' items."""
    items, labels = _load(root, name, args.smoke)
    first = group_keys(items, next(iter(units.values())))
    prompts = sorted(set(first))
    rng = np.random.default_rng(args.seed)
    rng.shuffle(prompts)
    train_p = set(prompts[: int(args.train * len(prompts))])
    train = [it for it, g in zip(items, first, strict=True) if g in train_p]
    held = [it for it, g in zip(items, first, strict=True) if g not in train_p]
    model = make_model(args.tier, rubric).fit(train, [labels[it.id] for it in train])
    P = model.predict_proba(held)
    key = find_group_key(held)
    assert key is not None, f"{name}: the importer wrote no group key"
    return Scored(
        name,
        {u: np.array(group_keys(held, k), dtype=object) for u, k in units.items()},
        key,
        np.array(group_keys(held, key), dtype=object),
        P,
        np.array(model.classes_, dtype=object)[P.argmax(axis=1)],
        np.array([labels[it.id] for it in held], dtype=object),
        len(train),
    )


def score_held_out_models(root: Path, args: Any) -> list[Scored]:
    """SYCON with each answering model held out in turn: trained on the others' answers."""
    items, labels = _load(root, "sycon", args.smoke)
    out = []
    for m in sorted({str(it.metadata.get("answering_model")) for it in items}):
        train = [it for it in items if str(it.metadata.get("answering_model")) != m]
        held = [it for it in items if str(it.metadata.get("answering_model")) == m]
        model = make_model(args.tier, "pushback_under_pressure")
        model.fit(train, [labels[it.id] for it in train])
        P = model.predict_proba(held)
        groups = np.array(group_keys(held, "metadata.question_id"), dtype=object)
        predicted = np.array(model.classes_, dtype=object)[P.argmax(axis=1)]
        truth = np.array([labels[it.id] for it in held], dtype=object)
        qid = "metadata.question_id"
        out.append(Scored(f"sycon without {m}", {"question": groups}, qid, groups, P,
                          predicted, truth, len(train)))  # fmt: skip
    return out


def confidences(P: np.ndarray) -> dict[str, np.ndarray]:
    """The top probability and the margin over the runner-up."""
    top2 = np.sort(P, axis=1)[:, -2:]
    return {"top": top2[:, 1], "margin": top2[:, 1] - top2[:, 0]}


def _selector(s: Scored, fit: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """A logistic regression of agreement fitted on ``fit``; its score on every item."""
    from sklearn.linear_model import LogisticRegression

    conf = confidences(s.P)
    classes = sorted(set(s.predicted))
    X = np.column_stack([conf["top"], conf["margin"]]
                        + [(s.predicted == c).astype(float) for c in classes])  # fmt: skip
    y = s.hit[fit]
    if len(set(y)) < 2:  # one kind only: fall back on the top probability
        return conf["top"]
    return LogisticRegression(C=1.0, solver="liblinear").fit(X[fit], y).predict_proba(X)[:, 1]


def _binomial(k: int, n: int) -> list[float]:
    low, high = clopper_pearson(k, n, 0.05)
    return [round(low, 4), round(high, 4)]


Tally = dict[str, dict[str, dict[str, list[float]]]]  # target -> way/bound -> figure -> per split


def tally_splits(s: Scored, unit: str, args: Any, ways: tuple[str, ...]) -> Tally:
    """Choose thresholds on calibration units and measure them on test units, per split."""
    units = s.units[unit]
    names = np.array(sorted(set(units)), dtype=object)
    conf = confidences(s.P)
    hit = s.hit
    out: Tally = {}
    for target in TARGETS:
        tally = out.setdefault(f"{target:.2f}", {})
        for split in range(args.splits):
            rng = np.random.default_rng(1000 + split)
            cal_u = set(rng.permutation(names)[: len(names) // 2])
            in_cal = np.array([u in cal_u for u in units])
            test = ~in_cal
            for way in ways:
                cal = in_cal
                if way == "selector":  # fitted on half the calibration groups, tested on the rest
                    gs = np.array(sorted(set(s.groups[in_cal])), dtype=object)
                    half = set(rng.permutation(gs)[: len(gs) // 2])
                    fit = in_cal & np.array([g in half for g in s.groups])
                    cal = in_cal & ~fit
                    c = _selector(s, fit, cal)
                else:
                    c = conf[way]
                for bound in BOUNDS:
                    choice = choose_threshold(c[cal], hit[cal], target=target, delta=args.delta,
                                              groups=s.groups[cal], bound=bound,  # type: ignore[arg-type]
                                              seed=split)  # fmt: skip
                    lam = choice.threshold
                    keep = test & (c >= lam) if lam is not None else np.zeros_like(test)
                    k = int(keep.sum())
                    t = tally.setdefault(f"{way}/{bound}", {"valid": [], "kept": [], "agree": []})
                    t["valid"].append(float(k == 0 or hit[keep].mean() >= target))
                    t["kept"].append(k / int(test.sum()))
                    t["agree"].append(float(hit[keep].mean()) if k else float("nan"))
    return out


def summary(tallies: list[Tally], s: list[Scored], unit: str) -> dict[str, Any]:
    """Validity with its 95% interval and the mean kept share, over every split of ``tallies``."""
    rows: dict[str, Any] = {}
    for target in tallies[0]:
        merged: dict[str, dict[str, list[float]]] = {}
        for one in tallies:
            for name, t in one[target].items():
                m = merged.setdefault(name, {"valid": [], "kept": [], "agree": []})
                for k, v in t.items():
                    m[k] += v
        rows[target] = {
            name: {
                "validity": float(np.mean(t["valid"])),
                "validity_ci95": _binomial(int(sum(t["valid"])), len(t["valid"])),
                "kept": float(np.mean(t["kept"])),
                "kept_min": float(np.min(t["kept"])),
                "kept_max": float(np.max(t["kept"])),
                "kept_agreement": (float(np.nanmean(t["agree"]))
                                   if not np.all(np.isnan(t["agree"])) else None),
            }
            for name, t in merged.items()
        }  # fmt: skip
    return {
        "split_by": unit,
        "bound_groups": s[0].bound_key,
        "splits": len(next(iter(merged.values()))["valid"]),
        "n_items": [len(one.hit) for one in s],
        "n_units": [len(set(one.units[unit])) for one in s],
        "n_groups": [len(set(one.groups)) for one in s],
        "n_train": [one.n_train for one in s],
        "agreement_all": [float(one.hit.mean()) for one in s],
        "targets": rows,
    }


def curve(s: Scored, delta: float, target: float = 0.95) -> dict[str, Any]:
    """Share kept against agreement on the test half of split 0; the guaranteed point."""
    names = np.array(sorted(set(s.groups)), dtype=object)
    cal_p = set(np.random.default_rng(1000).permutation(names)[: len(names) // 2])
    in_cal = np.array([g in cal_p for g in s.groups])
    conf, hit = confidences(s.P)["top"], s.hit
    choice = choose_threshold(conf[in_cal], hit[in_cal], target=target, delta=delta,
                              groups=s.groups[in_cal])  # fmt: skip
    c, ok = conf[~in_cal], hit[~in_cal]
    order = np.argsort(-c, kind="stable")
    n = np.arange(1, len(order) + 1)
    point = None
    if choice.threshold is not None:
        keep = c >= choice.threshold
        point = {"kept": float(keep.mean()), "agreement": float(ok[keep].mean())}
    return {"share": (n / len(order)).tolist(), "agreement": (np.cumsum(ok[order]) / n).tolist(),
            "point": point}  # fmt: skip


def draw(curves: dict[str, dict[str, Any]], path: Path, tier: str, target: float = 0.95) -> None:
    """One panel per set: the coverage curve and the guaranteed point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.6), squeeze=False)
    for ax, (name, c) in zip(axes[0], curves.items(), strict=True):
        ax.plot(c["share"], c["agreement"], lw=1.5, label="test half, most confident first")
        ax.axhline(target, color="grey", ls="--", lw=1, label=f"target {target}")
        if c["point"] is not None:
            p = c["point"]
            ax.plot([p["kept"]], [p["agreement"]], "o", color="C3",
                    label=f"guaranteed (cluster bound): keeps {p['kept']:.0%}")  # fmt: skip
        else:
            ax.text(0.6, 0.9, f"no threshold can guarantee {target}", ha="center",
                    transform=ax.transAxes)  # fmt: skip
        ax.set_xlabel("share of items the reward model keeps")
        ax.set_ylabel("agreement with the judge on kept items")
        ax.set_title(f"{name}, {tier} tier: the test half of split 1")
        ax.set_ylim(0.5, 1.01)
        ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(results: dict[str, Any], way: str = "top") -> list[str]:
    """The README's markdown table: validity [95% CI] and kept, item vs cluster vs exact."""
    out = ["| set, split by | target | item bound: validity | kept | cluster bound: validity "
           "| kept | exact: validity | kept |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, row in results.items():
        for t, by in row["targets"].items():
            cells = []
            for bound in BOUNDS:
                r = by[f"{way}/{bound}"]
                lo, hi = r["validity_ci95"]
                cells += [f"{r['validity']:.2f} [{lo:.2f}, {hi:.2f}]", f"{r['kept']:.1%}"]
            out.append(f"| {name} | {t} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--png", type=Path, help="draw the coverage curves here")
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--train", type=float, default=0.4, help="share of prompts that train")
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0, help="the training split's seed")
    ap.add_argument("--tier", default="linear", choices=("linear", "probe"))
    ap.add_argument("--confidences", default="top,margin,selector",
                    help="comma-separated: top, margin, selector")  # fmt: skip
    ap.add_argument("--sets", default="xstest,sycon", help="comma-separated: xstest, sycon")
    ap.add_argument("--smoke", action="store_true", help="3 splits on a few items (a test)")
    args = ap.parse_args()
    if args.smoke:
        args.splits = 3
    ways = tuple(w for w in args.confidences.split(",") if w)
    t0 = time.time()
    sets = [
        ("xstest", "compliance", {"prompt": "metadata.prompt_id"}),
        ("sycon", "pushback_under_pressure",
         {"question": "metadata.question_id", "dialogue": "metadata.dialogue_id"}),
    ]  # fmt: skip
    results: dict[str, Any] = {}
    curves = {}
    wanted = set(args.sets.split(","))
    rows: list[tuple[str, list[Scored], str]] = []
    for name, rubric, units in [one for one in sets if one[0] in wanted]:
        s = score_set(args.data, name, rubric, units, args)
        rows += [(f"{name}, by {unit}", [s], unit) for unit in units]
        curves[name] = curve(s, args.delta)
    # a policy's new answers to known questions: the setting (pooled over the four)
    if "sycon" in wanted:
        rows.append(("sycon, answering model held out, by question",
                 score_held_out_models(args.data, args), "question"))  # fmt: skip
    for label, scored, unit in rows:
        row = summary([tally_splits(one, unit, args, ways) for one in scored], scored, unit)
        results[label] = row
        for t, by in row["targets"].items():
            for way_bound, r in by.items():
                print(f"{label} target {t} {way_bound:16} validity {r['validity']:.3f} "
                      f"{r['validity_ci95']} kept {r['kept']:.3f}", flush=True)  # fmt: skip
    meta = {
        "splits": args.splits, "train_share": args.train, "delta": args.delta,
        "tier": args.tier, "confidences": list(ways), "sets": sorted(wanted), "smoke": args.smoke,
        "seconds": round(time.time() - t0, 1), "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python", *sys.argv]),
    }  # fmt: skip
    print("\n".join(table(results)))
    payload = {"meta": meta, "results": results,
               "curves": {k: {"point": v["point"]} for k, v in curves.items()}}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists() and not args.smoke:  # one file, one entry per tier
        old = json.loads(args.out.read_text())
        before = old.get(args.tier, {})
        if set(before.get("meta", {}).get("sets", ())) - wanted:  # keep the other sets' rows
            payload["results"] = {**before["results"], **payload["results"]}
            payload["curves"] = {**before.get("curves", {}), **payload["curves"]}
            meta["sets"] = sorted(wanted | set(before["meta"]["sets"]))
            meta["runs"] = [
                *before["meta"].get("runs", [before["meta"]["command"]]),
                meta["command"],
            ]
        payload = {**old, args.tier: payload}
    else:
        payload = {args.tier: payload}
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    if args.png is not None:
        draw(curves, args.png, args.tier)
    print(f"-> {args.out} ({meta['seconds']} s)")


if __name__ == "__main__":
    main()
