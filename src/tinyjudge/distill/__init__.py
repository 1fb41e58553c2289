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
from ._configs import EnsembleConfig, LinearConfig, ProbeConfig, TierConfig, TransformerConfig

if TYPE_CHECKING:
    from ._base import RewardModel
    from ._data import (
        TrainingSet,
        data_hash,
        group_keys,
        grouped_split,
        own_verdicts,
        training_set,
    )
    from ._distill import DistillResult, Hardening, agreement, distill, score_file
    from ._embed import (
        EmbeddingCache,
        FrozenEncoder,
        bf16_fast,
        bf16_speedup,
        default_cache_dir,
        resolve_encoder,
    )
    from ._ensemble import EnsembleRM, ensemble_fit
    from ._linear import LinearRM
    from ._load import TIERS, check_model_dir, load_model, make_model, tier_config
    from ._merge import export_merged
    from ._multi import fit_multi_rubric
    from ._onnx import ExportReport, export_onnx
    from ._ort import ort_session
    from ._probe import ProbeRM
    from ._split_checks import SplitWarning
    from ._text import View, item_views
    from ._transformer import EncoderRM, TransformerRM, bradley_terry, soft_ce

_LAZY = {
    "RewardModel": "._base",
    **dict.fromkeys(
        ["TrainingSet", "data_hash", "group_keys", "grouped_split", "own_verdicts",
         "training_set"], "._data",
    ),
    **dict.fromkeys(
        ["DistillResult", "Hardening", "agreement", "distill", "score_file"], "._distill"
    ),
    **dict.fromkeys(
        ["EmbeddingCache", "FrozenEncoder", "bf16_fast", "bf16_speedup", "default_cache_dir",
         "resolve_encoder"], "._embed",
    ),
    **dict.fromkeys(["EnsembleRM", "ensemble_fit"], "._ensemble"),
    "LinearRM": "._linear",
    **dict.fromkeys(
        ["TIERS", "check_model_dir", "load_model", "make_model", "tier_config"], "._load"
    ),
    "export_merged": "._merge",
    "fit_multi_rubric": "._multi",
    **dict.fromkeys(["ExportReport", "export_onnx"], "._onnx"),
    "ort_session": "._ort",
    "ProbeRM": "._probe",
    "SplitWarning": "._split_checks",
    **dict.fromkeys(["View", "item_views"], "._text"),
    **dict.fromkeys(
        ["EncoderRM", "TransformerRM", "bradley_terry", "soft_ce"], "._transformer"
    ),
}  # fmt: skip

__all__ = [
    "RewardModel",
    "Hardening",
    "EnsembleRM",
    "ensemble_fit",
    "own_verdicts",
    "default_cache_dir",
    "LinearRM",
    "ProbeRM",
    "TransformerRM",
    "TransformerConfig",
    "LinearConfig",
    "ProbeConfig",
    "EnsembleConfig",
    "TierConfig",
    "EncoderRM",
    "fit_multi_rubric",
    "export_onnx",
    "export_merged",
    "ExportReport",
    "ort_session",
    "soft_ce",
    "bradley_terry",
    "FrozenEncoder",
    "EmbeddingCache",
    "resolve_encoder",
    "bf16_fast",
    "bf16_speedup",
    "TIERS",
    "make_model",
    "tier_config",
    "load_model",
    "check_model_dir",
    "distill",
    "DistillResult",
    "agreement",
    "score_file",
    "training_set",
    "TrainingSet",
    "grouped_split",
    "SplitWarning",
    "group_keys",
    "data_hash",
    "item_views",
    "View",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
callable_package(__name__, "distill")
