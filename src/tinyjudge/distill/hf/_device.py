"""Where a model runs and in which precision: the device and the bfloat16 decision.

On a GPU bfloat16 is used where the GPU supports it. On a CPU having bfloat16
instructions is not enough: on some machines oneDNN's bfloat16 kernels run at
half the float32 speed, so it is the default only where a measured matrix
multiply beats float32 by :data:`BF16_MIN_SPEEDUP`.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Literal

from tinyjudge.errors import UsageError

__all__ = [
    "Device",
    "DEVICES",
    "BF16_MIN_SPEEDUP",
    "bf16_speedup",
    "bf16_fast",
    "resolve_device",
    "bf16_default",
]

Device = Literal["auto", "cpu", "cuda", "mps"]
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda", "mps")

# bfloat16 must beat float32 by this much in a CPU matrix multiply to be the default.
BF16_MIN_SPEEDUP = 1.25


@functools.cache
def bf16_speedup() -> float:
    """bfloat16 over float32 matrix-multiply throughput on this CPU, measured once.

    0.0 without bfloat16 matrix instructions (AVX512-BF16 or AMX). With them the
    ratio is measured (1024 x 1024, the best of five interleaved runs each, about
    0.1 s), because having the instructions is not enough: on some machines
    oneDNN's bfloat16 kernels run at half the float32 speed.
    """
    import torch

    cpu = torch.cpu
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if not any(bool(getattr(cpu, c, lambda: False)()) for c in checks):
        return 0.0
    a = torch.randn(1024, 1024, generator=torch.Generator().manual_seed(0))  # global RNG untouched
    b = a.t().contiguous()
    pairs = {
        torch.float32: (a, b),
        torch.bfloat16: (a.to(torch.bfloat16), b.to(torch.bfloat16)),
    }
    best = dict.fromkeys(pairs, float("inf"))
    for x, y in pairs.values():
        torch.mm(x, y)  # warm-up: oneDNN picks its kernel
    for _ in range(5):
        for dtype, (x, y) in pairs.items():
            t0 = time.perf_counter()
            torch.mm(x, y)
            best[dtype] = min(best[dtype], time.perf_counter() - t0)
    return best[torch.float32] / best[torch.bfloat16]


def bf16_fast() -> bool:
    """Whether bfloat16 is the faster precision on this CPU (see :func:`bf16_speedup`)."""
    return bf16_speedup() >= BF16_MIN_SPEEDUP


def resolve_device(device: str) -> Any:
    """The ``torch.device`` for ``device`` (``auto``: CUDA, then MPS, then the CPU).

    Raises:
        UsageError: an unknown name, or a device this machine does not have.
    """
    import torch

    if device not in DEVICES:
        raise UsageError(f"device={device!r} is not a device; devices: {list(DEVICES)}", "device")
    mps = getattr(torch.backends, "mps", None)
    has = {"cuda": torch.cuda.is_available(), "mps": bool(mps and mps.is_available())}
    if device == "auto":
        device = next((d for d in ("cuda", "mps") if has[d]), "cpu")
    elif device != "cpu" and not has[device]:
        raise UsageError(
            f"device={device!r}: this machine has no {device.upper()} device that torch can use; "
            "use device='cpu' or 'auto'",
            "device",
        )
    return torch.device(device)


def bf16_default(device: Any) -> bool:
    """Whether bfloat16 autocast is the default on ``device`` (a ``torch.device``)."""
    import torch

    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return bf16_fast()
    return False  # MPS: bfloat16 autocast support varies by macOS version
