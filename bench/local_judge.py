"""The local judge (llama.cpp + the packaged 1.5B model) measured against people and GPT-4.

XSTest: N items drawn at random (seed 0) from ``../shared/data/xstest``, judged once
on the ``compliance`` rubric with the local judge's defaults (the model's first pass:
no prompt tuning on these answers). Reported: Cohen's kappa with ``human:final`` and
with ``judge:gpt-4`` with bootstrap CIs over prompts (the project's audit report, the
same numbers GPT-4 gets on the same items), parse and unscored rates, judgments per
second and server CPU-seconds per item, prompt and completion tokens, and what
cross-fitted calibration on the human labels does to its probabilities (ECE, Brier).
LLMBar: P pairs judged in both orders on ``instruction_following``; the position flip
rate and accuracy against the gold preference.

Judgments are cached in ``runs/local_judge.sqlite``, so an interrupted run resumes;
results are saved after each part to ``bench/results/local_judge.json``.

    nice -n 10 .venv/bin/python bench/local_judge.py --n 100 --pairs 30

Items are taken in a fixed shuffled order (seed 0), so a smaller ``--n`` is a prefix
of a larger one; ``--xstest-until``/``--until HH:MM`` (UTC) stop a part early on a
slow machine, and the results say how many items were judged.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

from tinyjudge.audit import audit
from tinyjudge.calibrate import calibrate_source_methods
from tinyjudge.datasets.importers import run_import
from tinyjudge.judge import Judge
from tinyjudge.judge.local import LOCAL_DEFAULTS, LlamaServer, default_gguf, model_name

RESULTS = Path(__file__).parent / "results" / "local_judge.json"
CACHE = Path(__file__).parents[1] / "runs" / "local_judge.sqlite"


def _run(
    judge: Any, items: list, server_cpu: Any, deadline: float, chunk: int = 5
) -> tuple[list, dict[str, Any]]:
    """Judge ``items`` in order, a chunk at a time, until they are done or ``deadline`` passes."""
    cpu0, t0 = server_cpu(), time.perf_counter()
    labels: list = []
    calls = hits = refused = 0
    formats: list[str] = []
    for at in range(0, len(items), chunk):
        if time.time() > deadline:
            break
        labels += judge.run(items[at : at + chunk])
        s = judge.summary
        calls, hits, refused = calls + s.calls, hits + s.cache_hits, refused + len(s.fallbacks)
        formats += s.fallbacks
        print(f"  {len(labels)}/{len(items)} judged, {time.perf_counter() - t0:.0f}s", flush=True)
    wall, cpu = time.perf_counter() - t0, (server_cpu() or 0.0) - (cpu0 or 0.0)
    judged = calls - refused  # calls that were judgments (not formats the server refused)
    fresh = [lab.usage or {} for lab in labels if not (lab.usage or {}).get("cached")]
    perf = {
        "items": len(labels),
        "calls": calls,
        "cache_hits": hits,
        "response_format": judge.summary.response_format,
        "fallbacks": formats,
        "wall_seconds": round(wall, 1),
        "server_cpu_seconds": round(cpu, 1),
        "judgments_per_second": round(judged / wall, 4) if judged and wall else None,
        "cpu_seconds_per_judgment": round(cpu / judged, 1) if judged else None,
        "prompt_tokens_mean": round(sum(u.get("prompt_tokens", 0) for u in fresh) / len(fresh))
        if fresh
        else None,
        "completion_tokens_mean": round(
            sum(u.get("completion_tokens", 0) for u in fresh) / len(fresh), 1
        )
        if fresh
        else None,
    }
    return labels, perf


METRICS_SHOWN = ("ece", "brier", "nll")


def _calibration(labels: list, items: list, source: str) -> dict[str, Any]:
    """Each method's cross-fitted figures against the final human label (the library's
    ``calibrate_source_methods``, every method side by side)."""
    done = calibrate_source_methods(
        labels, source=source, human="human:final", items=items,
        group_by="metadata.prompt_id", n_boot=200,
    )  # fmt: skip
    first = next(iter(done.values()))
    out: dict = {"n": first.n, "classes": first.classes}
    for method, c in sorted(done.items()):
        held_out = c.metrics  # {"before": {metric: Interval}, "after": {...}}
        out[method] = {m: {k: held_out[k][m].value for k in held_out} for m in METRICS_SHOWN}
    return out


def _deadline(hhmm: str | None) -> float:
    """The epoch time of the next UTC ``HH:MM`` (infinity for None)."""
    if hhmm is None:
        return float("inf")
    h, m = (int(x) for x in hhmm.split(":"))
    now = time.time()
    day = now - now % 86400
    at = day + h * 3600 + m * 60
    return at if at > now - 3600 else at + 86400


def _save(out: Path, result: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2, default=float) + "\n")
    tmp.replace(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="XSTest items")
    ap.add_argument("--pairs", type=int, default=30, help="LLMBar pairs (each in both orders)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--xstest-until", default=None, help="UTC HH:MM: stop judging XSTest items then"
    )
    ap.add_argument("--until", default=None, help="UTC HH:MM: stop judging LLMBar pairs then")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true", help="2 XSTest items, no pairs (a test)")
    args = ap.parse_args()
    if args.smoke:
        args.n, args.pairs, args.n_boot = 2, 0, 20
    args.cache.parent.mkdir(parents=True, exist_ok=True)

    xs = run_import("xstest", args.data / "xstest")
    have = {lab.item_id for lab in xs.labels if lab.source == "human:final"}
    pool = sorted(it.id for it in xs.items if it.id in have)
    random.Random(0).shuffle(pool)  # a smaller --n is a prefix of a larger one
    by_id = {it.id: it for it in xs.items}
    items = [by_id[i] for i in pool[: args.n]]
    result: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "command": "bench/local_judge.py " + " ".join(sys.argv[1:]),
        "n_asked": args.n,
        "pairs_asked": args.pairs,
        "judge_options": LOCAL_DEFAULTS,
        "threads": args.threads,
    }
    gguf, name = default_gguf(), model_name(None)
    server = LlamaServer(gguf, threads=args.threads, model=name)
    with server as url:
        judge = Judge("compliance", name, base_url=url, cache=args.cache, **LOCAL_DEFAULTS)
        labels, perf = _run(judge, items, server.cpu_seconds, _deadline(args.xstest_until))
        items = items[: len(labels)]  # what was judged before the deadline
        source = judge.source
        ok = [lab for lab in labels if lab.status == "ok"]
        with_logprobs = [lab for lab in ok if lab.probs and max(lab.probs.values()) < 1.0]
        reasons: dict[str, int] = {}
        for lab in labels:
            if lab.status != "ok":
                key = (lab.reason or "?").split(":")[0][:60]
                reasons[key] = reasons.get(key, 0) + 1
        keep = {it.id for it in items}
        ref = [lab for lab in xs.labels if lab.item_id in keep]
        report = audit(
            ref + labels,
            items,
            reference="human:final",
            group_by="metadata.prompt_id",
            n_boot=args.n_boot,
        )
        shown = ("n", "unscored", "accuracy", "kappa")  # each interval {value, low, high}
        pairs = {
            f"{r.a} vs {r.b}": {k: v for k, v in r.to_dict().items() if k in shown}
            for r in report.pairs
            if {r.a, r.b} & {"human:final", "judge:gpt-4"}
            and {r.a, r.b} <= {"human:final", "judge:gpt-4", source}
        }
        result["xstest"] = {
            "source": source,
            "n": len(items),
            "ok": len(ok),
            "unscored_rate": round(1 - len(ok) / len(items), 4),
            "unscored_reasons": reasons,
            "share_with_logprob_distribution": round(len(with_logprobs) / max(len(ok), 1), 4),
            "label_counts": {
                c: sum(lab.label == c for lab in ok) for c in sorted({lab.label for lab in ok})
            },
            "agreement": pairs,
            "performance": perf,
        }
        print(json.dumps(result["xstest"], indent=2, default=float))
        try:
            result["calibration_on_human"] = _calibration(ref + labels, items, source)
        except Exception as e:  # too few items for cross-fitting: say so, keep the rest
            result["calibration_on_human"] = {"error": f"{type(e).__name__}: {e}"}
        _save(args.out, result)

    if args.pairs:
        lb = run_import("llmbar", args.data / "llmbar")
        pool = sorted(it.id for it in lb.items)
        random.Random(0).shuffle(pool)
        lb_by_id = {it.id: it for it in lb.items}
        pairs_items = [lb_by_id[i] for i in pool[: args.pairs]]
        server = LlamaServer(gguf, threads=args.threads, model=name)
        with server as url:
            judge = Judge(
                "instruction_following", name, base_url=url, cache=args.cache, **LOCAL_DEFAULTS
            )
            plabels, pperf = _run(
                judge, pairs_items, server.cpu_seconds, _deadline(args.until), chunk=1
            )
        gold = {lab.item_id: lab.label for lab in lb.labels if lab.source == "human:gold"}
        scored = [lab for lab in plabels if lab.status == "ok" and lab.item_id in gold]
        both = [
            lab for lab in plabels if lab.orders and all(v is not None for v in lab.orders.values())
        ]
        flips = sum(lab.consistent is False for lab in both)
        result["llmbar"] = {
            "pairs": len(plabels),
            "both_orders_scored": len(both),
            "flips": flips,
            "flip_rate": round(flips / len(both), 4) if both else None,
            "ok": len(scored),
            "accuracy_vs_gold": round(
                sum(lab.label == gold[lab.item_id] for lab in scored) / len(scored), 4
            )
            if scored
            else None,
            "performance": pperf,
        }
        print(json.dumps(result["llmbar"], indent=2, default=float))
        _save(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
