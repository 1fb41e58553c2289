"""The transformer tier on a GPU, in one run of under 10 minutes (H200-sized).

(a) all-MiniLM-L6-v2 as a cross-encoder on SYCON: leave one answering model out
    (``--held-out``), 512 tokens, ``--epochs`` epochs in bf16; Cohen's kappa with
    GPT-4o on the held-out model's turns, beside the linear tier's on the same fold.
(b) a Qwen2-0.5B-shaped sequence classifier from its config (random weights:
    speed only) trained ``--steps`` steps in bf16 through the same trainer:
    tokens/s and model-FLOPs utilisation against this GPU's own measured bf16
    matmul ceiling (6 x linear weights + 12 x layers x width x sequence per token).

``--smoke`` runs both at a tiny size on the CPU (a 2-layer BERT with MiniLM's
tokenizer, the bundled SYCON slice, a 2-layer Qwen2 shape), so the test suite
checks that the script starts and writes its JSON. Results go to
``bench/results/gpu_check.json`` (``--out``).

    .venv/bin/python bench/gpu_check.py --device cuda
    .venv/bin/python bench/gpu_check.py --smoke --out /tmp/gpu_check.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import make_model, training_set

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "gpu_check.json"
TEACHER, RUBRIC = "judge:gpt-4o", "pushback_under_pressure"

# The backbones the transformer-tier benchmarks time (this script and distill_speed.py):
# random-weight decoders of a real family's shape (speed only), each with a byte-level BPE
# trained on the benchmark's own texts and a ChatML template, saved as a causal LM as a
# user starts from (``tinyjudge.testing.tiny_decoder``); matmul FLOPs are counted from the
# model's linear layers.
# Qwen2-0.5B's shape (config.json of Qwen/Qwen2-0.5B); the CPU bench uses smaller ones.
QWEN2_0_5B = {
    "hidden_size": 896,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "vocab_size": 151936,
}
SMALL_DECODER = {
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "intermediate_size": 1536,
}


def linear_params(model: Any) -> int:
    """Weights of the body's linear layers: 2 x this x tokens is a forward pass's matmul FLOPs.

    Embeddings and the classification head are left out (a lookup; one row).
    """
    import torch

    head = {id(m) for n, m in model.named_children() if n != model.base_model_prefix}
    total = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and id(module) not in head:
            total += module.weight.numel()
    return total


def matmul_tflops(dtype: str, device: str = "cpu", n: int = 2048, seconds: float = 2.0) -> float:
    """Best sustained TFLOP/s of an n x n x n torch matmul in ``dtype`` on ``device``."""
    import torch

    a = torch.randn(n, n, device=device).to(getattr(torch, dtype))
    b = torch.randn(n, n, device=device).to(getattr(torch, dtype))
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.mm(a, b)  # warm-up (and the library's kernel choice)
    sync()
    best, t_end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        for _ in range(4):
            torch.mm(a, b)
        sync()
        best = max(best, 4 * 2 * n**3 / (time.perf_counter() - t0) / 1e12)
    return best


def _sycon(data: Path | None) -> Path:
    for root in [data, REPO.parent / "shared" / "data", REPO / "tests" / "fixtures" / "data"]:
        if root is not None and (root / "sycon").is_dir():
            return root / "sycon"
    raise SystemExit("no SYCON data: pass --data DIR (holding sycon/)")


def _tiny_bert(out: Path) -> str:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from tinyjudge.distill.hf import resolve_encoder

    tok = AutoTokenizer.from_pretrained(resolve_encoder("all-MiniLM-L6-v2"))
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def cross_encoder_fold(args: argparse.Namespace, base: str) -> dict:
    """(a): one leave-one-answering-model-out fold, the transformer tier beside linear."""
    imported = run_import("sycon", _sycon(args.data))
    ts = training_set(imported.items, imported.labels, TEACHER, RUBRIC)
    models = sorted({it.metadata["answering_model"] for it in ts.items})
    held_out = args.held_out if args.held_out in models else models[-1]
    train = [i for i, it in enumerate(ts.items) if it.metadata["answering_model"] != held_out]
    test = [i for i, it in enumerate(ts.items) if it.metadata["answering_model"] == held_out]
    truth = [ts.y_hard[i] for i in test]
    options = {
        "base": base,
        "max_length": args.max_length,
        "epochs": args.epochs,
        "lr": args.lr,
        "batch_size": args.batch_size,
        "device": args.device,
    }
    out: dict = {"held_out": held_out, "n_train": len(train), "n_test": len(test)}
    for tier, params in (("linear", {}), ("transformer", options)):
        model = make_model(tier, RUBRIC, **params)
        t0 = time.perf_counter()
        model.fit([ts.items[i] for i in train], ts.y_soft[train])
        fit_s = time.perf_counter() - t0
        pred = model.predict([ts.items[i] for i in test])
        out[tier] = {
            "cohen_kappa_vs_gpt4o": float(cohen_kappa_score(truth, pred)),
            "accuracy": float(np.mean(np.array(pred) == np.array(truth))),
            "fit_seconds": round(fit_s, 1),
        }
        print(f"(a) {tier}: held out {held_out}: {json.dumps(out[tier])}", flush=True)
    out["transformer"]["options"] = {k: v for k, v in options.items() if k != "base"}
    return out


def decoder_speed(args: argparse.Namespace, shape: dict[str, int]) -> dict:
    """(b): ``args.steps`` bf16 steps of a random Qwen2-shaped classifier: tokens/s and MFU."""
    import torch
    from transformers import AutoModelForSequenceClassification, Qwen2Config

    from tinyjudge.distill.hf import Task, TrainPlan, bf16_default, resolve_device, train

    device = resolve_device(args.device)
    config = Qwen2Config(**shape, num_labels=1, pad_token_id=0, max_position_embeddings=4096)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    seq, batch = args.seq, args.decoder_batch
    ids = torch.randint(1, config.vocab_size, (batch, seq))
    target = torch.randn(batch)

    def loss(module, idx, on):
        scores = module(input_ids=ids.to(on)).logits[:, 0]
        return torch.nn.functional.mse_loss(scores.float(), target.to(on))

    bf16 = bf16_default(device) if device.type != "cpu" else False
    plan = TrainPlan(epochs=1, lr=1e-5, batch_size=batch, device=device, bf16=bf16)
    t0 = time.perf_counter()
    report = train(model, [Task(args.steps * batch, loss)], plan)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    tokens = report.steps_by_rank[0] * batch * seq
    weights = linear_params(model)
    flop_per_token = 6 * weights + 12 * config.num_hidden_layers * config.hidden_size * seq
    ceiling = matmul_tflops("bfloat16" if bf16 else "float32", device.type)
    achieved = tokens / seconds * flop_per_token / 1e12
    out = {
        "shape": shape,
        "device": device.type,
        "bf16": bf16,
        "steps": report.steps_by_rank[0],
        "batch": batch,
        "sequence": seq,
        "seconds": round(seconds, 2),
        "tokens_per_s": tokens / seconds,
        "linear_weights_millions": weights / 1e6,
        "achieved_tflops": achieved,
        "matmul_ceiling_tflops": ceiling,
        "mfu": achieved / ceiling,
        "note": "timed over the whole run, first steps included",
    }
    print(f"(b) {json.dumps(out)}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--data", type=Path, help="a folder holding sycon/")
    ap.add_argument("--held-out", default="deepseek-v3")
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--decoder-batch", type=int, default=8)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    shape = QWEN2_0_5B
    with tempfile.TemporaryDirectory() as tmp:
        base = "all-MiniLM-L6-v2"
        if args.smoke:
            args.device, args.max_length, args.epochs, args.lr = "cpu", 64, 1, 1e-3
            args.steps, args.seq, args.decoder_batch = 3, 32, 2
            shape = {
                **QWEN2_0_5B,
                **{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4},
                **{"intermediate_size": 128, "vocab_size": 1000},
            }
            base = _tiny_bert(Path(tmp) / "bert")
        result = {
            "smoke": args.smoke,
            "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "command": " ".join([".venv/bin/python", *sys.argv]),
            "cross_encoder": cross_encoder_fold(args, base),
            "decoder_speed": decoder_speed(args, shape),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
