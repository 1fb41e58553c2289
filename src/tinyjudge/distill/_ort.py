"""ONNX Runtime sessions for an exported encoder-tier model directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyjudge.errors import ModelDirError

__all__ = ["ort_session", "ONNX_FILE", "ONNX_INT8_FILE"]

ONNX_FILE = "model.onnx"
ONNX_INT8_FILE = "model_int8.onnx"


def ort_session(model_dir: str | Path, int8: bool = False) -> Any:
    """An ONNX Runtime CPU session for an exported model directory."""
    import onnxruntime as ort

    path = Path(model_dir) / (ONNX_INT8_FILE if int8 else ONNX_FILE)
    if not path.is_file():
        how = "export_onnx(model_dir, int8=True)" if int8 else "export_onnx(model_dir)"
        raise ModelDirError(f"{path}: not exported yet; export it first with {how}")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
