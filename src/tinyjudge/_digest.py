"""Content hashes: of a file's bytes, and of a JSON record without its own hash.

A model directory (:mod:`tinyjudge._model_dir`) binds its files together with
them: ``tinyjudge.json`` and ``calibration.json`` each carry the hash of their
own content, and the calibration also carries the model's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

__all__ = ["file_sha256", "content_sha256"]


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def content_sha256(record: dict[str, Any], leave_out: Collection[str] = ("sha256",)) -> str:
    """SHA-256 of a JSON record's content, the fields in ``leave_out`` (its own hash) left out."""
    body = {k: v for k, v in record.items() if k not in leave_out}
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
