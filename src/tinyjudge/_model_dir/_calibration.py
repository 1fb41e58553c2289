"""The calibration's binding to its model, and the model's rubric: the records bound by hash."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tinyjudge._digest import content_sha256
from tinyjudge.errors import ModelDirError, TinyjudgeError
from tinyjudge.rubric import Rubric, load_rubric_copy

from ._record import CALIBRATION_FILE, META_FILE, ModelFileError, is_model_dir, read_record

__all__ = ["model_rubric", "model_identity", "bind_calibration", "check_calibration"]


def model_rubric(model_dir: str | os.PathLike[str], meta: dict[str, Any]) -> Rubric:
    """The rubric a saved model was trained under: its stored copy (``rubric_file``).

    The copy must be the rubric ``tinyjudge.json`` records; a directory saved
    before models carried the copy gives that one.

    Raises:
        ModelDirError: the copy's content hash differs from the recorded
            ``rubric_hash``, or the copy is not the recorded rubric.
        pydantic.ValidationError: the recorded rubric is malformed.
    """
    recorded = Rubric.model_validate(meta["rubric"])
    name = meta.get("rubric_file")
    if name is None:
        return recorded
    path = Path(model_dir) / str(name)
    try:
        copy = load_rubric_copy(path, meta.get("rubric_hash"))
    except ModelDirError:
        raise
    except TinyjudgeError as e:
        raise ModelDirError(str(e)) from None
    if copy != recorded:
        raise ModelDirError(
            f"{path}: not the rubric recorded in {META_FILE}; the model directory was "
            "rewritten by other code: re-distill, or restore it"
        )
    return copy


def model_identity(folder: str | os.PathLike[str]) -> str | None:
    """The identity hash in ``FOLDER/tinyjudge.json``; None outside a model directory."""
    if not is_model_dir(folder):
        return None
    try:
        meta = read_record(Path(folder) / META_FILE)
    except ModelFileError:
        return "unreadable"
    return str(meta.get("sha256"))


def bind_calibration(state: dict[str, Any], identity: str | None) -> dict[str, Any]:
    """A calibration's record with the model's ``identity`` (if any) and its own content hash."""
    bound = {k: v for k, v in state.items() if k not in ("model", "sha256")}
    if identity is not None:
        bound["model"] = identity  # the weights (and classes) it was fitted to
    bound["sha256"] = content_sha256(bound)
    return bound


def check_calibration(state: dict[str, Any], folder: str | os.PathLike[str]) -> None:
    """``FOLDER/calibration.json`` was not edited and, in a model directory, fits its model.

    Raises:
        ModelFileError: its content hash differs, or it was fitted to another
            model than the one in ``folder``.
    """
    path = str(Path(folder) / CALIBRATION_FILE)
    if state.get("sha256") != content_sha256(state):
        raise ModelFileError(
            path, None, "edited after it was written (its content hash differs): re-run calibrate"
        )
    identity = model_identity(folder)
    if identity is not None and state.get("model") != identity:
        raise ModelFileError(
            path, None,
            "fitted to another model than the one in this directory (re-distilled since?): "
            "re-run calibrate, or load the model uncalibrated",
        )  # fmt: skip
