"""The Hugging Face seam: any encoder or decoder as a reward model, on any device.

- a *codec* turns a view into model input: :class:`PairCodec` for encoders (a
  sentence pair, token types where the model has them), :class:`ChatCodec` for
  decoders (the chat template, the score read at the last non-pad token);
  :func:`codec_for` picks one from the model's config;
- :func:`load_classifier` loads any base as a sequence classifier with its pad
  token set;
- :func:`train` is the one training loop (``accelerate``: device placement, DDP
  under ``torchrun``/``accelerate launch``; bfloat16 autocast; accumulation,
  checkpointing, the best epoch kept);
- :func:`with_lora` / :func:`load_lora`: LoRA adapters through peft, the head
  trained and saved with them.
"""

from __future__ import annotations

from ._backbone import (
    MINILM,
    PAD_TOKEN,
    check_vocab,
    ensure_pad,
    load_classifier,
    resolve_encoder,
)
from ._codec import ChatCodec, Codec, Encoded, PairCodec, budget, codec_for, is_decoder
from ._device import (
    BF16_MIN_SPEEDUP,
    DEVICES,
    Device,
    bf16_default,
    bf16_fast,
    bf16_speedup,
    resolve_device,
)
from ._guard import SAFE_LOAD, check_hf_dir, hf_call
from ._lora import ADAPTER_CONFIG, default_targets, head_modules, load_lora, with_lora
from ._losses import bradley_terry, feeds, soft_ce
from ._parallel import is_main_process, rank, wait_for_everyone, world_size
from ._trainer import Task, TrainPlan, TrainReport, train

__all__ = [
    "Codec",
    "PairCodec",
    "ChatCodec",
    "Encoded",
    "budget",
    "codec_for",
    "is_decoder",
    "MINILM",
    "PAD_TOKEN",
    "resolve_encoder",
    "load_classifier",
    "ensure_pad",
    "check_vocab",
    "SAFE_LOAD",
    "check_hf_dir",
    "hf_call",
    "Device",
    "DEVICES",
    "BF16_MIN_SPEEDUP",
    "bf16_speedup",
    "bf16_fast",
    "bf16_default",
    "resolve_device",
    "ADAPTER_CONFIG",
    "head_modules",
    "default_targets",
    "with_lora",
    "load_lora",
    "rank",
    "world_size",
    "is_main_process",
    "wait_for_everyone",
    "soft_ce",
    "bradley_terry",
    "feeds",
    "TrainPlan",
    "Task",
    "TrainReport",
    "train",
]
