"""What a calibration is: the fitted calibrator, what it was fitted with, its held-out figures."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tinyjudge._model_dir import CALIBRATION_FILE, ModelFileError
from tinyjudge._people_items import PEOPLE_KEY, people_digest
from tinyjudge._stats import BootstrapCI
from tinyjudge.calibrate._calibrators import BaseCalibrator
from tinyjudge.calibrate._card import crossfit_summary
from tinyjudge.calibrate._config import CalibrateConfig
from tinyjudge.calibrate._crossfit import CrossFitResult
from tinyjudge.calibrate._data import FORMAT, calibrator_state, read_calibration_file
from tinyjudge.calibrate._guard import MethodCheck
from tinyjudge.calibrate._state import FIT_KEY, fit_record, read_fit_record
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label
from tinyjudge.results import Interval

__all__ = ["ProbabilisticModel", "Calibration", "SourceCalibration", "load_calibration"]


class ProbabilisticModel(Protocol):
    """What calibration needs of a reward model: its classes and its probabilities."""

    classes_: Sequence[str]

    def predict_proba(self, items: Sequence[Item]) -> np.ndarray: ...


@dataclass(eq=False)
class Calibration:
    """A fitted calibrator, what it was fitted with, and its honest before/after figures.

    Two calibrations are equal when their records (:meth:`to_dict`, what
    ``calibration.json`` holds) are: a model saved and loaded again carries one
    equal to the one it was saved with.

    Attributes:
        calibrator: fitted on every human-labelled item; None when the method made
            held-out figures worse and ``if_worse`` was ``"identity"`` (none applied).
        crossfit: held-out probabilities and metrics, each item measured by a
            calibrator fitted without it.
        check: the method against no calibration (and the other methods), held out.
        n: items calibrated on.
        unscored: human labels left out because they were unscored.
        method: the calibrator's name.
        warning: why the method was not applied (or was kept although worse); None if fine.
        item_ids: the items whose people labels it was fitted on (empty once loaded
            from a model directory, which stores only their digest).
        human: the human source it was fitted against, e.g. ``human:final``.
        config: the options it was fitted with (method, folds, grouping, ...).
        people: the digest of ``item_ids`` that goes into ``calibration.json``
            (see :mod:`tinyjudge._people_items`).
    """

    calibrator: BaseCalibrator | None
    crossfit: CrossFitResult
    check: MethodCheck
    n: int
    unscored: int
    method: str
    warning: str | None = None
    item_ids: tuple[str, ...] = ()
    human: str = ""
    config: CalibrateConfig = field(default_factory=CalibrateConfig)
    people: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.people is None and self.item_ids:
            self.people = people_digest(self.item_ids)

    @property
    def applied(self) -> bool:
        """Whether a calibrator is kept (and saved)."""
        return self.calibrator is not None

    @property
    def n_splits(self) -> int:
        """The cross-fitting folds."""
        return self.config.n_splits

    @property
    def group_by(self) -> str | None:
        """The item key the folds never split (None: random folds)."""
        return self.config.group_by

    @property
    def metrics(self) -> dict[str, dict[str, Interval]]:
        """``{"before": {metric: Interval}, "after": {...}}``, held out, with their intervals."""

        def typed(cis: dict[str, BootstrapCI]) -> dict[str, Interval]:
            return {m: c.as_interval() for m, c in cis.items()}

        cf = self.crossfit
        return {"before": typed(cf.metrics_before), "after": typed(cf.metrics_after)}

    def summary(self) -> dict[str, Any]:
        """``n``, ``unscored``, ``method``, ``applied``, each metric before and after, the check."""
        head = {"n": self.n, "unscored": self.unscored, "method": self.method}
        return {**head, "applied": self.applied, **crossfit_summary(self.crossfit, self.check)}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the record ``calibration.json`` holds (before it is bound to a model):
        the calibrator, the people items' digest and, under ``"fit"``, what it was fitted with."""
        if self.calibrator is not None:
            state = calibrator_state(self.calibrator)
        else:
            state = {"format": FORMAT, "method": self.method}
        if self.people:
            state[PEOPLE_KEY] = self.people
        record = fit_record(
            self.human, self.config, self.n, self.unscored, self.warning, self.check
        )
        return {**state, FIT_KEY: record}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Calibration):
            return NotImplemented
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


@dataclass(eq=False)
class SourceCalibration(Calibration):
    """A label source's calibration, with its labels recalibrated as ``<source>+<method>``."""

    source: str = ""
    classes: list[str] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The figures written to ``metrics.json``."""
        return {
            "source": self.source,
            "human": self.human,
            "n": self.n,
            "unscored": self.unscored,
            "method": self.method,
            "classes": self.classes,
            "applied": self.applied,
            **crossfit_summary(self.crossfit, self.check),
        }


def load_calibration(model_dir: str | os.PathLike[str]) -> Calibration | None:
    """The :class:`Calibration` saved in ``MODEL_DIR/calibration.json``, checked as
    :func:`~tinyjudge.calibrate.load_calibrator` checks it.

    None when there is no calibration, or when it was written before calibrations
    carried their fit (its calibrator alone still loads with ``load_calibrator``).

    Raises:
        ModelFileError: the file cannot be used (see ``load_calibrator``), or its
            ``"fit"`` record is not one tinyjudge wrote.
    """
    got = read_calibration_file(model_dir)
    if got is None or FIT_KEY not in got[0]:
        return None
    state, calibrator = got
    try:
        fields = read_fit_record(state[FIT_KEY], str(state["method"]))
    except (KeyError, TypeError, ValueError, TinyjudgeError) as e:
        path = str(Path(model_dir) / CALIBRATION_FILE)
        raise ModelFileError(path, None, f'malformed "{FIT_KEY}" record ({e!r:.200})') from None
    people = state.get(PEOPLE_KEY)
    return Calibration(calibrator, **fields, people=people if isinstance(people, dict) else None)
