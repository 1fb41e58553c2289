"""Which process this is in a data-parallel run (``torchrun``, ``accelerate launch``).

Both launchers set ``RANK`` and ``WORLD_SIZE``; a plain run is rank 0 of 1. Rank
0 alone validates, saves and prints; the others wait for it and write nothing.
"""

from __future__ import annotations

import os

__all__ = ["rank", "world_size", "is_main_process", "wait_for_everyone"]


def rank() -> int:
    """This process's rank (0 outside a data-parallel launch)."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    """How many processes train together (1 outside a data-parallel launch)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    """Whether this process validates, saves and prints."""
    return rank() == 0


def wait_for_everyone() -> None:
    """Block until every rank gets here (nothing outside a data-parallel run)."""
    if world_size() > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()
