"""The backbones the transformer-tier benchmarks time: MiniLM and decoders built from configs.

Shared by ``distill_speed.py`` and ``gpu_check.py``. The decoders are random-weight
models of a real family's shape (speed only), each with a byte-level BPE trained
on the benchmark's own texts and a ChatML template, saved as a causal LM as a
user starts from; matmul FLOPs are counted from the model's linear layers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
)
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


def bpe_tokenizer(texts: list[str], vocab_size: int = 4000) -> Any:
    """A byte-level BPE with ChatML specials and template, trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = CHATML
    return tok


def decoder_dir(
    family: str, shape: dict[str, int], texts: list[str], out: Path, vocab_size: int = 4000
) -> Path:
    """A random-weight ``qwen2`` or ``llama`` causal LM of ``shape`` saved in ``out``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    config_cls, model_cls = {
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
        "llama": (LlamaConfig, LlamaForCausalLM),
    }[family]
    tok = bpe_tokenizer(texts, vocab_size)
    config = config_cls(
        **{"vocab_size": len(tok), **shape},
        max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model_cls(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


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
