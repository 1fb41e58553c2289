"""Where tinyjudge keeps what it can recompute (embeddings): one folder, moved by an env var.

A floor-0 helper: the probe tier writes its embedding cache here, and the ``distill``
command says where, so both read the one rule.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir"]


def default_cache_dir() -> Path:
    """``$TINYJUDGE_CACHE`` or ``~/.cache/tinyjudge``."""
    return Path(os.environ.get("TINYJUDGE_CACHE", Path.home() / ".cache" / "tinyjudge"))
