"""Keeping a long-running scorer's memory level: freed heap pages go back to the OS.

glibc's malloc keeps the pages of freed blocks for reuse. A model's activations
differ in size from batch to batch, so the freed gaps rarely fit the next
request and the resident set creeps up under steady load. ``malloc_trim(0)``
after each batch hands the free pages back (a few milliseconds); elsewhere (not
glibc) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache, wraps
from typing import Any, TypeVar

__all__ = ["release_free_memory", "trimming"]

F = TypeVar("F", bound=Callable[..., Any])


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc: no malloc_trim
        return None


def release_free_memory() -> bool:
    """Return freed heap pages to the OS; whether this platform could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def trimming(fn: F) -> F:
    """``fn``, followed by :func:`release_free_memory` on every return or raise."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            release_free_memory()

    return wrapper  # type: ignore[return-value]
