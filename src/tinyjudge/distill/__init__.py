"""Distill a judge into small reward models: linear, frozen-encoder probe, fine-tuned transformer.

Every tier is a scikit-learn classifier over :class:`~tinyjudge.records.Item`
whose classes are a rubric's labels, scores items to :class:`Label` records with
source ``rm:<name>``, and saves to a directory that :func:`load_model` reads back.
torch and transformers load only when the probe or transformer tier is used; the
Hugging Face seam (codecs, trainer, devices) is :mod:`tinyjudge.distill.hf`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import callable_package, lazy_names

# The tiers' configs are light (no scikit-learn, no torch): the CLI derives its flags
# from them when it starts. The rest loads on first use (PEP 562).
from ._configs import (
    CrossConfig,
    EnsembleConfig,
    LinearConfig,
    ProbeConfig,
    TierConfig,
    TransformerConfig,
)
from ._distill_config import DistillConfig
from ._tiers import DEFAULT_TIER, FEW_LABELS_TIER, TIER_REGISTRY, Tier, chosen_tiers

if TYPE_CHECKING:
    from ._base import RewardModel
    from ._cross import CrossRM
    from ._data import (
        TrainingSet,
        find_group_key,
        group_keys,
        grouped_split,
        own_verdicts,
        training_set,
    )
    from ._distill import DistillResult, Hardening, agreement, distill, score_file
    from ._ensemble import EnsembleRM, ensemble_fit
    from ._linear import LinearRM
    from ._load import TIERS, check_model_dir, load_model, make_model, tier_config
    from ._merge import export_merged
    from ._multi import fit_multi_rubric
    from ._onnx import ExportReport, export_onnx
    from ._probe import ProbeRM
    from ._split_checks import SplitWarning
    from ._text import item_views
    from ._transformer import EncoderRM, TransformerRM

_LAZY = {
    "RewardModel": "._base",
    "CrossRM": "._cross",
    **dict.fromkeys(
        ["TrainingSet", "find_group_key", "group_keys", "grouped_split", "own_verdicts",
         "training_set"], "._data",
    ),
    **dict.fromkeys(
        ["DistillResult", "Hardening", "agreement", "distill", "score_file"], "._distill"
    ),
    **dict.fromkeys(["EnsembleRM", "ensemble_fit"], "._ensemble"),
    "LinearRM": "._linear",
    **dict.fromkeys(
        ["TIERS", "check_model_dir", "load_model", "make_model", "tier_config"], "._load"
    ),
    "export_merged": "._merge",
    "fit_multi_rubric": "._multi",
    **dict.fromkeys(["ExportReport", "export_onnx"], "._onnx"),
    "ProbeRM": "._probe",
    "SplitWarning": "._split_checks",
    "item_views": "._text",
    **dict.fromkeys(["EncoderRM", "TransformerRM"], "._transformer"),
}  # fmt: skip

__all__ = [
    "RewardModel",
    "Hardening",
    "EnsembleRM",
    "ensemble_fit",
    "own_verdicts",
    "LinearRM",
    "ProbeRM",
    "TransformerRM",
    "TransformerConfig",
    "CrossRM",
    "CrossConfig",
    "LinearConfig",
    "ProbeConfig",
    "EnsembleConfig",
    "TierConfig",
    "EncoderRM",
    "fit_multi_rubric",
    "export_onnx",
    "export_merged",
    "ExportReport",
    "TIERS",
    "TIER_REGISTRY",
    "Tier",
    "DEFAULT_TIER",
    "FEW_LABELS_TIER",
    "chosen_tiers",
    "make_model",
    "tier_config",
    "load_model",
    "check_model_dir",
    "distill",
    "DistillConfig",
    "DistillResult",
    "agreement",
    "score_file",
    "training_set",
    "TrainingSet",
    "grouped_split",
    "SplitWarning",
    "group_keys",
    "find_group_key",
    "item_views",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
callable_package(__name__, "distill")
