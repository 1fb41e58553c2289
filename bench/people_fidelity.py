"""Judge labels plus a few people's labels: which way of using both agrees most with people?

XSTest (1,500 replies, 5 per prompt). Outer 5-fold cross-validation grouped by
prompt: every reply is scored by a model that never saw its prompt. Inside each
training fold, people's labels (``human:final``) are revealed on N replies (N/5
whole prompts, drawn at random per seed, or chosen by a selection rule); GPT-4's
labels (``judge:gpt-4``) are known on every training reply. Each method trains
on that and is measured on the held-out prompts against people (Cohen's kappa,
top-label ECE) and against GPT-4 (kappa), pooled over the 5 folds, averaged over
seeds, with prompt-clustered bootstrap intervals (``tinyjudge._stats``).

Everything fitted on people's labels is fitted on training-fold rows only; the
calibration and the two-stage model read the judge model's probabilities on
those rows cross-fitted (inner 5 folds), never its in-sample ones.

    nice -n 10 .venv/bin/python bench/people_fidelity.py                       # linear grid
    nice -n 10 .venv/bin/python bench/people_fidelity.py --tier probe --n 300 --seeds 2
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.model_selection import GroupKFold

from tinyjudge._stats import bootstrap_many
from tinyjudge.audit.agreement import cohen_kappa
from tinyjudge.calibrate import expected_calibration_error, make_calibrator
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import group_keys, make_model
from tinyjudge.distill._linear import SoftLogistic
from tinyjudge.distill._people import fit_with_people, people_targets
from tinyjudge.records import index_labels

RESULTS = Path(__file__).parent / "results"
JUDGE, HUMAN, RUBRIC = "judge:gpt-4", "human:final", "compliance"
RATERS = ("human:final", "human:annotator_1", "human:annotator_2")
METHODS = {
    "judge only": "GPT-4's labels only",
    "judge + vector calibration": "judge-only model, vector scaling fitted on people's labels "
    "(on the judge model's cross-fitted probabilities)",
    "people only": "people's labels only (text features fitted on every training reply)",
    "replace": "people's label where there is one, else GPT-4's (weight 1)",
    "weighted": "as replace, people's rows weighted so both sources weigh the same",
    "weighted x3": "as weighted, people's rows weigh 3 times all judge rows together",
    "weighted x10": "as weighted, people's rows weigh 10 times all judge rows together",
    "posterior": "judge-only rows get P(person | judge label) from the confusion matrix",
    "forward": "forward loss correction by the judge's confusion matrix, fitted by EM",
    "two-stage": "judge model, then a head on text + its cross-fitted log-probs fitted "
    "on people's labels",
    "judge label as feature*": "head on text + GPT-4's label, fitted on people's labels "
    "(*needs GPT-4's label at scoring time)",
    "dawid-skene": "Dawid-Skene soft targets over GPT-4 and the raters (final, annotator 1, 2)",
}


def _oof_judge(tier: str, items: list, y_judge: np.ndarray, groups: list[str]) -> np.ndarray:
    """The judge-trained model's cross-fitted probabilities on every training row."""
    P = np.zeros((len(items), 3))
    ok = np.flatnonzero(y_judge.sum(axis=1) > 0)
    for tr, te in GroupKFold(n_splits=5).split(ok, groups=[groups[i] for i in ok]):
        m = make_model(tier, RUBRIC).fit([items[ok[i]] for i in tr], y_judge[ok[tr]])
        P[ok[te]] = m.predict_proba([items[ok[i]] for i in te])
    missing = np.flatnonzero(y_judge.sum(axis=1) == 0)
    if len(missing):  # rows the judge left unscored: any full-fold model will do
        m = make_model(tier, RUBRIC).fit([items[i] for i in ok], y_judge[ok])
        P[missing] = m.predict_proba([items[i] for i in missing])
    return P


def _text(model: Any, items: list) -> sparse.csr_matrix:
    if model.tier == "probe":
        return model._features(items)
    return model.features_.transform(items)


def _stacked(X: sparse.csr_matrix, extra: np.ndarray, scale: float = 0.5) -> sparse.csr_matrix:
    return sparse.hstack([X, sparse.csr_matrix(extra * scale)], format="csr")


class Fold:
    """One outer fold: the judge model, its cross-fitted probabilities, and the data."""

    def __init__(self, tier: str, data: Any, tr: np.ndarray, te: np.ndarray, ctx: dict) -> None:
        self.tier, self.ctx = tier, ctx
        items, J = ctx["items"], ctx["J"]
        self.tr, self.te = tr, te
        self.train = [items[i] for i in tr]
        self.test = [items[i] for i in te]
        ok = tr[J[tr].sum(axis=1) > 0]
        self.judge_model = make_model(tier, RUBRIC).fit([items[i] for i in ok], J[ok])
        self.P_judge_test = self.judge_model.predict_proba(self.test)
        self.X_train = _text(self.judge_model, self.train)
        self.X_test = _text(self.judge_model, self.test)

    @property
    def P_oof(self) -> np.ndarray:
        """The judge model's cross-fitted probabilities on the training rows (made once)."""
        if not hasattr(self, "_P_oof"):
            J, groups = self.ctx["J"], self.ctx["groups"]
            self._P_oof = _oof_judge(
                self.tier, self.train, J[self.tr], [groups[i] for i in self.tr]
            )
        return self._P_oof

    def run(self, method: str, chosen: np.ndarray) -> np.ndarray:
        """Test-fold probabilities of ``method`` with people's labels on train rows ``chosen``."""
        ctx, tr = self.ctx, self.tr
        H = ctx["H"]
        if method == "judge only":
            return self.P_judge_test
        if method == "judge + vector calibration":
            cal = make_calibrator("vector").fit(self.P_oof[chosen], H[tr[chosen]])
            return cal.predict_proba(self.P_judge_test)
        if method in ("two-stage", "judge label as feature*"):
            if method == "two-stage":
                f_tr, f_te = np.log(self.P_oof[chosen]), np.log(self.P_judge_test)
            else:
                f_tr, f_te = ctx["J"][tr[chosen]], ctx["J"][self.te]
            head = SoftLogistic(C=self.judge_model.C).fit(
                _stacked(self.X_train[chosen], f_tr), np.eye(3)[H[tr[chosen]]]
            )
            return head.predict_proba(_stacked(self.X_test, f_te))
        keep = {self.train[i].id for i in chosen}
        labels = [
            lab
            for lab in ctx["labels"]
            if lab.source == JUDGE or (lab.source.startswith("human:") and lab.item_id in keep)
        ]
        people_method = {"people only": "people", "replace": "weighted"}.get(method, method)
        weight = 1.0 if method == "replace" else None
        if method.startswith("weighted x"):  # people's rows carry r times the judge rows' mass
            people_method, share = "weighted", float(method.removeprefix("weighted x"))
            weight = share * (len(self.train) - len(chosen)) / len(chosen)
        pt = people_targets(
            self.train, labels, JUDGE, HUMAN, RUBRIC, people_method,
            human_weight=weight, raters=RATERS,
        )  # fmt: skip
        model = fit_with_people(make_model(self.tier, RUBRIC), pt)
        return model.predict_proba(self.test)


def _choose(fold: Fold, n: int, seed: int, rule: str, groups: list[str]) -> np.ndarray:
    """Training rows (indices into the fold) whose people's labels are revealed: n/5 prompts."""
    g = np.array([groups[i] for i in fold.tr])
    prompts = np.unique(g)
    rng = np.random.default_rng(seed)
    if rule == "random":
        picked = rng.choice(prompts, size=min(len(prompts), n // 5), replace=False)
    else:
        J = fold.ctx["J"][fold.tr]
        P = fold.P_oof
        if rule == "disagreement":  # the cross-fitted student doubts the judge's label
            value = 1.0 - (P * J).sum(axis=1)
        else:  # uncertainty: the student's own doubt
            value = 1.0 - P.max(axis=1)
        by_prompt = {p: value[g == p].mean() + 1e-9 * rng.random() for p in prompts}
        picked = sorted(prompts, key=lambda p: -by_prompt[p])[: n // 5]
    return np.flatnonzero(np.isin(g, picked))


def _summarise(yh: np.ndarray, yj: np.ndarray, Ps: list[np.ndarray], groups: list[str],
               n_boot: int) -> dict[str, Any]:  # fmt: skip
    def kappa_people(yh: np.ndarray, yj: np.ndarray, *Ps: np.ndarray) -> float:
        return float(np.mean([cohen_kappa(yh, P.argmax(axis=1)) for P in Ps]))

    def kappa_judge(yh: np.ndarray, yj: np.ndarray, *Ps: np.ndarray) -> float:
        ok = yj >= 0
        return float(np.mean([cohen_kappa(yj[ok], P[ok].argmax(axis=1)) for P in Ps]))

    def ece(yh: np.ndarray, yj: np.ndarray, *Ps: np.ndarray) -> float:
        return float(np.mean([expected_calibration_error(yh, P) for P in Ps]))

    stats: dict[str, Callable[..., float]] = {
        "kappa_people": kappa_people, "kappa_judge": kappa_judge, "ece_people": ece,
    }  # fmt: skip
    ci = bootstrap_many(stats, yh, yj, *Ps, groups=groups, n_boot=n_boot, seed=0)
    out: dict[str, Any] = {k: v.as_interval().to_dict() for k, v in ci.items()}
    out["kappa_people_per_seed"] = [cohen_kappa(yh, P.argmax(axis=1)) for P in Ps]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).parents[2] / "shared/data/xstest"))
    ap.add_argument("--tier", default="linear")
    ap.add_argument("--n", type=int, nargs="+", default=[50, 100, 300, 600])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--select-methods", nargs="*", default=["people only"],
                    help="also run these with the disagreement and uncertainty rules")  # fmt: skip
    ap.add_argument("--select-n", type=int, nargs="*", default=[100, 300])
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument(
        "--smoke", action="store_true", help="one size, seed and method, 2 folds (a test)"
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON and plot")
    args = ap.parse_args()
    if args.smoke:
        args.n, args.seeds, args.methods = [50], 1, ["judge only"]
        args.select_methods, args.select_n, args.n_boot = [], [], 20

    data = run_import("xstest", Path(args.data))
    if args.smoke:  # the first 300 replies (60 prompts) and their labels
        data.items = data.items[:300]
        keep = {it.id for it in data.items}
        data.labels = [lab for lab in data.labels if lab.item_id in keep]
    items = data.items
    table = index_labels(data.labels)
    names = ["full_compliance", "full_refusal", "partial_refusal"]
    index = {n: j for j, n in enumerate(names)}
    H = np.array([index[table[HUMAN][it.id].label] for it in items])
    J = np.zeros((len(items), 3))
    for i, it in enumerate(items):
        lab = table[JUDGE].get(it.id)
        if lab is not None and lab.status == "ok":
            J[i, index[lab.label]] = 1.0
    yj = np.where(J.sum(axis=1) > 0, J.argmax(axis=1), -1)
    groups = group_keys(items, "metadata.prompt_id")
    ctx = {"items": items, "labels": data.labels, "H": H, "J": J, "groups": groups}
    splits = list(GroupKFold(n_splits=2 if args.smoke else 5).split(items, groups=groups))

    t0 = time.perf_counter()
    folds = [Fold(args.tier, data, tr, te, ctx) for tr, te in splits]
    print(f"{args.tier}: judge models in "
          f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
    runs = [(n, "random", m) for n in args.n for m in args.methods]
    runs += [
        (n, rule, m)
        for n in args.select_n
        for rule in ("disagreement", "uncertainty")
        for m in args.select_methods
    ]
    gpt4 = cohen_kappa(H[yj >= 0], yj[yj >= 0])
    rows: list[dict[str, Any]] = []
    for n, rule, method in runs:
        t1 = time.perf_counter()
        seeds = 1 if method == "judge only" or rule != "random" else args.seeds
        Ps = []
        for seed in range(seeds):
            P = np.zeros((len(items), 3))
            for f in folds:
                P[f.te] = f.run(method, _choose(f, n, seed, rule, groups))
            Ps.append(P)
        row = {"tier": args.tier, "n_human": n, "select": rule, "method": method,
                   "seeds": seeds, **_summarise(H, yj, Ps, groups, args.n_boot),
                   "seconds": round(time.perf_counter() - t1, 1)}  # fmt: skip
        rows.append(row)
        kp, kj, e = row["kappa_people"], row["kappa_judge"], row["ece_people"]
        print(f"{args.tier:7s} N={n:4d} {rule:12s} {method:28s} kappa(people) "
                  f"{kp['value']:.3f} [{kp['low']:.3f}, {kp['high']:.3f}]  "
                  f"kappa(GPT-4) {kj['value']:.3f}  ECE {e['value']:.3f} "
                  f"[{e['low']:.3f}, {e['high']:.3f}]  ({row['seconds']} s)",
                  flush=True)  # fmt: skip
        _save(args, rows, gpt4, time.perf_counter() - t0)
    print(f"GPT-4's own kappa with people on the {int((yj >= 0).sum())} rows it scored: {gpt4:.3f}")


def _save(
    args: argparse.Namespace, rows: list[dict[str, Any]], gpt4: float, seconds: float
) -> None:
    """Merge this run's rows into the results JSON (after every row: a long run keeps its work)."""
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "people_fidelity.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[args.tier] = {
        "rows": rows, "gpt4_kappa_people": gpt4, "methods": METHODS,
        "command": "bench/people_fidelity.py " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
            if k not in ("data", "out", "smoke")),
        "machine": f"{platform.processor() or platform.machine()}, 2 shared cores",
        "seconds": round(seconds, 1),
    }  # fmt: skip
    path.write_text(json.dumps(saved, indent=1) + "\n")
    if args.tier == "linear":
        _plot([r for r in rows if r["select"] == "random"], gpt4, args.out / "people_fidelity.png")


def _plot(rows: list[dict[str, Any]], gpt4: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for method in dict.fromkeys(r["method"] for r in rows):
        rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["n_human"])
        x = [r["n_human"] for r in rs]
        y = [r["kappa_people"]["value"] for r in rs]
        lo = [r["kappa_people"]["low"] for r in rs]
        hi = [r["kappa_people"]["high"] for r in rs]
        ax.plot(x, y, marker="o", label=method)
        ax.fill_between(x, lo, hi, alpha=0.08)
    ax.axhline(gpt4, color="grey", ls="--", label=f"GPT-4 itself ({gpt4:.2f})")
    ax.axhline(0.80, color="black", ls=":", label="bar (0.80)")
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks([50, 100, 300, 600], ["50", "100", "300", "600"])
    ax.set_xlabel("people's labels spent (replies; 5 per prompt)")
    ax.set_ylabel("Cohen's kappa with people, held-out prompts")
    ax.set_title("XSTest, linear tier: GPT-4's labels + N of people's")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
