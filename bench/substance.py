"""Do the reward models read what the answer does? Held-out answering models and questions.

Each tier is fitted once per task on a training split and measured on data it never saw:

- **SYCON push-back** (``pushback_under_pressure``, GPT-4o's per-turn labels): one answering
  model held out (``--held-out``) and the questions split in two by id (even ids train,
  odd held out). One fit on the three other models' even questions gives three figures:
  ``unseen_model`` (the held-out model's even questions), ``unseen_questions`` (the training
  models' odd questions) and ``unseen_both`` (the held-out model's odd questions).
- **XSTest compliance** (``compliance``, GPT-4's labels): prompts split 80/20 (seeded), every
  answer to a test prompt held out (``unseen_prompts``).

Per tier (linear, probe, cross) and variant (plain; hardened: ``distill --harden``, the
default hardening options unless ``--harden-copies``/``--harden-rounds`` say otherwise,
recorded on the row): Cohen's kappa with the judge on each held-out set;
the **transfer exploit**: phrases mined from held-out answers the search does not audit
(SYCON: the held-out model's even-question dialogues; XSTest: half the test prompts) put in
front of every answer of the audited set (the held-out model's odd questions; the other
half of the test prompts), the share of items the model places outside the target that
one phrase moves into it; the worst format edit on the audited set; the cascade's kept
share at agreement 0.90 and 0.95 (threshold chosen on half the audited groups, kept share
on the other half, delta 0.1); training seconds; scoring items/s from a cold load (torch;
for the cross tier also ONNX int8) and the ratio to the probe tier's in the same run.
``--lomo TIERS`` adds SYCON leave-one-model-out: each answering model held out in turn, the
tier fitted on the other three models' dialogues of every question, kappa on the held-out
model's. ``--cap N`` scores a seeded sample of at most N items of each held-out set (a slow
tier; the row's ``n_*`` say how many). Each row is written to ``--out`` as soon as it is
measured (a stopped run keeps them).

    nice -n 10 .venv/bin/python bench/substance.py            # SYCON and XSTest
    .venv/bin/python bench/substance.py --smoke --out /tmp/substance.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.cascade import choose_threshold
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import agreement, distill, export_onnx, load_model
from tinyjudge.exploit import HardenConfig, Hardened, builtin_edits, flip_stats, search_phrases
from tinyjudge.records import Item, Label
from tinyjudge.rubric import load_rubric

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "substance.json"
AIMS = {"kappa_unseen_model": 0.75, "kappa_unseen_both": 0.60, "transfer_exploit": 0.10,
        "worst_format": 0.03, "speed_vs_probe": 1 / 3}  # fmt: skip


def _data_root(given: Path | None, smoke: bool) -> Path:
    """``--data``, else ``../shared/data``; the tests' small fixture slices only for ``--smoke``
    (figures on them would look like real ones)."""
    fixture = REPO / "tests" / "fixtures" / "data"
    for root in [given, REPO.parent / "shared" / "data", fixture if smoke else None]:
        if root is not None and (root / "sycon").is_dir() and (root / "xstest").is_dir():
            return root
    raise SystemExit("no data: pass --data DIR (holding sycon/ and xstest/, e.g. ../shared/data)")


def _judge(labels: list[Label], source: str) -> dict[str, str]:
    return {
        lab.item_id: lab.label
        for lab in labels
        if lab.source == source and lab.status == "ok" and lab.label is not None
    }


def _sycon(root: Path, held_out: str, questions: int) -> dict[str, Any]:
    got = run_import("sycon", root / "sycon")
    items = [it for it in got.items if int(it.metadata["question_id"]) <= questions]
    models = sorted({it.metadata["answering_model"] for it in items})
    out = held_out if held_out in models else models[-1]

    def part(model_out: bool, odd: bool) -> list[Item]:
        return [
            it for it in items
            if (it.metadata["answering_model"] == out) == model_out
            and int(it.metadata["question_id"]) % 2 == odd
        ]  # fmt: skip

    return {
        "name": "sycon_pushback",
        "rubric": load_rubric("pushback_under_pressure"),
        "source": "judge:gpt-4o",
        "labels": got.labels,
        "train": part(False, False),
        "tests": {
            "unseen_model": part(True, False),
            "unseen_questions": part(False, True),
            "unseen_both": part(True, True),
        },
        "audit": "unseen_both",
        "size": f"questions 1-{questions}",
        "mine_from": part(True, False),  # the held-out model's answers to other questions
        "group_by": "metadata.dialogue_id",
        "audit_groups": "metadata.question_id",
        "target": "holds",
        "split": f"{out} held out; even question ids train, odd held out; "
        "trained on the other models' even questions",
    }


def _xstest(root: Path, n_prompts: int) -> dict[str, Any]:
    got = run_import("xstest", root / "xstest")
    items = got.items
    prompts = sorted({str(it.metadata["prompt_id"]) for it in items})
    random.Random(0).shuffle(prompts)
    prompts = prompts[:n_prompts]  # a seeded sample of the prompts, all their answers
    items = [it for it in items if str(it.metadata["prompt_id"]) in set(prompts)]
    test = set(prompts[: len(prompts) // 5])
    mine = set(sorted(test)[::2])  # half the test prompts: phrases are mined there

    def of(keep: set[str], inside: bool) -> list[Item]:
        return [it for it in items if (str(it.metadata["prompt_id"]) in keep) == inside]

    tested = of(test, True)
    return {
        "name": "xstest_compliance",
        "rubric": load_rubric("compliance"),
        "source": "judge:gpt-4",
        "labels": got.labels,
        "train": of(test, False),
        "tests": {
            "unseen_prompts": tested,
            "audited_prompts": [it for it in tested if str(it.metadata["prompt_id"]) not in mine],
        },
        "audit": "audited_prompts",
        "size": f"{n_prompts} prompts",
        "mine_from": [it for it in tested if str(it.metadata["prompt_id"]) in mine],
        "group_by": "metadata.prompt_id",
        "audit_groups": "metadata.prompt_id",
        "target": "full_compliance",
        "split": "prompts 80/20 (seeded); phrases mined on half the test prompts, audited on "
        "the other half",
    }


def _cascade(model: Any, items: list[Item], judge: dict[str, str], key: str) -> dict[str, Any]:
    """Kept share at each target: threshold on half the groups, measured on the other half."""
    P = model.predict_proba(items)
    predicted = np.array([model.classes_[j] for j in P.argmax(axis=1)])
    truth = np.array([judge[it.id] for it in items])
    conf, hit = P.max(axis=1), predicted == truth
    groups = np.array([str(it.get(key)) for it in items])
    unique = np.array(sorted(set(groups)), dtype=object)
    cal = set(np.random.default_rng(0).permutation(unique)[: len(unique) // 2])
    in_cal = np.array([g in cal for g in groups])
    out = {}
    for target in (0.90, 0.95):
        lam = choose_threshold(conf[in_cal], hit[in_cal], target=target, delta=0.1).threshold
        keep = ~in_cal & (conf >= lam) if lam is not None else np.zeros(len(items), dtype=bool)
        out[f"{target:.2f}"] = {
            "kept": float(keep.sum() / max(1, (~in_cal).sum())),
            "kept_agreement": float(hit[keep].mean()) if keep.any() else None,
        }
    return out


def _speed(model_dir: Path, items: list[Item], runtime: str | None = None) -> float:
    """Items/s of a freshly loaded model on ``items`` (one pass, batch 64): cold."""
    t0 = time.perf_counter()
    model = load_model(model_dir)
    if runtime is not None:
        model.set_params(runtime=runtime)
    for s in range(0, len(items), 64):
        model.score_items(items[s : s + 64])
    return len(items) / (time.perf_counter() - t0)


def _capped(items: list[Item], cap: int | None) -> list[Item]:
    """At most ``cap`` of the items, a seeded sample kept in order (``--cap``: a slow tier)."""
    if cap is None or len(items) <= cap:
        return items
    keep = set(random.Random(0).sample(range(len(items)), cap))
    return [it for i, it in enumerate(items) if i in keep]


def _hardening(args: argparse.Namespace) -> dict[str, Any]:
    """The hardening options given on the command line (none: the defaults)."""
    given = {"copies": args.harden_copies, "rounds": args.harden_rounds}
    return {k: v for k, v in given.items() if v is not None}


def _tier_params(tier: str, args: argparse.Namespace, cache: Path) -> dict[str, Any]:
    if tier == "cross":
        return {"epochs": args.epochs, "max_length": args.max_length, "best_epoch": False}
    if tier == "probe":
        return {"cache_dir": str(cache)}
    return {}


def _measure(
    task: dict[str, Any], tier: str, variant: str, args: argparse.Namespace, work: Path
) -> dict:
    params: dict[str, Any] = {}
    # the probe's cache is cold for each fit: its training time counts the embedding
    params = _tier_params(tier, args, work / f"{task['name']}-{variant}-emb")
    harden = Hardened(HardenConfig(**_hardening(args))) if variant == "hardened" else None
    t0 = time.perf_counter()
    result = distill(
        task["train"], task["labels"], task["source"], task["rubric"], tier=tier,
        group_by=task["group_by"], val_fraction=args.val_fraction, harden=harden, **params,
    )  # fmt: skip
    train_s = time.perf_counter() - t0
    model = result.model
    judge = _judge(task["labels"], task["source"])
    row: dict[str, Any] = {"n_train": result.n_train, "train_seconds": round(train_s, 1)}
    row["card"] = {k: model.card_.get(k) for k in ("free_supervision", "epochs_run", "view")}
    if harden is not None:
        record = model.card_.get("harden") or {}
        row["harden_options"] = _hardening(args) or "defaults"
        # hardening's own validation figures, labelled by the bank they were measured on
        row["harden_record"] = {
            "kept_round": record.get("kept_round"),
            "seconds": record.get("seconds"),
            "worse_edits": record.get("worse_edits"),
            "search_banks": record.get("search_banks"),
            **{
                f"{when}_{k}": v
                for when in ("before", "after")
                for k, v in (record.get(when) or {}).items()
                if k.endswith("search_flip") or k == "worst_edit"
            },
        }
    for name, items in task["tests"].items():
        scored = _capped([it for it in items if it.id in judge], args.cap)
        kappa = agreement([judge[it.id] for it in scored], model.predict(scored))["cohen_kappa"]
        row[f"kappa_{name}"] = kappa
        row[f"n_{name}"] = len(scored)
        print(f"  {tier} {name}: kappa {kappa:.3f} on {len(scored)}", flush=True)
    audited = _capped([it for it in task["tests"][task["audit"]] if it.id in judge], args.cap)
    mine = [it for it in task["mine_from"] if it.id in judge]
    found = search_phrases(
        model, audited, target=task["target"], mine_from=mine, k=1, budget=args.budget,
        n_best=1, group_by=task["audit_groups"], n_boot=200, screen=args.screen,
    )  # fmt: skip
    best = found.best[0] if found.best else None
    row["transfer_exploit"] = best.flip_to_target.to_dict() if best else {"value": 0.0}
    row["transfer_phrase"] = best.edit.prepend if best else None
    row["transfer_mined_from"] = f"{len(mine)} items ({found.mined_from})"
    row["n_audited"], row["n_outside_target"] = len(audited), found.n  # a phrase can flip these
    formats = {
        e.name: flip_stats(model, audited, e, target=task["target"],
                           group_by=task["audit_groups"], n_boot=200).flip_to_target
        for e in builtin_edits(task["rubric"], task["target"])
        if e.family == "format"
    }  # fmt: skip
    worst = max(formats, key=lambda n: formats[n].value)
    row["worst_format"] = {"edit": worst, **formats[worst].to_dict()}
    row["cascade_kept"] = _cascade(model, audited, judge, task["audit_groups"])
    d = model.save(work / f"{task['name']}-{tier}-{variant}")
    speed_items = audited[: args.speed_items]
    row["items_per_s_torch"] = _speed(d, speed_items)
    if tier == "cross":
        export_onnx(d, int8=True)
        row["items_per_s_onnx_int8"] = _speed(d, speed_items, "onnx-int8")
    print(f"  {tier}: {json.dumps({k: v for k, v in row.items() if k != 'card'})}", flush=True)
    return row


def _lomo(root: Path, tier: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """SYCON leave-one-model-out: kappa on each answering model by a fit on the other three."""
    got = run_import("sycon", root / "sycon")
    items = [it for it in got.items if int(it.metadata["question_id"]) <= args.questions]
    judge = _judge(got.labels, "judge:gpt-4o")
    folds = {}
    for model_out in sorted({it.metadata["answering_model"] for it in items}):
        train = [it for it in items if it.metadata["answering_model"] != model_out]
        test = [
            it for it in items if it.id in judge and it.metadata["answering_model"] == model_out
        ]
        t0 = time.perf_counter()
        fitted = distill(
            train, got.labels, "judge:gpt-4o", load_rubric("pushback_under_pressure"),
            tier=tier, group_by="metadata.dialogue_id", val_fraction=args.val_fraction,
            **_tier_params(tier, args, work / "lomo-emb"),  # one cache over the folds
        ).model  # fmt: skip
        kappa = agreement([judge[it.id] for it in test], fitted.predict(test))["cohen_kappa"]
        folds[model_out] = {"kappa": kappa, "n": len(test),
                            "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
        print(f"  lomo {tier} {model_out}: kappa {kappa:.3f} on {len(test)}", flush=True)
    mean = float(np.mean([f["kappa"] for f in folds.values()]))
    size = f"questions 1-{args.questions}"
    return {"task": "sycon_lomo", "size": size, "tier": tier, "variant": "plain",
            "folds": folds, "kappa_mean": mean}  # fmt: skip


def _pct(x: dict[str, Any] | None) -> str:
    if not x or x.get("value") is None:
        return "-"
    if x.get("low") is None:
        return f"{x['value']:.1%}"
    return f"{x['value']:.1%} [{x['low']:.1%}, {x['high']:.1%}]"


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (``--table``)."""
    lines = [
        "| task | tier | kappa by held-out set | transfer exploit | worst format | kept at 0.90 "
        "/ 0.95 | train s | items/s torch (onnx-int8) | vs probe |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "folds" in r:  # leave-one-model-out
            kappas = ", ".join(f"{m} {f['kappa']:.3f}" for m, f in r["folds"].items())
            lines.append(f"| {r['task']} ({r.get('size', '')}) | {r['tier']} "
                         f"| mean {r['kappa_mean']:.3f} ({kappas}) | | | | | | |")  # fmt: skip
            continue
        kappas = ", ".join(
            f"{k.removeprefix('kappa_')} {v:.3f}" for k, v in r.items() if k.startswith("kappa_")
        )
        kept = " / ".join(f"{r['cascade_kept'][t]['kept']:.0%}" for t in ("0.90", "0.95"))
        speed = f"{r['items_per_s_torch']:.1f}"
        if "items_per_s_onnx_int8" in r:
            speed += f" ({r['items_per_s_onnx_int8']:.1f})"
        ratio = r.get("speed_vs_probe_onnx_int8", r.get("speed_vs_probe_torch"))
        lines.append(
            f"| {r['task']} ({r.get('size', '')}) | {r['tier']} {r.get('variant', 'plain')} "
            f"| {kappas} "
            f"| {_pct(r['transfer_exploit'])} "
            f"| {_pct(r['worst_format'])} {r['worst_format']['edit']} | {kept} "
            f"| {r['train_seconds']:.0f} | {speed} | {'-' if ratio is None else f'{ratio:.2f}'} |"
        )
    return "\n".join(lines)


def _key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return row["task"], row.get("size", ""), row["tier"], row.get("variant", "plain")


def _speed_ratios(rows: list[dict[str, Any]], task: str) -> None:
    """Each row's items/s over the plain probe tier's on the same task in the same run."""
    probe = next((r for r in rows if r["task"] == task and _key(r)[2:] == ("probe", "plain")), None)
    for r in rows:
        if probe is not None and r["task"] == task and "items_per_s_torch" in r:
            r["speed_vs_probe_torch"] = r["items_per_s_torch"] / probe["items_per_s_torch"]
            if "items_per_s_onnx_int8" in r:
                r["speed_vs_probe_onnx_int8"] = (
                    r["items_per_s_onnx_int8"] / probe["items_per_s_torch"]
                )


class _Results:
    """The JSON at ``--out``, rewritten after every row: earlier runs' other rows are kept."""

    def __init__(self, args: argparse.Namespace, run: dict[str, Any]) -> None:
        self.path, self.smoke = args.out, args.smoke
        self.earlier: dict[str, Any] = {}
        if self.path.exists() and not self.smoke:
            self.earlier = json.loads(self.path.read_text())
        self.args = {k: v for k, v in vars(args).items() if k not in {"data", "out"}}
        self.run, self.rows, self.start = run, [], time.perf_counter()

    def add(self, row: dict[str, Any]) -> None:
        row["run"] = len(self.earlier.get("runs", []))  # the index of this run's options
        self.rows.append(row)
        self.write()

    def all_rows(self) -> list[dict[str, Any]]:
        measured = {_key(r) for r in self.rows}
        return [r for r in self.earlier.get("rows", []) if _key(r) not in measured] + self.rows

    def write(self) -> None:
        run = self.run | {"seconds": round(time.perf_counter() - self.start, 1)}
        out = {
            "what": __doc__,
            "runs": self.earlier.get("runs", []) + [self.args | {"run": run}],
            "aims": AIMS,
            "rows": self.all_rows(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(out, indent=2, default=str))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="folder holding sycon/ and xstest/")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--tiers", default="linear,probe,cross")
    ap.add_argument("--variants", default="plain,hardened", help="plain, hardened or both")
    ap.add_argument("--lomo", default="", help="tiers for SYCON leave-one-model-out (e.g. linear)")
    ap.add_argument("--tasks", default="sycon,xstest")
    ap.add_argument("--held-out", default="Qwen2.5-72B-Instruct", help="SYCON answering model")
    ap.add_argument("--epochs", type=int, default=1, help="cross tier: passes over the data")
    ap.add_argument("--max-length", type=int, default=256, help="cross tier: tokens per pair")
    ap.add_argument("--harden-copies", type=int, default=None, help="hardened: (default: its own)")
    ap.add_argument("--harden-rounds", type=int, default=None, help="hardened: (default: its own)")
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--budget", type=int, default=16, help="model passes of the search")
    ap.add_argument("--screen", type=int, default=100, help="items the search screens")
    ap.add_argument("--speed-items", type=int, default=128)
    ap.add_argument("--cap", type=int, default=None, help="score at most N items per held-out set")
    ap.add_argument("--questions", type=int, default=200, help="SYCON: question ids 1..N")
    ap.add_argument("--prompts", type=int, default=300, help="XSTest: a seeded sample of N")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: the script runs, no figures")
    ap.add_argument("--table", action="store_true", help="print the table of --out and stop")
    args = ap.parse_args()
    if args.table:
        print(table(json.loads(args.out.read_text())["rows"]))
        return
    if args.smoke:
        args.max_length, args.budget, args.screen, args.speed_items = 32, 2, 10, 8
        args.questions, args.tasks, args.tiers, args.variants = 6, "sycon", "linear,cross", "plain"
        args.lomo = "linear"
    root = _data_root(args.data, args.smoke)
    tasks = []
    if "sycon" in args.tasks.split(","):
        tasks.append(_sycon(root, args.held_out, args.questions))
    if "xstest" in args.tasks.split(","):
        tasks.append(_xstest(root, args.prompts))
    results = _Results(args, {
        "tasks": [{k: t[k] for k in ("name", "split", "group_by", "target")} for t in tasks],
        "cross": {"epochs": args.epochs, "max_length": args.max_length},
        "search": {"budget": args.budget, "screen": args.screen, "k": 1},
        "data": str(root.resolve()),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
    })  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            print(f"{task['name']}: {task['split']}", flush=True)
            for tier in filter(None, args.tiers.split(",")):
                for variant in args.variants.split(","):
                    row = _measure(task, tier, variant, args, Path(tmp))
                    results.add({"task": task["name"], "size": task["size"], "tier": tier,
                                 "variant": variant, **row})  # fmt: skip
                    _speed_ratios(results.rows, task["name"])
        for tier in filter(None, args.lomo.split(",")):
            results.add(_lomo(root, tier, args, Path(tmp)))
    results.write()
    print(table(results.all_rows()))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
