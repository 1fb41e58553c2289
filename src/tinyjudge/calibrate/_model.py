"""``tinyjudge.calibrate(model, items, labels)``: a calibrated reward model, in memory.

As scikit-learn's ``CalibratedClassifierCV`` on a fitted classifier, the result is
itself a model: it predicts calibrated probabilities, its labels' source is
``rm:<name>+cal`` (so an audit keeps the raw and the calibrated model apart), and
it carries its :class:`~tinyjudge.calibrate.Calibration`, which ``save`` writes
with the weights and ``load_model`` gives back. The model given is left as it was.

This package sits below ``distill``: the model is used through what it offers
(:class:`CalibratableModel`), not through its class.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from tinyjudge.calibrate._calibrators import BaseCalibrator
from tinyjudge.calibrate._config import CalibrateConfig
from tinyjudge.calibrate._fit import calibrate_model
from tinyjudge.calibrate._result import Calibration
from tinyjudge.records import Item, Label

__all__ = ["CalibratableModel", "CalibrationWarning", "calibrate"]


class CalibratableModel(Protocol):
    """What :func:`calibrate` needs of a reward model (every tier of ``tinyjudge.distill``).

    ``calibrator_`` maps the model's own probabilities in ``predict_proba`` (None:
    none); ``calibration_`` is the :class:`Calibration` it came from.
    """

    classes_: Sequence[str]
    calibrator_: BaseCalibrator | None
    calibration_: Calibration | None

    def predict_proba(self, items: Sequence[Item]) -> np.ndarray: ...


M = TypeVar("M", bound=CalibratableModel)


class CalibrationWarning(UserWarning):
    """A calibration that was not applied (or kept although worse than none, held out)."""


def calibrate(
    model: M,
    items: Sequence[Item],
    labels: Sequence[Label],
    human: str = "human:final",
    *,
    config: CalibrateConfig | None = None,
    items_name: str = "the items given",
    **options: Any,
) -> M:
    """A new reward model: ``model`` calibrated against people's labels.

    The calibrator is fitted on the model's own (uncalibrated) probabilities of
    the items ``human`` labelled, and measured cross-fitted (every item by a
    calibrator fitted without it). The new model shares the fitted weights with
    ``model`` (nothing is copied or changed in them) and has
    ``calibration_`` (what was fitted, with what and how it fared) and the
    calibrator that ``predict_proba`` applies; its source ends ``+cal``.

    Example:
        >>> rm = tinyjudge.calibrate(rm, items, people, human="human:final")  # doctest: +SKIP
        >>> print(rm.source, rm.calibration_.metrics["after"]["ece"])  # doctest: +SKIP
        rm:compliance-linear+cal 0.031 [0.018, 0.052]
        >>> rm.save("runs/rm")  # weights, calibration and card in one write  # doctest: +SKIP

    Args:
        model: a fitted reward model (its own calibration, if any, is replaced).
        items: the items to calibrate on; those ``human`` labelled are used.
        labels: labels of any sources; those of ``human`` are the targets.
        human: the human source.
        config: the options (:class:`CalibrateConfig`); keyword ``options`` over it.
        items_name: how errors name the items (a file, for the command line).

    Returns:
        The calibrated model. When the method makes held-out NLL or ECE worse than
        none and ``if_worse`` is ``"identity"``, none is applied: the model's
        probabilities are its own, its source has no ``+cal``, its
        ``calibration_`` says why, and a :class:`CalibrationWarning` is issued.

    Raises:
        UsageError: see :func:`~tinyjudge.calibrate.calibrate_model`.
    """
    cfg = CalibrateConfig.from_options(config, **options)
    new = copy.copy(model)  # the weights are shared, never written: only these two change
    new.calibrator_ = None
    new.calibration_ = None
    done = calibrate_model(new, items, labels, human=human, config=cfg, items_name=items_name)
    new.calibrator_ = done.calibrator
    new.calibration_ = done
    if done.warning:
        warnings.warn(done.warning, CalibrationWarning, stacklevel=2)
    return new
