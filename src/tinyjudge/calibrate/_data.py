"""From Label records to probability arrays, and save/load of fitted calibrators as JSON."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge._model_dir import (
    CALIBRATION_FILE,
    ModelFileError,
    check_calibration,
    read_record,
    write_calibration,
)
from tinyjudge._people_items import PEOPLE_KEY, people_digest
from tinyjudge.calibrate._calibrators import CALIBRATORS, BaseCalibrator
from tinyjudge.errors import UsageError
from tinyjudge.records import Label

__all__ = [
    "CALIBRATION_FILE",
    "FORMAT",
    "probs_matrix",
    "is_one_hot",
    "calibrator_state",
    "save_calibrator",
    "load_calibrator",
    "read_calibration_file",
]

FORMAT = "tinyjudge.calibration/1"


def probs_matrix(labels: Sequence[Label], classes: Sequence[str]) -> np.ndarray:
    """Stack scored labels' ``probs`` into an (n, k) array with columns in ``classes`` order.

    A scored label without ``probs`` counts as one-hot on its ``label``; classes a
    label's ``probs`` leaves out get 0.

    Raises:
        TinyjudgeError: an unscored label, or a class not in ``classes``.
    """
    index = {c: j for j, c in enumerate(classes)}
    P = np.zeros((len(labels), len(classes)))
    for i, lab in enumerate(labels):
        if lab.status != "ok":
            raise UsageError(f"label of item {lab.item_id!r} is unscored; drop it first")
        dist = lab.probs if lab.probs else ({lab.label: 1.0} if lab.label is not None else {})
        if not dist:
            raise UsageError(f"label of item {lab.item_id!r} has neither probs nor label")
        for name, p in dist.items():
            if name not in index:
                raise UsageError(
                    f"label of item {lab.item_id!r} ({lab.source}) gives class {name!r}, "
                    f"not one of {list(classes)}"
                )
            P[i, index[name]] = p
    sums = P.sum(axis=1, keepdims=True)
    return P / np.where(sums > 0, sums, 1.0)


def is_one_hot(P: Any) -> bool:
    """True when every row puts all its mass on one class (e.g. a judge's bare verdicts)."""
    arr = np.asarray(P, dtype=float)
    return bool(arr.size) and bool(np.all(np.isclose(arr.max(axis=1), 1.0)))


def calibrator_state(cal: BaseCalibrator, people_items: Sequence[str] = ()) -> dict[str, Any]:
    """A fitted calibrator as a JSON record: method, classes and fitted parameters (no pickle).

    ``people_items`` (the items whose people labels it was fitted on) are recorded
    as a digest, so ``estimate`` and ``audit`` can refuse to measure the
    calibrated model on those labels (see :mod:`tinyjudge._people_items`).
    """
    if not hasattr(cal, "classes_"):
        raise UsageError("fit the calibrator before saving it")
    state: dict[str, Any] = {
        "format": FORMAT,
        "method": cal.method,
        "classes": [c.item() if isinstance(c, np.generic) else c for c in cal.classes_],
        "eps": cal.eps,
        "params": cal.get_state(),
    }
    if people_items:
        state[PEOPLE_KEY] = people_digest(people_items)
    return state


def save_calibrator(
    cal: BaseCalibrator, model_dir: str | os.PathLike[str], people_items: Sequence[str] = ()
) -> Path:
    """Write ``MODEL_DIR/calibration.json`` (see :func:`calibrator_state`).

    In a model directory the file is bound to the model and added as one whole
    change of the directory (:func:`tinyjudge._model_dir.write_calibration`).

    Returns:
        The path written.
    """
    return write_calibration(model_dir, calibrator_state(cal, people_items))


def load_calibrator(model_dir: str | os.PathLike[str]) -> BaseCalibrator | None:
    """Read ``MODEL_DIR/calibration.json`` back into a fitted calibrator; None if absent.

    In a model directory the calibration must have been fitted to that model:
    its recorded model hash must be the one in ``tinyjudge.json`` (a model
    re-distilled since has new weights, and the old calibration would bend its
    probabilities wrongly). A calibration edited after it was written is refused.

    Raises:
        ModelFileError: (a DataError and a ModelDirError) the file exists but is
            not a calibration this version can read, was edited, or was fitted
            to another model.
    """
    got = read_calibration_file(model_dir)
    return None if got is None else got[1]


def read_calibration_file(
    model_dir: str | os.PathLike[str],
) -> tuple[dict[str, Any], BaseCalibrator] | None:
    """``MODEL_DIR/calibration.json``'s record and its fitted calibrator, checked as
    :func:`load_calibrator` checks them; None if there is no such file."""
    path = Path(model_dir) / CALIBRATION_FILE
    if not path.exists():
        return None
    state = read_record(path)

    def bad(message: str) -> ModelFileError:
        return ModelFileError(str(path), None, message)

    if state.get("format") != FORMAT:
        raise bad(f'"format" is {state.get("format")!r}, expected {FORMAT!r}')
    method = state.get("method")
    if not isinstance(method, str) or method not in CALIBRATORS:
        raise bad(f"method {method!r} is not one of {sorted(CALIBRATORS)}")
    classes = state.get("classes")
    if not isinstance(classes, list) or len(classes) < 2:
        raise bad('"classes" must list at least two class names')
    try:
        cal = CALIBRATORS[method](classes=classes, eps=float(state.get("eps", 1e-6)))
        cal = cal.set_state(state["params"], classes)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise bad(f'bad "params" for {method}: {e!r}'[:300]) from None
    check_calibration(state, model_dir)
    return state, cal
