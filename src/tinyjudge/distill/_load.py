"""Build a tier by name, and load any saved model directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tinyjudge._model_dir import META_FILE, check
from tinyjudge.datasets.jsonl import describe_validation_error
from tinyjudge.errors import ModelDirError, TinyjudgeError
from tinyjudge.rubric import Rubric, load_rubric

from ._base import RewardModel
from ._encoder import EncoderRM
from ._linear import LinearRM
from ._probe import ProbeRM

__all__ = ["TIERS", "make_model", "check_model_dir", "load_model"]

# name -> class; the probe and encoder classes import torch only when used.
TIERS: dict[str, type[RewardModel]] = {
    "linear": LinearRM,
    "probe": ProbeRM,
    "encoder": EncoderRM,
}


def make_model(tier: str, rubric: Rubric | str, **params: Any) -> RewardModel:
    """A new, unfitted reward model of the named tier.

    Options not given come from the rubric's ``reward_model.params[tier]``, then
    from the tier's own defaults.
    """
    if tier not in TIERS:
        raise TinyjudgeError(f"unknown tier {tier!r}; tiers are {sorted(TIERS)}")
    cls = TIERS[tier]
    import inspect

    rubric = load_rubric(rubric)
    allowed = sorted(set(inspect.signature(cls).parameters) - {"rubric"})
    defaults = rubric.reward_model.params.get(tier, {})
    for given, where in ((defaults, f"rubric {rubric.id}'s reward_model.params"), (params, "")):
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise TinyjudgeError(
                f"unknown option(s) {unknown} for the {tier} tier"
                + (f" in {where}" if where else "")
                + f"; options: {allowed}"
            )
    signature = inspect.signature(cls).parameters
    for key, value in {**defaults, **params}.items():
        default = signature[key].default
        if isinstance(default, bool) or default is None or default is inspect.Parameter.empty:
            continue
        whole = isinstance(default, int)
        if isinstance(default, (int, float)) and (
            isinstance(value, bool) or not isinstance(value, int if whole else (int, float))
        ):
            raise TinyjudgeError(
                f"option {key}={value!r} for the {tier} tier: expected "
                f"{'a whole number' if whole else 'a number'} (the default is {default!r})"
            )
    return cls(rubric, **{**defaults, **params})


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
            by ``tinyjudge calibrate``) to ``predict_proba`` when there is one.

    Raises:
        ModelDirError: see :func:`check_model_dir`; also a record of the right
            shape but wrong values (written by other code than tinyjudge's).
    """
    d = Path(model_dir)
    meta = check_model_dir(d, calibrated=False)
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
        from tinyjudge.calibrate import load_calibrator

        # Without a calibration file the model's own probabilities are used.
        model.calibrator_ = load_calibrator(d)
    return model
