"""Build a tier by name, and load any saved model directory."""

from __future__ import annotations

import dataclasses
import inspect
import os
import typing
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tinyjudge._model_dir import META_FILE, check
from tinyjudge._numbers import check_number
from tinyjudge.datasets.jsonl import describe_validation_error
from tinyjudge.errors import ModelDirError, TinyjudgeError
from tinyjudge.rubric import Rubric, load_rubric

from ._base import RewardModel
from ._ensemble import EnsembleRM
from ._linear import LinearRM
from ._probe import ProbeRM
from ._transformer import EncoderRM, TransformerRM
from .hf import check_hf_dir

__all__ = ["TIERS", "PARAM_RANGES", "make_model", "check_params", "check_model_dir", "load_model"]

# name -> class; the probe and transformer classes import torch only when used.
TIERS: dict[str, type[RewardModel]] = {
    "linear": LinearRM,
    "probe": ProbeRM,
    "transformer": TransformerRM,
    "encoder": EncoderRM,  # the transformer tier's first name, for saved directories
    "ensemble": EnsembleRM,  # K members of one tier (distill's ensemble option)
}
EnsembleRM.member_tiers = TIERS


def _options(cls: type[RewardModel]) -> dict[str, Any]:
    """A tier's options and their defaults: its config's fields, else its signature."""
    config = getattr(cls, "config_class", None)
    if config is not None:
        return {f.name: f.default for f in dataclasses.fields(config)}
    signature = inspect.signature(cls).parameters
    return {k: p.default for k, p in signature.items() if k != "rubric"}


def _list_options(cls: type[RewardModel]) -> set[str]:
    """The options typed as lists, which also take a comma-separated string."""
    config = getattr(cls, "config_class", None)
    if config is None:
        return set()
    hints = typing.get_type_hints(config)
    return {k for k, t in hints.items() if "list[" in str(t) or typing.get_origin(t) is list}


def make_model(tier: str, rubric: Rubric | str, **params: Any) -> RewardModel:
    """A new, unfitted reward model of the named tier.

    Options not given come from the rubric's ``reward_model.params[tier]`` (for
    the transformer tier also those under its first name, ``encoder``), then
    from the tier's own defaults. An option typed as a list also takes a
    comma-separated string (``lora_target_modules="q_proj,v_proj"``).
    """
    if tier not in TIERS:
        raise TinyjudgeError(f"unknown tier {tier!r}; tiers are {sorted(TIERS)}")
    cls = TIERS[tier]
    rubric = load_rubric(rubric)
    options = _options(cls)
    allowed = sorted(set(options) | {"name"})
    aliases = [t for t, c in TIERS.items() if issubclass(c, cls) or issubclass(cls, c)]
    defaults: dict[str, Any] = {}
    for name in sorted(aliases, key=lambda t: t == tier):  # the tier's own name wins
        defaults.update(rubric.reward_model.params.get(name, {}))
    lists = _list_options(cls)
    given = {**defaults, **params}
    for key in lists & set(given):
        if isinstance(given[key], str):
            given[key] = [part.strip() for part in given[key].split(",") if part.strip()]
    for got, where in ((defaults, f"rubric {rubric.id}'s reward_model.params"), (params, "")):
        unknown = sorted(set(got) - set(allowed))
        if unknown:
            raise TinyjudgeError(
                f"unknown option(s) {unknown} for the {tier} tier"
                + (f" in {where}" if where else "")
                + f"; options: {allowed}"
            )
    for key, value in given.items():
        default = options.get(key)
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
    check_params(given)
    return cls(rubric, **given)


# option -> (low, high, low_open, whole): the range of each numeric tier option
PARAM_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "C": (0, 1e9, True, False),
    "opening_chars": (0, 1_000_000, False, True),
    "max_features": (1, 100_000_000, False, True),
    "emb_weight": (0, 1e6, False, False),
    "max_length": (8, 1_048_576, False, True),
    "batch_size": (1, 1_000_000, False, True),
    "batch_items": (1, 1_000_000, False, True),
    "epochs": (1, 100_000, False, True),
    "lr": (0, 10, True, False),
    "grad_accum": (1, 1_000_000, False, True),
    "lora_r": (0, 65_536, False, True),
    "lora_alpha": (0, 1e9, True, False),
    "lora_dropout": (0, 1, False, False),
}


def check_params(params: dict[str, Any]) -> None:
    """Every numeric tier option is finite and in its range (:data:`PARAM_RANGES`).

    Raises:
        UsageError: the first option out of range, with its value and the range.
    """
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # not a number at all: make_model names the type expected
        if key in PARAM_RANGES:
            low, high, low_open, whole = PARAM_RANGES[key]
            check_number(key, value, low, high, low_open=low_open, whole=whole)
        elif isinstance(value, float):
            check_number(key, value)


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
