"""A LoRA reward model merged into a plain model directory (``tinyjudge export --merge``)."""

from __future__ import annotations

from pathlib import Path

from tinyjudge.errors import UsageError

from ._load import load_model
from ._transformer import TransformerRM

__all__ = ["export_merged"]


def export_merged(model_dir: str | Path, out_dir: str | Path) -> Path:
    """Write ``out_dir``: the adapter of ``model_dir`` merged into its base, head included.

    The result is a full model directory of the transformer tier without LoRA,
    loadable by plain ``transformers`` (``AutoModelForSequenceClassification``)
    and by :func:`load_model`. Its weights differ from the adapter's by float
    rounding, so a calibration of ``model_dir`` is not carried over.

    Raises:
        UsageError: ``model_dir`` holds no LoRA adapter.
    """
    d = Path(model_dir)
    model = load_model(d, calibrated=False)
    if not isinstance(model, TransformerRM) or model.config.lora_r == 0:
        raise UsageError(
            f"{d}: a {model.tier}-tier model without a LoRA adapter: it is already a plain "
            "model directory, nothing to merge",
            "model_dir",
        )
    model.model_ = model.model_.merge_and_unload()
    model.set_params(lora_r=0)
    return model.save(out_dir)
