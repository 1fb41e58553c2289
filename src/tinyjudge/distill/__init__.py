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
from ._configs import CrossConfig as CrossConfig
from ._configs import EnsembleConfig as EnsembleConfig
from ._configs import LinearConfig as LinearConfig
from ._configs import ProbeConfig as ProbeConfig
from ._configs import TierConfig as TierConfig
from ._configs import TransformerConfig as TransformerConfig
from ._distill_config import DistillConfig as DistillConfig
from ._tiers import DEFAULT_TIER as DEFAULT_TIER
from ._tiers import FEW_LABELS_TIER as FEW_LABELS_TIER
from ._tiers import TIER_REGISTRY as TIER_REGISTRY
from ._tiers import Tier as Tier
from ._tiers import chosen_tiers as chosen_tiers

if TYPE_CHECKING:
    from ._base import RewardModel as RewardModel
    from ._cross import CrossRM as CrossRM
    from ._data import TrainingSet as TrainingSet
    from ._data import find_group_key as find_group_key
    from ._data import group_keys as group_keys
    from ._data import grouped_split as grouped_split
    from ._data import own_verdicts as own_verdicts
    from ._data import training_set as training_set
    from ._distill import DistillResult as DistillResult
    from ._distill import Hardening as Hardening
    from ._distill import agreement as agreement
    from ._distill import distill as distill
    from ._distill import score_file as score_file
    from ._ensemble import EnsembleRM as EnsembleRM
    from ._ensemble import ensemble_fit as ensemble_fit
    from ._linear import LinearRM as LinearRM
    from ._load import TIERS as TIERS
    from ._load import check_model_dir as check_model_dir
    from ._load import load_model as load_model
    from ._load import make_model as make_model
    from ._load import tier_config as tier_config
    from ._merge import export_merged as export_merged
    from ._multi import fit_multi_rubric as fit_multi_rubric
    from ._onnx import ExportReport as ExportReport
    from ._onnx import export_onnx as export_onnx
    from ._probe import ProbeRM as ProbeRM
    from ._split_checks import SplitWarning as SplitWarning
    from ._text import item_views as item_views
    from ._transformer import EncoderRM as EncoderRM
    from ._transformer import TransformerRM as TransformerRM

__getattr__, __dir__ = lazy_names(__name__)
callable_package(__name__, "distill")
