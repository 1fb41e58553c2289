"""The linear tier against a plain scikit-learn baseline, on the same view and the same splits.

The baseline is what an evaluation engineer would try first: ``TfidfVectorizer(ngram_range=
(1, 2), sublinear_tf=True, min_df=2)`` + ``LogisticRegression(class_weight="balanced")``
on the text the tier reads (the rubric's ``reward_model`` view: its context, references and
reply joined), scoring each item as it is. The tier is ``LinearRM`` with its defaults under
the same rubric (so with the rubric's ``combine``). Settings, each Cohen's kappa:

- ``xstest judge``: XSTest (1,500 replies), 5 folds grouped by prompt, trained on GPT-4's
  labels, kappa with GPT-4 on the held-out prompts (pooled).
- ``xstest people``: the same folds, trained on people's labels (``human:final``) of 300
  training replies (60 whole prompts drawn per seed), kappa with people (pooled, mean of seeds).
- ``sycon``: SYCON-Bench, leave one answering model out, GPT-4o's per-turn labels.
- ``in3``: IN3 (1,261 tasks, ``human:in3``), 5 shuffled folds, kappa pooled.

Results go to ``bench/results/linear_baseline.json`` (one entry per setting and view;
``--out``). ``--smoke`` runs each setting on a few items (XSTest's first 300 replies with
one draw of 50 people's labels, 40 SYCON turns per answering model, IN3's first 200 tasks),
on one BLAS thread, so the test suite checks that it runs; its kappas mean nothing.

    nice -n 10 .venv/bin/python bench/linear_baseline.py
    nice -n 10 .venv/bin/python bench/linear_baseline.py --only sycon --view answer
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import GroupKFold, KFold

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearConfig, group_keys, item_views, make_model, training_set
from tinyjudge.records import Item, index_labels
from tinyjudge.rubric import VIEWS, Rubric, load_rubric

RESULTS = Path(__file__).parent / "results" / "linear_baseline.json"
DATA = Path(__file__).parents[2] / "shared" / "data"


@dataclass
class Setting:
    """Items, their targets, the splits and what the kappa is measured against."""

    name: str
    rubric: Rubric
    items: list[Item]
    y: list[str]  # training targets
    splits: list[tuple[np.ndarray, np.ndarray]]
    truth: list[str]  # what the held-out predictions are compared with
    pooled: bool  # kappa over all folds' predictions at once, or the mean of per-fold kappas
    fold_names: list[str]
    train_subsets: list[list[np.ndarray]] | None = None  # per fold, per seed: rows to train on


def _with_view(rubric: Rubric, view: str | None) -> Rubric:
    if view is None:
        return rubric
    spec = rubric.reward_model.model_copy(update={"view": view})
    return rubric.model_copy(update={"reward_model": spec})


def _xstest(
    root: Path, view: str | None, seeds: int, n_people: int, smoke: bool = False
) -> Iterator[Setting]:
    data = run_import("xstest", root / "xstest")
    if smoke:  # the first 300 replies (60 prompts)
        data.items = data.items[:300]
    rubric = _with_view(load_rubric("compliance"), view)
    table = index_labels(data.labels)
    ok = [
        it
        for it in data.items
        if table["judge:gpt-4"].get(it.id) is not None
        and table["judge:gpt-4"][it.id].status == "ok"
        and table["human:final"].get(it.id) is not None
    ]
    judge = [table["judge:gpt-4"][it.id].label or "" for it in ok]
    people = [table["human:final"][it.id].label or "" for it in ok]
    groups = group_keys(ok, "metadata.prompt_id")
    splits = list(GroupKFold(n_splits=5).split(ok, groups=groups))
    names = [f"fold {k}" for k in range(5)]
    yield Setting("xstest judge", rubric, ok, judge, splits, judge, True, names)
    subsets = []
    for tr, _ in splits:
        prompts = sorted({groups[i] for i in tr})
        per_seed = []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            chosen = set(rng.choice(prompts, size=n_people // 5, replace=False).tolist())
            per_seed.append(np.array([i for i in tr if groups[i] in chosen]))
        subsets.append(per_seed)
    yield Setting("xstest people", rubric, ok, people, splits, people, True, names, subsets)


def _sycon(root: Path, view: str | None, smoke: bool = False) -> Iterator[Setting]:
    data = run_import("sycon", root / "sycon")
    rubric = _with_view(load_rubric("pushback_under_pressure"), view)
    ts = training_set(data.items, data.labels, "judge:gpt-4o", rubric)
    items, y = ts.items, ts.y_hard
    if smoke:  # the first 40 turns of each answering model
        seen: dict[str, int] = {}
        keep = []
        for i, it in enumerate(items):
            m = it.metadata["answering_model"]
            seen[m] = seen.get(m, 0) + 1
            if seen[m] <= 40:
                keep.append(i)
        items, y = [items[i] for i in keep], [y[i] for i in keep]
    models = sorted({it.metadata["answering_model"] for it in items})
    of = np.array([it.metadata["answering_model"] for it in items])
    splits = [(np.flatnonzero(of != m), np.flatnonzero(of == m)) for m in models]
    yield Setting("sycon", rubric, items, y, splits, y, False, models)


def _in3(root: Path, view: str | None, smoke: bool = False) -> Iterator[Setting]:
    data = run_import("in3", root / "in3")
    rubric = _with_view(load_rubric("clarification"), view)
    ts = training_set(data.items, data.labels, "human:in3", rubric)
    n = 200 if smoke else len(ts.items)  # smoke: the first 200 tasks
    items, y = ts.items[:n], ts.y_hard[:n]
    splits = list(KFold(n_splits=5, shuffle=True, random_state=0).split(items))
    names = [f"fold {k}" for k in range(5)]
    yield Setting("in3", rubric, items, y, splits, y, True, names)


def baseline_text(item: Item, rubric: Rubric) -> str:
    """What the baseline reads: the view's context, references and reply, joined."""
    v = item_views(item, rubric.reward_model.view, rubric)[0]
    return "\n".join(t for t in (v.context, v.references, v.response) if t)


def _baseline(texts: list[str], y: list[str], tr: np.ndarray, te: np.ndarray) -> list[str]:
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    X = vec.fit_transform([texts[i] for i in tr])
    lr = LogisticRegression(class_weight="balanced", max_iter=2000)
    lr.fit(X, [y[i] for i in tr])
    return list(lr.predict(vec.transform([texts[i] for i in te])))


def _tier(s: Setting, params: dict[str, Any], tr: np.ndarray, te: np.ndarray) -> list[str]:
    model = make_model("linear", s.rubric, **params)
    model.fit([s.items[i] for i in tr], [s.y[i] for i in tr])
    return model.predict([s.items[i] for i in te])


def _kappa(s: Setting, preds: list[list[str]]) -> tuple[float, list[float]]:
    """(the setting's kappa, per fold kappas) of predictions on each fold's test rows."""
    per = [
        float(cohen_kappa_score([s.truth[i] for i in te], p))
        for (_, te), p in zip(s.splits, preds, strict=True)
    ]
    if not s.pooled:
        return float(np.mean(per)), per
    truth = [s.truth[i] for _, te in s.splits for i in te]
    return float(cohen_kappa_score(truth, [x for p in preds for x in p])), per


def evaluate(s: Setting, params: dict[str, Any]) -> dict[str, Any]:
    """The tier's and the baseline's kappa on one setting (seeds averaged where drawn)."""
    texts = [baseline_text(it, s.rubric) for it in s.items]
    runs: dict[str, list[tuple[float, list[float]]]] = {"tier": [], "baseline": []}
    seeds = len(s.train_subsets[0]) if s.train_subsets else 1
    t0 = time.perf_counter()
    for seed in range(seeds):
        folds = [
            (s.train_subsets[k][seed] if s.train_subsets else tr, te)
            for k, (tr, te) in enumerate(s.splits)
        ]
        runs["tier"].append(_kappa(s, [_tier(s, params, tr, te) for tr, te in folds]))
        runs["baseline"].append(_kappa(s, [_baseline(texts, s.y, tr, te) for tr, te in folds]))
    out: dict[str, Any] = {
        "setting": s.name,
        "rubric": s.rubric.id,
        "view": s.rubric.reward_model.view,
        "combine": s.rubric.reward_model.combine,
        "references": s.rubric.reward_model.references,
        "params": params,
        "seeds": seeds,
        "folds": s.fold_names,
    }
    for who, got in runs.items():
        out[who] = {
            "kappa": float(np.mean([k for k, _ in got])),
            "per_fold": [float(np.mean(f)) for f in zip(*(p for _, p in got), strict=True)],
        }
    out["tier_minus_baseline"] = out["tier"]["kappa"] - out["baseline"]["kappa"]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=("xstest", "sycon", "in3"), default=[])
    ap.add_argument("--view", choices=list(VIEWS), help="override each rubric's view")
    ap.add_argument("--param", action="append", default=[], help="tier option KEY=VALUE")
    ap.add_argument("--seeds", type=int, default=3, help="draws of people's 300 labels")
    ap.add_argument("--n-people", type=int, default=300)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument(
        "--smoke", action="store_true", help="a few items per setting, one draw (a test)"
    )
    args = ap.parse_args()
    if args.smoke:
        args.seeds, args.n_people = 1, 50
        # one BLAS thread: on a loaded 2-core machine two spin-waiting threads made the
        # smoke run's few hundred small solves 4x slower
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1)

    params = LinearConfig.from_pairs(args.param)  # typed as the fields are
    sources = {
        "xstest": lambda: _xstest(args.data, args.view, args.seeds, args.n_people, args.smoke),
        "sycon": lambda: _sycon(args.data, args.view, args.smoke),
        "in3": lambda: _in3(args.data, args.view, args.smoke),
    }
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    for name in args.only or list(sources):
        for setting in sources[name]():
            row = evaluate(setting, params)
            key = f"{row['setting']} view={row['view']} combine={row['combine']}" + "".join(
                f" {k}={v}" for k, v in sorted(params.items())
            )
            row["machine"] = f"{platform.machine()} {platform.processor() or ''}".strip()
            row["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            results[key] = row
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2) + "\n")
            print(
                f"{key}: tier {row['tier']['kappa']:.3f}  baseline {row['baseline']['kappa']:.3f}"
                f"  ({row['tier_minus_baseline']:+.3f}; {row['seconds']:.0f}s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
