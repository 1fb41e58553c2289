"""Build a tier by name (its config, then the model), and load any saved model directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tinyjudge._model_dir import META_FILE, check
from tinyjudge.datasets.jsonl import describe_validation_error
from tinyjudge.errors import ModelDirError, TinyjudgeError, UsageError
from tinyjudge.rubric import Rubric, load_rubric

# each tier's module, imported here as a static import (the import graph that checks the
# floors reads them; the registry names the class in it)
from . import _cross, _linear, _probe, _transformer  # noqa: F401
from ._base import RewardModel
from ._configs import TierConfig
from ._configured import Configured
from ._ensemble import EnsembleRM
from ._tiers import TIER_REGISTRY
from .hf import check_hf_dir

__all__ = ["TIERS", "tier_config", "make_model", "check_model_dir", "load_model"]

# name -> class, read off the one registry (_tiers.py); the probe and transformer classes
# import torch only when used.
TIERS: dict[str, type[Configured]] = {name: t.model_class() for name, t in TIER_REGISTRY.items()}
EnsembleRM.member_tiers = TIERS


def tier_config(
    tier: str, rubric: Rubric | str, config: TierConfig | None = None, **options: Any
) -> TierConfig:
    """The named tier's config, as ``distill`` fits it.

    A ``config`` given is used as it is, with ``options`` over it. Without one,
    the options sit over the rubric's ``reward_model.params[tier]`` (for the
    transformer tier also those under its first name, ``encoder``; for the cross
    tier also the transformer tier's; its own name wins), over the tier's defaults.
    A list option also takes a comma-separated string
    (``lora_target_modules="q_proj,v_proj"``).

    Raises:
        UsageError: an unknown tier (``param`` ``tier``), a config of another
            tier, an unknown option or a bad value (``param`` names it).
        RubricError: the same in the rubric's params (the message names the rubric).
    """
    if tier not in TIERS:
        raise UsageError(
            f"unknown tier {tier!r} (tier is one of {', '.join(sorted(TIERS))})", param="tier"
        )
    cls = TIERS[tier].config_class
    if config is not None:
        if not isinstance(config, cls):
            raise UsageError(
                f"a {type(config).__name__} is not the {tier} tier's config ({cls.__name__})",
                param="tier",
            )
        return cls.options(config, **options)
    rubric = load_rubric(rubric)
    # The tiers whose params this one reads: those its config extends (the cross tier reads
    # the transformer tier's), never one whose config has options this one lacks.
    aliases = [t for t, c in TIERS.items() if issubclass(cls, c.config_class)]
    return cls.over_rubric(rubric, sorted(aliases, key=lambda t: t == tier), **options)


def make_model(
    tier: str,
    rubric: Rubric | str,
    config: TierConfig | None = None,
    name: str | None = None,
    **options: Any,
) -> RewardModel:
    """A new, unfitted reward model of the named tier, with :func:`tier_config`'s config."""
    rubric = load_rubric(rubric)
    return TIERS[tier](rubric, name, config=tier_config(tier, rubric, config, **options))


def check_model_dir(model_dir: str | os.PathLike[str], calibrated: bool = True) -> dict[str, Any]:
    """Check a saved model directory without loading its weights; return its metadata.

    Checks what :func:`load_model` checks before it builds the model (see
    :mod:`tinyjudge._model_dir`): the format version, that the files on disk are
    the ones recorded (none added or missing) with their hashes, the tier and
    (``calibrated``) the calibration file.

    Raises:
        ModelDirError: not a model directory, another format version, a file
            added, missing or changed since the save, an unknown tier.
    """
    d = Path(model_dir)
    meta = check(d, tiers=TIERS)
    if calibrated:
        from tinyjudge.calibrate import load_calibrator

        load_calibrator(d)
    return meta


def load_model(model_dir: str | Path, calibrated: bool = True) -> RewardModel:
    """Load a saved reward model, checking its format version and file hashes.

    Args:
        model_dir: a directory written by ``RewardModel.save`` (or ``tinyjudge distill``).
        calibrated: apply the directory's calibration (``calibration.json``, written
            by ``model.save`` of a calibrated model or ``tinyjudge calibrate``) to
            ``predict_proba`` when there is one; the model carries it as
            ``calibration_`` and its source ends ``+cal``.

    Raises:
        ModelDirError: see :func:`check_model_dir`; also a record of the right
            shape but wrong values (written by other code than tinyjudge's).
    """
    d = Path(model_dir)
    meta = check_model_dir(d, calibrated=False)
    # Data, never code, and every safetensors header in bounds: whatever the tier.
    check_hf_dir(d)
    try:
        model = TIERS[meta["tier"]]._load(d, meta)
    except TinyjudgeError as e:  # already one line (an edited rubric copy, bad params)
        if isinstance(e, ModelDirError):
            raise
        raise ModelDirError(str(e)) from None
    except (ValidationError, KeyError, TypeError, ValueError, AttributeError) as e:
        # Hashed, so not a slip of the hand: a file written by other code than ours.
        problem = describe_validation_error(e) if isinstance(e, ValidationError) else repr(e)
        raise ModelDirError(
            f"{d / META_FILE}: malformed ({problem[:200]}); re-distill the model"
        ) from None
    if calibrated:
        from tinyjudge.calibrate import load_calibration, load_calibrator

        # Without a calibration file the model's own probabilities are used; one
        # written before calibrations carried their fit gives its calibrator alone.
        model.calibration_ = load_calibration(d)
        cal = model.calibration_
        model.calibrator_ = cal.calibrator if cal is not None else load_calibrator(d)
    return model
