"""Audit and calibration on the full real data: agreement figures, calibration gains, timings.

1. The audit report on all 1,500 XSTest responses (reference ``human:final``,
   intervals clustered by prompt, sliced by answering model): each source's n,
   accuracy and kappa with its interval, GPT-4's kappa per answering model, and
   how long the report takes.
2. Cross-fitted calibration (5 folds grouped by prompt) of GPT-4's one-hot
   XSTest verdicts and of the four LLMBar judges' verdicts against people, for
   every method: held-out ECE, Brier score and NLL before and after.
3. The same for a linear reward model distilled from GPT-4 on 3/5 of the XSTest
   prompts and calibrated against people on the other 2/5 (graded probabilities).

Results go to ``bench/results/audit_calibrate.json``.

    nice -n 10 .venv/bin/python bench/audit_calibrate.py
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from tinyjudge.audit import audit
from tinyjudge.calibrate import CALIBRATORS, calibrate_source_methods
from tinyjudge.datasets.importers import run_import

RESULTS = Path(__file__).parent / "results" / "audit_calibrate.json"


METRICS_SHOWN = ("ece", "brier", "nll")


def _calibration(
    labels, items, reference: str, source: str, group_by: str | None, n_boot: int = 200
) -> dict:
    """Each method's cross-fitted figures for ``source`` against ``reference`` (the library's
    ``calibrate_source_methods``, every method side by side)."""
    done = calibrate_source_methods(
        labels, source=source, human=reference, items=items, group_by=group_by, n_boot=n_boot
    )
    first = next(iter(done.values()))
    out: dict = {"n": first.n, "classes": first.classes}
    for method, c in sorted(done.items()):
        held_out = c.metrics  # {"before": {metric: Interval}, "after": {...}}
        out[method] = {m: {k: held_out[k][m].value for k in held_out} for m in METRICS_SHOWN}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true", help="20 resamples (the smoke test)")
    args = ap.parse_args()
    if args.smoke:
        args.n_boot = 20
    cal_boot = min(200, args.n_boot)  # the calibration figures' resamples

    xs = run_import("xstest", args.data / "xstest")
    if args.smoke:  # the first 300 replies (60 prompts) and their labels
        xs.items = xs.items[:300]
        keep = {it.id for it in xs.items}
        xs.labels = [lab for lab in xs.labels if lab.item_id in keep]
    t0 = time.perf_counter()
    report = audit(
        xs.labels,
        xs.items,
        reference="human:final",
        group_by="metadata.prompt_id",
        slice_by=["metadata.answering_model"],
        n_boot=args.n_boot,
    )
    seconds = time.perf_counter() - t0
    against = [r for r in report.pairs if r.a == "human:final"]
    shown = ("n", "unscored", "accuracy", "kappa", "alpha")  # each interval {value, low, high}
    agreement = {r.b: {k: v for k, v in r.to_dict().items() if k in shown} for r in against}
    per_model = {
        model: next(r.kappa.value for r in rows if r.b == "judge:gpt-4")
        for model, rows in report.slices["metadata.answering_model"].items()
    }
    print(f"XSTest audit report ({args.n_boot} resamples): {seconds:.1f} s")
    for r in against:
        print(
            f"  {r.b:<26} n={r.n:>5} unscored={r.unscored:>2} "
            f"acc={r.accuracy.value:.3f} kappa={r.kappa}"
        )
    print("  GPT-4 kappa by answering model:", {m: round(k, 3) for m, k in per_model.items()})

    calibration = {
        "xstest judge:gpt-4": _calibration(
            xs.labels, xs.items, "human:final", "judge:gpt-4", "metadata.prompt_id", cal_boot
        )
    }
    lb = run_import("llmbar", args.data / "llmbar")
    for source in sorted({lab.source for lab in lb.labels if lab.source.startswith("judge:")}):
        calibration[f"llmbar {source}"] = _calibration(
            lb.labels, lb.items, "human:gold", source, None, cal_boot
        )
    import zlib

    from tinyjudge.distill import distill

    def side(it) -> bool:
        return zlib.crc32(it.metadata["prompt_id"].encode()) % 5 < 3

    train = [it for it in xs.items if side(it)]
    held = [it for it in xs.items if not side(it)]
    rm = distill(train, xs.labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id")
    held_ids = {it.id for it in held}
    human = [lab for lab in xs.labels if lab.source == "human:final" and lab.item_id in held_ids]
    calibration["xstest rm:linear (held-out prompts)"] = _calibration(
        human + rm.model.score_items(held), held, "human:final", f"rm:{rm.model.name}",
        "metadata.prompt_id", cal_boot,
    )  # fmt: skip
    print("cross-fitted calibration, held-out ECE before -> after:")
    for name, c in calibration.items():
        cells = ", ".join(
            f"{m} {c[m]['ece']['before']:.3f}->{c[m]['ece']['after']:.3f}"
            for m in sorted(CALIBRATORS)
        )
        print(f"  {name:<42} n={c['n']:>4} {cells}")

    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "report_seconds": round(seconds, 2),
        "n_boot": args.n_boot,
        "xstest_agreement": agreement,
        "xstest_gpt4_kappa_by_model": per_model,
        "calibration": calibration,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
