"""Training time, scoring throughput, peak memory and size on disk of each distilled tier.

On the full XSTest import (1,500 items; GPT-4 labels): trains the tier (the probe
with a cold embedding cache, so embedding is counted), then scores at batch 32.
The encoder tier is not trained here (see distill_fidelity.py for its training
time): pass a model directory from ``tinyjudge distill --tier encoder``; it is
timed on items that fill 256 tokens, under each runtime (torch fp32, torch bf16
autocast, ONNX Runtime fp32, ONNX Runtime dynamic int8), with each runtime's
agreement against torch fp32, and, measured in the same run, this machine's own
fp32 and bf16 matrix-multiply throughput (2048 x 2048) with each runtime's
items/s as a share of the ceiling that throughput implies (dense-layer FLOPs per
item from the model's config: about 5.4 GFLOP for MiniLM at 256 tokens). Machines
differ (AMX or not), so the share is the figure to quote, not the items/s.
One tier per process, so peak memory is per tier.
Results merge into ``bench/results/distill_speed.json``.

    nice -n 10 .venv/bin/python bench/distill_speed.py --tier linear
    nice -n 10 .venv/bin/python bench/distill_speed.py --tier probe
    nice -n 10 .venv/bin/python bench/distill_speed.py --tier encoder --model-dir runs/xs_encoder
    nice -n 10 .venv/bin/python bench/distill_speed.py --tier transformer --device cpu

``--tier transformer`` trains and scores each backbone (MiniLM, and Qwen2- and
Llama-shaped decoders built from configs) on ``--device``, in fp32 and bf16
(where the CPU has bf16 units; bf16 on a GPU), and reports training examples/s
and tokens/s, inference items/s and each as a share of the matmul ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from gpu_check import SMALL_DECODER, linear_params, matmul_tflops

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import load_model, make_model, training_set
from tinyjudge.distill.hf import bf16_fast, bf16_speedup
from tinyjudge.records import Item, Message
from tinyjudge.testing import tiny_decoder

RESULTS = Path(__file__).parent / "results" / "distill_speed.json"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _dir_mib(d: Path) -> float:
    return sum(p.stat().st_size for p in d.iterdir() if p.is_file()) / 2**20


def _throughput(model, items: list[Item], batch: int = 32, repeat: int = 1):
    """Items per second at ``batch`` items per call, and the last pass's probabilities."""
    model.predict_proba(items[:batch])  # warm-up: lazy loads, first-call allocations
    t0 = time.perf_counter()
    for _ in range(repeat):
        P = np.vstack(
            [model.predict_proba(items[s : s + batch]) for s in range(0, len(items), batch)]
        )
    return repeat * len(items) / (time.perf_counter() - t0), P


def matmul_gflops(dtype: str, n: int = 2048, seconds: float = 2.0) -> float:
    """Best sustained GFLOP/s of an n x n x n torch matmul in ``dtype`` on this CPU."""
    return 1e3 * matmul_tflops(dtype, "cpu", n, seconds)


def gflop_per_item(config: object, tokens: int) -> float:
    """Dense-layer FLOPs of one item (2 x tokens x 12 H^2 per layer); attention not counted."""
    h, layers = config.hidden_size, config.num_hidden_layers
    ffn = getattr(config, "intermediate_size", 4 * h)
    return 2 * tokens * layers * (4 * h * h + 2 * h * ffn) / 1e9


def _long_items(items: list[Item], tokenizer, n: int, tokens: int = 256) -> list[Item]:
    """Real XSTest replies, extended with their own text until they pass ``tokens``."""
    out = []
    for it in items[:n]:
        reply = it.messages[-1].text or "ok"
        while len(tokenizer(reply, add_special_tokens=False)["input_ids"]) < tokens:
            reply = reply + "\n" + reply
        out.append(
            Item(id=it.id, messages=[it.messages[0], Message(role="assistant", content=reply)])
        )
    return out


def transformer_speed(
    items: list[Item], ts, device: str, n_train: int, n_infer: int, results: Path = RESULTS
) -> dict:
    """Training and inference speed of each backbone and precision, with ceiling shares.

    Training: one epoch over ``n_train`` items at 128 tokens, batch 16; FLOPs are
    6 x linear weights x tokens fed (forward and backward). Inference: ``n_infer``
    items filling 256 tokens, batch 32; 2 x weights x tokens. Each share is
    against this run's own matmul ceiling of the same precision.
    """
    from tinyjudge.distill.hf import resolve_device, resolve_encoder

    on = resolve_device(device)
    texts = [m.text for it in items[:400] for m in it.messages]
    # A GPU in bf16; a CPU in fp32, and in bf16 too where it has bf16 matrix units.
    precisions = ["bf16"] if on.type != "cpu" else ["fp32"] + ["bf16"] * (bf16_speedup() > 0)

    def ceiling(precision: str) -> float:
        # Measured beside each timing: on a shared machine the load moves within a run.
        dtype = "bfloat16" if precision == "bf16" else "float32"
        return 1e3 * matmul_tflops(dtype, on.type, seconds=1.0)

    out: dict = {"device": on.type, "backbones": {}}
    with tempfile.TemporaryDirectory() as tmp:
        bases = {
            "all-MiniLM-L6-v2 (encoder, pretrained)": resolve_encoder("all-MiniLM-L6-v2"),
            "qwen2-shaped decoder (random, 6 x 384)": str(
                tiny_decoder(
                    texts, Path(tmp) / "qwen2", family="qwen2", shape=SMALL_DECODER, vocab_size=4000
                )
            ),
            "llama-shaped decoder (random, 6 x 384)": str(
                tiny_decoder(
                    texts, Path(tmp) / "llama", family="llama", shape=SMALL_DECODER, vocab_size=4000
                )
            ),
        }
        train_items = ts.items[:n_train]
        for label, base in bases.items():
            rows = {}
            for precision in precisions:
                bf16 = precision == "bf16"
                model = make_model(
                    "transformer", "compliance", base=base, max_length=128, epochs=1,
                    batch_size=16, device=device, train_bf16=bf16, precision=precision,
                    best_epoch=False,
                )  # fmt: skip
                before = ceiling(precision)
                t0 = time.perf_counter()
                model.fit(train_items, ts.y_hard[:n_train])
                train_s = time.perf_counter() - t0
                train_ceiling = (before + ceiling(precision)) / 2
                fed = model.codec_.encode(model.views_of(train_items), 128).ids
                tokens = sum(map(len, fed))
                weights = linear_params(model.model_)
                long = _long_items(items[::5], model.tokenizer_, n_infer)
                model.set_params(max_length=256)
                speed, _ = _throughput(model, long)
                infer_ceiling = (train_ceiling + ceiling(precision)) / 2
                infer_tokens = np.mean(
                    [len(r) for r in model.codec_.encode(model.views_of(long), 256).ids]
                )
                rows[precision] = {
                    "train_examples_per_s": n_train / train_s,
                    "train_tokens_per_s": tokens / train_s,
                    "train_share_of_matmul_ceiling": 6 * weights * tokens / train_s / 1e9
                    / train_ceiling,
                    "inference_items_per_s": speed,
                    "inference_tokens_per_item": float(infer_tokens),
                    "inference_share_of_matmul_ceiling": speed * 2 * weights * infer_tokens / 1e9
                    / infer_ceiling,
                    "matmul_ceiling_gflops": {"train": train_ceiling, "inference": infer_ceiling},
                }  # fmt: skip
                print(label, precision, json.dumps(rows[precision]), flush=True)
            out["backbones"][label] = {
                "linear_weights_millions": weights / 1e6,
                "codec": model.codec_.kind,
                **rows,
            }
            # Saved after each backbone: a run cut short keeps what it measured.
            _save(
                results,
                "transformer",
                {**out, "n_train": n_train, "n_infer": n_infer, "partial": True},
            )
    out["n_train"], out["n_infer"] = n_train, n_infer
    return out


def _save(out: Path, tier: str, result: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads(out.read_text()) if out.exists() else {}
    saved[tier] = result
    out.write_text(json.dumps(saved, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).parents[2] / "shared/data/xstest"))
    ap.add_argument("--tier", required=True, choices=["linear", "probe", "encoder", "transformer"])
    ap.add_argument("--model-dir", help="encoder tier: a trained model directory")
    ap.add_argument("--n-encoder", type=int, default=256, help="items timed per runtime")
    ap.add_argument("--device", default="cpu", help="transformer tier: auto | cpu | cuda | mps")
    ap.add_argument("--n-train", type=int, default=128, help="transformer tier: items trained")
    ap.add_argument("--smoke", action="store_true", help="200 items (the smoke test)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    load0 = os.getloadavg()[0]
    data = run_import("xstest", Path(args.data))
    if args.smoke:
        data.items = data.items[:200]  # the labels of the others are left out by training_set
        args.n_encoder = min(args.n_encoder, 16)
    ts = training_set(data.items, data.labels, "judge:gpt-4", "compliance")
    result: dict = {"tier": args.tier, "n_items": len(data.items), "batch": 32}
    if args.tier == "transformer":
        result.update(
            transformer_speed(data.items, ts, args.device, args.n_train, args.n_encoder, args.out)
        )
    elif args.tier in ("linear", "probe"):
        with tempfile.TemporaryDirectory() as tmp:
            params = {"cache_dir": tmp} if args.tier == "probe" else {}
            model = make_model(args.tier, "compliance", **params)
            t0 = time.perf_counter()
            model.fit(ts.items, ts.y_hard)
            result["train_seconds"] = time.perf_counter() - t0
            if args.tier == "probe":
                result["train_note"] = "cold embedding cache: embedding of every item included"
                result["tokens_seen"] = model.card_["tokens_seen"]
            # Scoring: linear reads text only; the probe's embeddings for these items are
            # now cached, so time it both warm and on a fresh cache (new items).
            result["items_per_s"] = _throughput(
                model, data.items, repeat=3 if args.tier == "linear" else 1
            )[0]
            if args.tier == "probe":
                with tempfile.TemporaryDirectory() as tmp2:
                    cold = make_model("probe", "compliance", cache_dir=tmp2)
                    cold.__dict__.update(
                        {k: v for k, v in model.__dict__.items() if k.endswith("_")}
                    )
                    result["items_per_s_cold_cache"] = _throughput(cold, data.items[:512])[0]
                result["items_per_s_warm_cache"] = result.pop("items_per_s")
            d = model.save(Path(tmp) / "model")
            result["size_on_disk_mib"] = _dir_mib(d)
    else:
        if not args.model_dir:
            ap.error("--tier encoder needs --model-dir")
        from tinyjudge.distill import export_onnx

        d = Path(args.model_dir)
        if not (d / "model_int8.onnx").exists():
            export_onnx(d, int8=True)
        base = load_model(d, calibrated=False)
        items = _long_items(data.items[::5], base.tokenizer_, args.n_encoder)
        result["trained_max_length"] = base.max_length
        runtimes = {}
        ref = None
        for label, params in [
            ("torch_fp32", {"precision": "fp32", "runtime": "torch"}),
            ("torch_bf16_autocast", {"precision": "bf16", "runtime": "torch"}),
            ("onnxruntime_fp32", {"precision": "fp32", "runtime": "onnx"}),
            ("onnxruntime_int8_dynamic", {"precision": "fp32", "runtime": "onnx-int8"}),
        ]:
            # The model may have been trained shorter; time it at the full 256 tokens.
            m = load_model(d, calibrated=False).set_params(max_length=256, **params)
            speed, P = _throughput(m, items)
            ref = P if ref is None else ref  # torch fp32 comes first: the reference
            runtimes[label] = {
                "items_per_s": speed,
                "label_agreement_with_fp32": float(np.mean(P.argmax(1) == ref.argmax(1))),
                "max_abs_prob_diff_vs_fp32": float(np.abs(P - ref).max()),
            }
            print(label, runtimes[label], flush=True)
        ceiling = {"fp32": matmul_gflops("float32"), "bf16": matmul_gflops("bfloat16")}
        gflop = gflop_per_item(base.model_.config, 256)
        for label, r in runtimes.items():
            # fp32 runtimes against the fp32 ceiling; bf16 autocast (and the int8
            # runtime, whose best case is no better than bf16 here) against bf16's.
            peak = ceiling["fp32"] if label.endswith("fp32") else ceiling["bf16"]
            r["share_of_matmul_ceiling"] = r["items_per_s"] * gflop / peak
            print(
                f"{label}: {r['items_per_s']:.1f} items/s = {r['share_of_matmul_ceiling']:.0%} "
                f"of the {peak:.0f} GFLOP/s matmul ceiling ({gflop:.2f} GFLOP an item)",
                flush=True,
            )
        result.update(
            {
                "matmul_gflops_2048": ceiling,
                "gflop_per_item": gflop,
                "tokens_per_item": 256,
                "n_timed": len(items),
                "runtimes": runtimes,
                "default": "torch_bf16_autocast" if bf16_fast() else "torch_fp32",
                "cpu_has_bf16_units": bf16_speedup() > 0,
                "bf16_matmul_speedup_1024": bf16_speedup(),
                "bf16_is_default": bf16_fast(),
                "size_on_disk_mib": {
                    "safetensors_fp32": (d / "model.safetensors").stat().st_size / 2**20,
                    "onnx_fp32": (d / "model.onnx").stat().st_size / 2**20,
                    "onnx_int8": (d / "model_int8.onnx").stat().st_size / 2**20,
                },
                "train_seconds": "see distill_fidelity.json fit_seconds_mean (per fold)",
            }
        )
    result["peak_rss_mib"] = _peak_mib()
    result["load_average_1min"] = {"start": load0, "end": os.getloadavg()[0]}
    result["cpus"] = os.cpu_count()
    result["command"] = " ".join([".venv/bin/python", *sys.argv])
    print(json.dumps(result, indent=2))
    _save(args.out, args.tier, result)


if __name__ == "__main__":
    main()
