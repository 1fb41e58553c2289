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

from tinyjudge._faces import lazy_names

from ._backbone import MINILM as MINILM
from ._backbone import PAD_TOKEN as PAD_TOKEN
from ._backbone import check_vocab as check_vocab
from ._backbone import ensure_pad as ensure_pad
from ._backbone import load_classifier as load_classifier
from ._backbone import resolve_encoder as resolve_encoder
from ._codec import ChatCodec as ChatCodec
from ._codec import Codec as Codec
from ._codec import Encoded as Encoded
from ._codec import PairCodec as PairCodec
from ._codec import budget as budget
from ._codec import codec_for as codec_for
from ._codec import is_decoder as is_decoder
from ._device import BF16_MIN_SPEEDUP as BF16_MIN_SPEEDUP
from ._device import DEVICES as DEVICES
from ._device import Device as Device
from ._device import bf16_default as bf16_default
from ._device import bf16_fast as bf16_fast
from ._device import bf16_speedup as bf16_speedup
from ._device import resolve_device as resolve_device
from ._guard import SAFE_LOAD as SAFE_LOAD
from ._guard import check_hf_dir as check_hf_dir
from ._guard import hf_call as hf_call
from ._lora import ADAPTER_CONFIG as ADAPTER_CONFIG
from ._lora import default_targets as default_targets
from ._lora import head_modules as head_modules
from ._lora import load_lora as load_lora
from ._lora import with_lora as with_lora
from ._losses import bradley_terry as bradley_terry
from ._losses import feeds as feeds
from ._losses import soft_ce as soft_ce
from ._parallel import is_main_process as is_main_process
from ._parallel import rank as rank
from ._parallel import wait_for_everyone as wait_for_everyone
from ._parallel import world_size as world_size
from ._trainer import Task as Task
from ._trainer import TrainPlan as TrainPlan
from ._trainer import TrainReport as TrainReport
from ._trainer import train as train

_, __dir__ = lazy_names(__name__)
