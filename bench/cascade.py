"""The cascade's guarantee and savings on held-out prompts: XSTest and SYCON, 50 random splits.

For each set, a fixed share of its prompts (``--train``, 40%) trains the linear tier on the
judge's labels, once. The other prompts are split at random (by prompt: XSTest's
``prompt_id``, SYCON's ``question_id``), ``--splits`` times, into calibration and test
halves. On each split the threshold is chosen on the calibration half by
:func:`tinyjudge.cascade.choose_threshold` (fixed-sequence testing, exact binomial bound,
``--delta`` 0.1) for targets 0.90 / 0.95 / 0.98, and the test half says what it gives:

- ``validity``: the share of splits in which agreement on the kept test items met the
  target (a split that keeps nothing meets it trivially; expected >= 1 - delta),
- ``guaranteed``: the share of splits in which some threshold passed,
- ``kept``: the mean share of test items the reward model keeps,
- ``judge_per_1000``: judge verdicts per 1,000 items (judge only: 1,000),
- ``kept_agreement``: the mean agreement on the kept test items (splits that keep some).

SYCON is also measured with each answering model held out in turn (trained on the other
three models' answers to the same questions; calibration and test split by question within
the held-out model; figures averaged over the four): a policy's new answers to known prompts.

References: the judge whose labels trained the model (XSTest: GPT-4; SYCON: GPT-4o), and
people (XSTest's ``human:final``; SYCON has no people's labels). Also the coverage curve of
one split per set (share kept against agreement on the test half, the guaranteed point at
target 0.95 marked), drawn to ``--png`` (the README's picture).

    flock /tmp/tinyjudge-heavy.lock nice -n 10 .venv/bin/python bench/cascade.py \
        --png docs/img/cascade_curve.png

``--tier probe`` trains the frozen-encoder probe instead (MiniLM, offline weights); each
tier's figures are kept under its name in the JSON file.

``--smoke`` runs 2 splits on XSTest's first 300 replies and SYCON's first 40 turns per
answering model; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.cascade import choose_threshold
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import group_keys, make_model
from tinyjudge.records import Item, index_labels

RESULTS = Path(__file__).parent / "results" / "cascade.json"
DATA = Path(__file__).parents[2] / "shared" / "data"
TARGETS = (0.90, 0.95, 0.98)


@dataclass
class Scored:
    """A set's held-out items as the trained model sees them."""

    name: str
    groups: np.ndarray  # prompt of each held-out item
    confidence: np.ndarray
    predicted: np.ndarray
    references: dict[str, np.ndarray]  # source -> its label per held-out item ("" = none)
    n_train: int


def _load(root: Path, name: str, smoke: bool) -> tuple[list[Item], dict[str, dict[str, Any]], str]:
    data = run_import(name, root / name)
    items = data.items
    if smoke:
        items = items[:300] if name == "xstest" else _first_per_model(items, 40)
    table = index_labels(data.labels)
    labels = {src: {i: lab.label for i, lab in by.items() if lab.status == "ok"}
              for src, by in table.items()}  # fmt: skip
    return items, labels, "metadata.prompt_id" if name == "xstest" else "metadata.question_id"


def _first_per_model(items: list[Item], n: int) -> list[Item]:
    seen: dict[str, int] = {}
    keep = []
    for it in items:
        m = str(it.metadata.get("answering_model"))
        seen[m] = seen.get(m, 0) + 1
        if seen[m] <= n:
            keep.append(it)
    return keep


def score_set(
    root: Path, name: str, teacher: str, rubric: str, people: str | None, args: Any
) -> Scored:
    """Train the linear tier on a fixed share of prompts; score the other prompts' items."""
    items, labels, key = _load(root, name, args.smoke)
    items = [it for it in items if it.id in labels[teacher]]
    groups = np.array(group_keys(items, key), dtype=object)
    prompts = sorted(set(groups))
    rng = np.random.default_rng(args.seed)
    rng.shuffle(prompts)
    train_p = set(prompts[: int(args.train * len(prompts))])
    train = [it for it, g in zip(items, groups, strict=True) if g in train_p]
    held = [i for i, g in enumerate(groups) if g not in train_p]
    model = make_model(args.tier, rubric).fit(train, [labels[teacher][it.id] for it in train])
    held_items = [items[i] for i in held]
    P = model.predict_proba(held_items)
    refs = {teacher: np.array([labels[teacher][it.id] for it in held_items], dtype=object)}
    if people is not None:
        got = labels.get(people, {})
        refs[people] = np.array([got.get(it.id, "") for it in held_items], dtype=object)
    return Scored(name, groups[held], P.max(axis=1),
                  np.array(model.classes_, dtype=object)[P.argmax(axis=1)], refs,
                  len(train))  # fmt: skip


def score_held_out_models(root: Path, teacher: str, rubric: str, args: Any) -> list[Scored]:
    """SYCON with each answering model held out in turn: trained on the others' answers."""
    items, labels, key = _load(root, "sycon", args.smoke)
    items = [it for it in items if it.id in labels[teacher]]
    out = []
    for m in sorted({str(it.metadata.get("answering_model")) for it in items}):
        train = [it for it in items if str(it.metadata.get("answering_model")) != m]
        held = [it for it in items if str(it.metadata.get("answering_model")) == m]
        model = make_model(args.tier, rubric).fit(train, [labels[teacher][it.id] for it in train])
        P = model.predict_proba(held)
        refs = {teacher: np.array([labels[teacher][it.id] for it in held], dtype=object)}
        out.append(Scored(f"sycon without {m}", np.array(group_keys(held, key), dtype=object),
                          P.max(axis=1), np.array(model.classes_, dtype=object)[P.argmax(axis=1)],
                          refs, len(train)))  # fmt: skip
    return out


def pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean of several settings' figures (one per held-out answering model)."""
    out: dict[str, Any] = {"settings": len(rows), "n_items": sum(r["n_items"] for r in rows)}
    out["agreement_all"] = float(np.mean([r["agreement_all"] for r in rows]))
    out["targets"] = {}
    for t in rows[0]["targets"]:
        per = [r["targets"][t] for r in rows]
        out["targets"][t] = {
            k: (float(np.nanmean([p[k] if p[k] is not None else np.nan for p in per]))
                if any(p[k] is not None for p in per) else None)
            for k in per[0]
        }  # fmt: skip
    out["per_model"] = rows
    return out


def run_splits(s: Scored, reference: str, args: Any) -> dict[str, Any]:
    """Choose the threshold on calibration prompts, measure on test prompts, per split."""
    truth = s.references[reference]
    has = truth != ""
    prompts = np.array(sorted(set(s.groups[has])), dtype=object)
    rows: dict[str, Any] = {}
    for target in TARGETS:
        kept, valid, guaranteed, agree = [], [], [], []
        for split in range(args.splits):
            rng = np.random.default_rng(1000 + split)
            cal_p = set(rng.permutation(prompts)[: len(prompts) // 2])
            in_cal = np.array([g in cal_p for g in s.groups]) & has
            in_test = ~np.array([g in cal_p for g in s.groups]) & has
            hit = s.predicted == truth
            choice = choose_threshold(s.confidence[in_cal], hit[in_cal], target=target,
                                      delta=args.delta)  # fmt: skip
            lam = choice.threshold
            keep = in_test & (s.confidence >= lam) if lam is not None else np.zeros_like(in_test)
            k = int(keep.sum())
            kept.append(k / int(in_test.sum()))
            guaranteed.append(lam is not None)
            a = float(hit[keep].mean()) if k else float("nan")
            agree.append(a)
            valid.append(k == 0 or a >= target)
        rows[f"{target:.2f}"] = {
            "validity": float(np.mean(valid)),
            "guaranteed": float(np.mean(guaranteed)),
            "kept": float(np.mean(kept)),
            "kept_min": float(np.min(kept)),
            "kept_max": float(np.max(kept)),
            "judge_per_1000": 1000.0 * (1.0 - float(np.mean(kept))),
            "kept_agreement": float(np.nanmean(agree)) if any(x == x for x in agree) else None,
        }
    hit_all = (s.predicted == truth)[has]
    return {
        "reference": reference,
        "n_items": int(has.sum()),
        "n_prompts": len(prompts),
        "n_train": s.n_train,
        "agreement_all": float(hit_all.mean()),
        "targets": rows,
    }


def curve(s: Scored, reference: str, delta: float, target: float = 0.95) -> dict[str, Any]:
    """Share kept against agreement on the test half of split 0; the guaranteed point."""
    truth = s.references[reference]
    prompts = np.array(sorted(set(s.groups)), dtype=object)
    cal_p = set(np.random.default_rng(1000).permutation(prompts)[: len(prompts) // 2])
    in_cal = np.array([g in cal_p for g in s.groups])
    hit = s.predicted == truth
    choice = choose_threshold(s.confidence[in_cal], hit[in_cal], target=target, delta=delta)
    conf, ok = s.confidence[~in_cal], hit[~in_cal]
    order = np.argsort(-conf, kind="stable")
    n = np.arange(1, len(order) + 1)
    agreement = np.cumsum(ok[order]) / n
    point = None
    if choice.threshold is not None:
        keep = conf >= choice.threshold
        point = {"kept": float(keep.mean()), "agreement": float(ok[keep].mean())}
    return {"share": (n / len(order)).tolist(), "agreement": agreement.tolist(), "point": point}


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
                    label=f"guaranteed threshold: keeps {p['kept']:.0%}")  # fmt: skip
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--png", type=Path, help="draw the coverage curves here")
    ap.add_argument("--splits", type=int, default=50)
    ap.add_argument("--train", type=float, default=0.4, help="share of prompts that train")
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0, help="the training split's seed")
    ap.add_argument("--tier", default="linear", choices=("linear", "probe"))
    ap.add_argument("--smoke", action="store_true", help="2 splits on a few items (a test)")
    args = ap.parse_args()
    if args.smoke:
        args.splits = 2
    t0 = time.time()
    sets = [
        ("xstest", "judge:gpt-4", "compliance", "human:final"),
        ("sycon", "judge:gpt-4o", "pushback_under_pressure", None),
    ]
    results: dict[str, Any] = {}
    curves = {}
    for name, teacher, rubric, people in sets:
        s = score_set(args.data, name, teacher, rubric, people, args)
        for ref in [teacher] + ([people] if people else []):
            who = "people" if ref == people else "judge"
            row = run_splits(s, ref, args)
            results[f"{name} vs {who}"] = row
            for t, r in row["targets"].items():
                print(f"{name:6} vs {who:6} target {t}: validity {r['validity']:.2f} "
                      f"guaranteed {r['guaranteed']:.2f} kept {r['kept']:.3f} "
                      f"judge/1000 {r['judge_per_1000']:.0f}")  # fmt: skip
        curves[name] = curve(s, teacher, args.delta)
        if name == "sycon":  # the same questions trained on, a new answering model
            rows = [run_splits(one, teacher, args) for one in
                    score_held_out_models(args.data, teacher, rubric, args)]  # fmt: skip
            results["sycon vs judge, answering model held out"] = pooled(rows)
            for t, r in results["sycon vs judge, answering model held out"]["targets"].items():
                print(f"sycon, model held out, target {t}: validity {r['validity']:.2f} "
                      f"guaranteed {r['guaranteed']:.2f} kept {r['kept']:.3f} "
                      f"judge/1000 {r['judge_per_1000']:.0f}")  # fmt: skip
    meta = {
        "splits": args.splits,
        "train_share": args.train,
        "delta": args.delta,
        "tier": args.tier,
        "smoke": args.smoke,
        "seconds": round(time.time() - t0, 1),
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta, "results": results,
               "curves": {k: {"point": v["point"]} for k, v in curves.items()}}  # fmt: skip
    if args.out.exists() and not args.smoke:  # one file, one entry per tier
        old = json.loads(args.out.read_text())
        old = old if "meta" not in old else {old["meta"]["tier"]: old}
        payload = {**old, args.tier: payload}
    else:
        payload = {args.tier: payload}
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    if args.png is not None:
        draw(curves, args.png, args.tier)
    print(f"-> {args.out} ({meta['seconds']} s)")


if __name__ == "__main__":
    main()
