"""LoRA through peft: low-rank adapters on the attention, the classification head trained whole.

The head is new (a fresh classifier on a pretrained body), so it is trained and
saved with the adapter (peft's ``modules_to_save``); a head lost on save and
reload is the most reported reward-model bug in TRL, peft and OpenRLHF.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyjudge.errors import UsageError

from ._guard import check_hf_dir, hf_call

__all__ = ["head_modules", "default_targets", "with_lora", "load_lora", "ADAPTER_CONFIG"]

ADAPTER_CONFIG = "adapter_config.json"


def head_modules(model: Any) -> list[str]:
    """The classifier's own top-level modules (``classifier``, ``score``): not the body."""
    return [
        name
        for name, child in model.named_children()
        if name != model.base_model_prefix and any(True for _ in child.parameters())
    ]


def default_targets(model: Any) -> list[str]:
    """peft's attention projections for this architecture (by ``model_type``).

    Raises:
        UsageError: peft has no default for the architecture.
    """
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as BY_TYPE

    model_type = model.config.model_type
    if model_type not in BY_TYPE:
        raise UsageError(
            f"lora_target_modules: no default for a {model_type!r} model; name its attention "
            "projections, e.g. lora_target_modules=['q_proj', 'v_proj']",
            "lora_target_modules",
        )
    return list(BY_TYPE[model_type])


def with_lora(
    model: Any, r: int, alpha: int | None, dropout: float, targets: list[str] | None
) -> Any:
    """``model`` with rank-``r`` adapters on ``targets`` (default per architecture), head whole."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=r,
        lora_alpha=2 * r if alpha is None else alpha,
        lora_dropout=dropout,
        target_modules=list(targets) if targets else default_targets(model),
        modules_to_save=head_modules(model),
    )
    try:
        return get_peft_model(model, config)
    except ValueError as e:  # a target module the model does not have
        raise UsageError(
            f"lora_target_modules={targets}: {str(e).splitlines()[0]}", "lora_target_modules"
        ) from None


def load_lora(model: Any, adapter_dir: Path) -> Any:
    """The saved adapter (and head) of ``adapter_dir`` on ``model``, for inference."""
    from peft import PeftModel

    check_hf_dir(adapter_dir, adapter=True)
    return hf_call(
        f"{adapter_dir}: the LoRA adapter cannot be loaded",
        lambda: PeftModel.from_pretrained(model, adapter_dir, use_safetensors=True).eval(),
    )
