"""The losses the reward models train with, and a training batch as tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._shapes import padded_batch
from ._codec import Encoded

__all__ = ["soft_ce", "bradley_terry", "feeds"]


def soft_ce(logits: Any, targets: Any, weights: Any) -> Any:
    """Weighted cross-entropy against soft targets (KL to the teacher up to a constant)."""
    logp = logits.float().log_softmax(-1)
    per_item = -(targets * logp).sum(-1)
    return (weights * per_item).sum() / weights.sum()


def bradley_terry(chosen: Any, rejected: Any) -> Any:
    """Mean ``-log sigmoid(r_chosen - r_rejected)`` over pairs."""
    import torch.nn.functional as F

    return -F.logsigmoid(chosen.float() - rejected.float()).mean()


def feeds(enc: Encoded, idx: Sequence[int] | np.ndarray, pad: int, device: Any) -> dict[str, Any]:
    """A training batch of the encoded rows at ``idx`` as tensors on ``device``."""
    import torch

    batch = padded_batch(
        [enc.ids[i] for i in idx],
        pad,
        None if enc.types is None else [enc.types[i] for i in idx],
        bucketed=False,
    )
    return {k: torch.from_numpy(v).to(device) for k, v in batch.items()}
