"""Content hashes that bind a model directory's files together.

``tinyjudge.json`` (classes, the rubric with its positive labels, the weight
files' hashes) and ``calibration.json`` each carry the hash of their own
content; the calibration also carries the model's, so that neither an edit nor
a calibration fitted to other weights goes unnoticed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["MODEL_META_FILE", "file_sha256", "content_sha256"]

# The metadata file of a saved reward model (distill writes it; calibrate reads its hash).
MODEL_META_FILE = "tinyjudge.json"
# Fields a content hash leaves out: the hash itself, and exports (ONNX files added
# after the fact are checked by their own hashes but do not change the model).
_NOT_CONTENT = ("sha256", "exports")


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def content_sha256(record: dict[str, Any]) -> str:
    """SHA-256 of a JSON record's content, its own ``"sha256"`` (and ``"exports"``) left out."""
    body = {k: v for k, v in record.items() if k not in _NOT_CONTENT}
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
