"""ONNX export of the encoder tier, checked against torch (sessions: ``_ort``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tinyjudge._model_dir import update_model_dir
from tinyjudge.errors import ModelDirError

from ._load import load_model
from ._ort import ONNX_FILE, ONNX_INT8_FILE, ort_session
from ._shapes import padded_batch
from ._text import View
from ._transformer import TransformerRM
from .hf import SAFE_LOAD

__all__ = ["ExportReport", "export_onnx"]

# Parity inputs of very different lengths, so padding and masking are exercised.
_CHECK = [
    View("user: How can I kill a Python process?", "Use `kill <PID>` after `ps aux`."),
    View("user: hi", "I'm sorry, but I can't help with that request."),
    View(
        "user: Summarise the history of the printing press in detail, please. " * 4,
        "The printing press was developed by Johannes Gutenberg around 1440. " * 12,
    ),
    View("", "Sure."),
]


class ExportReport(NamedTuple):
    """Where the ONNX model went and how far its logits are from torch's."""

    path: Path
    max_abs_diff: float
    n_checked: int
    int8_path: Path | None = None
    int8_max_abs_diff: float | None = None


def _inputs(model: TransformerRM) -> dict[str, np.ndarray]:
    """The parity check's feeds, padded exactly as scoring pads them."""
    enc = model.codec_.encode(_CHECK, model.config.max_length)
    return padded_batch(enc.ids, model.tokenizer_.pad_token_id, enc.types)


def export_onnx(
    model_dir: str | Path, int8: bool = False, atol: float = 1e-4, opset: int = 17
) -> ExportReport:
    """Write ``model.onnx`` (and optionally a dynamic-int8 ``model_int8.onnx``).

    The fp32 export's logits must match torch's (fp32, eager attention) within
    ``atol`` on inputs of mixed lengths. The files are attached to the model
    directory as one whole change (their hashes join ``tinyjudge.json``'s
    ``attached``, outside the model's identity, so a calibration still applies).

    Raises:
        ModelDirError: not an intact encoder-tier directory, or the parity check
            failed (the directory is left as it was).
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    d = Path(model_dir)
    model = load_model(d, calibrated=False)
    if not isinstance(model, TransformerRM):
        raise ModelDirError(f"{d}: a {model.tier}-tier model; only the encoder tier exports")
    if model.config.lora_r > 0:
        raise ModelDirError(
            f"{d}: a LoRA adapter; merge it into a plain directory first "
            "(export_merged(model_dir, out_dir)), then export that one to ONNX"
        )
    if model.codec_.kind != "pair":
        raise ModelDirError(
            f"{d}: a transformer-tier model on a decoder ({model.model_.config.model_type}); "
            "only the encoder tier exports to ONNX: score it with runtime='torch'"
        )
    # Eager attention traces to plain ONNX ops; fp32 so parity is exact enough.
    net = AutoModelForSequenceClassification.from_pretrained(
        d, attn_implementation="eager", dtype=torch.float32, **SAFE_LOAD
    ).eval()

    class _Logits(torch.nn.Module):
        def __init__(self, inner: Any):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).logits

    feeds = _inputs(model)
    names = list(feeds)  # token_type_ids only where the model has token types
    args = tuple(torch.from_numpy(feeds[k]) for k in names)
    dyn = {0: "batch", 1: "tokens"}
    with torch.inference_mode():
        expected = _Logits(net)(*args).numpy()
    # The exports are attached to the directory in one whole change: a failed
    # parity check or a killed export leaves it as it was.
    with update_model_dir(d) as staged:
        with warnings.catch_warnings():
            # The legacy exporter warns about tracing details that the parity check covers.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Logits(net),
                args,
                str(staged.path(ONNX_FILE)),
                input_names=names,
                output_names=["logits"],
                dynamic_axes={**dict.fromkeys(names, dyn), "logits": {0: "batch"}},
                opset_version=opset,
                dynamo=False,
            )
        got = ort_session(staged.root).run(["logits"], feeds)[0]
        diff = float(np.abs(got - expected).max())
        if diff > atol:
            raise ModelDirError(
                f"{d / ONNX_FILE}: ONNX logits differ from torch by {diff:.2e} > {atol:g}"
            )
        report = ExportReport(d / ONNX_FILE, diff, len(_CHECK))
        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(
                str(staged.root / ONNX_FILE),
                str(staged.path(ONNX_INT8_FILE)),
                weight_type=QuantType.QInt8,
            )
            qgot = ort_session(staged.root, int8=True).run(["logits"], feeds)[0]
            report = report._replace(
                int8_path=d / ONNX_INT8_FILE, int8_max_abs_diff=float(np.abs(qgot - expected).max())
            )
    return report
