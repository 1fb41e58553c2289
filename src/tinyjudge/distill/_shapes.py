"""Inference batches padded to a few fixed shapes, so a long-running scorer's memory levels off.

PyTorch's CPU kernels for bfloat16 come from oneDNN, which compiles a kernel per
input shape and keeps up to 1,024 of them. Batches of every width and size (a
server's micro-batches are) fill that cache one shape at a time: a reward
server's memory grew by about 800 MiB over 100 s of load. Widths are rounded up
to a multiple of 8 tokens below 64, then of an eighth of the next power of two
(under a quarter more tokens); row counts to 1, 2, 4 or a multiple of 8. That
leaves a few hundred shapes. Padding costs compute (9 rows become 16; measured
per batch on the reward server's probe model, no slower within noise). Every
runtime (torch fp32 and ONNX too) gets the same padded inputs, so they stay
comparable. Padding tokens are masked out and extra rows repeat a real one and
are dropped, so scores do not change beyond bfloat16 rounding.
"""

from __future__ import annotations

import numpy as np

__all__ = ["padded_batch", "bucket_width", "ROW_STEP", "SHAPES_VERSION"]

ROW_STEP = 8
SHAPES_VERSION = "widths8-pow2/8,rows1-2-4-8k"  # what changes numerics, for cache keys


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


def bucket_width(n: int) -> int:
    """``n`` rounded up: to a multiple of 8 up to 64, then of 1/8 of the next power of two."""
    step = max(8, (1 << (n - 1).bit_length()) // 8)
    return _round_up(n, step)


def _rows(n: int) -> int:
    """1, 2, 4, then multiples of ``ROW_STEP``."""
    if n >= ROW_STEP:
        return _round_up(n, ROW_STEP)
    return 1 << (n - 1).bit_length()


def padded_batch(
    rows: list[list[int]],
    pad: int,
    types: list[list[int]] | None = None,
    max_width: int | None = None,
    bucketed: bool = True,
) -> dict[str, np.ndarray]:
    """``input_ids``, ``attention_mask`` (and ``token_type_ids``) of a bucketed shape.

    Row ``i`` of the result is ``rows[i]`` for ``i < len(rows)``; the rest repeat
    row 0. ``max_width`` caps the rounding (the model's position limit).
    ``bucketed=False`` pads to the longest row and adds no rows (training, where
    a repeated row would count twice in the loss).
    """
    longest = max(len(r) for r in rows)
    width = max(longest, min(bucket_width(longest), max_width or 1 << 30))
    n = _rows(len(rows))
    if not bucketed:
        width, n = longest, len(rows)
    ids = np.full((n, width), pad, dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    tt = np.zeros((n, width), dtype=np.int64)
    for i in range(n):
        j = i if i < len(rows) else 0
        ids[i, : len(rows[j])] = rows[j]
        mask[i, : len(rows[j])] = 1
        if types is not None:
            tt[i, : len(types[j])] = types[j]
    out = {"input_ids": ids, "attention_mask": mask}
    if types is not None:
        out["token_type_ids"] = tt
    return out
