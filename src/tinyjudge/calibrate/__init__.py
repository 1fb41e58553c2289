"""Calibrate a source's probabilities against human labels, and measure calibration.

``tinyjudge.calibrate(model, items, labels, human="human:final")`` (the package,
called: :func:`calibrate`) gives a new reward model whose probabilities are
calibrated, whose source ends ``+cal`` and which carries its :class:`Calibration`;
``model.save(dir)`` writes it with the weights and ``load_model(dir)`` gives it back.
The options are one :class:`CalibrateConfig`.

Calibrators are scikit-learn estimators over an (n, k) array of a source's class
probabilities (a judge's, a reward model's); metrics are pure functions of true
class indices and probabilities. A fitted calibrator is saved as
``calibration.json`` inside a model directory (no pickle), and
``tinyjudge.distill.load_model`` applies it whenever the model is loaded.
:func:`calibrate_model` and :func:`calibrate_source` work on records in memory.

>>> import numpy as np
>>> from tinyjudge.calibrate import TemperatureScaling
>>> cal = TemperatureScaling().fit(np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]), [0, 1, 1])
>>> float(cal.predict_proba(np.array([[0.7, 0.3]])).sum())
1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import callable_package, lazy_names

from ._config import METHODS, CalibrateConfig

if TYPE_CHECKING:
    from ._calibrators import (
        CALIBRATORS,
        BaseCalibrator,
        IsotonicCalibration,
        PlattScaling,
        TemperatureScaling,
        VectorScaling,
        make_calibrator,
    )
    from ._crossfit import CrossFitResult, cross_fit
    from ._data import (
        calibrator_state,
        is_one_hot,
        load_calibrator,
        probs_matrix,
        save_calibrator,
    )
    from ._fit import (
        calibrate_model,
        calibrate_source,
        calibrate_source_methods,
        save_model_calibration,
        save_source_calibration,
        write_model_calibration,
    )
    from ._guard import MethodCheck, compare_methods
    from ._metrics import (
        METRIC_NAMES,
        METRICS,
        ReliabilityCurve,
        brier_score,
        calibration_metrics,
        expected_calibration_error,
        max_calibration_error,
        nll,
        reliability_curve,
    )
    from ._model import CalibratableModel, CalibrationWarning, calibrate
    from ._plot import reliability_diagram
    from ._result import Calibration, SourceCalibration, load_calibration

# Each name's module, loaded on first use (PEP 562): the command imports CalibrateConfig
# when the CLI starts, and that must not load scipy or scikit-learn.
_WHERE = {
    "._calibrators": "BaseCalibrator TemperatureScaling VectorScaling PlattScaling "
    "IsotonicCalibration CALIBRATORS make_calibrator",
    "._crossfit": "cross_fit CrossFitResult",
    "._data": "save_calibrator load_calibrator calibrator_state probs_matrix is_one_hot",
    "._fit": "calibrate_model calibrate_source calibrate_source_methods save_model_calibration "
    "write_model_calibration save_source_calibration",
    "._guard": "compare_methods MethodCheck",
    "._metrics": "expected_calibration_error max_calibration_error brier_score nll "
    "reliability_curve ReliabilityCurve calibration_metrics METRICS METRIC_NAMES",
    "._model": "calibrate CalibratableModel CalibrationWarning",
    "._plot": "reliability_diagram",
    "._result": "Calibration SourceCalibration load_calibration",
}
_LAZY = {name: module for module, names in _WHERE.items() for name in names.split()}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "METHODS",
    "BaseCalibrator",
    "brier_score",
    "CalibratableModel",
    "calibrate",
    "calibrate_model",
    "calibrate_source",
    "calibrate_source_methods",
    "CalibrateConfig",
    "Calibration",
    "calibration_metrics",
    "CalibrationWarning",
    "calibrator_state",
    "CALIBRATORS",
    "compare_methods",
    "cross_fit",
    "CrossFitResult",
    "expected_calibration_error",
    "is_one_hot",
    "IsotonicCalibration",
    "load_calibration",
    "load_calibrator",
    "make_calibrator",
    "max_calibration_error",
    "MethodCheck",
    "METRIC_NAMES",
    "METRICS",
    "nll",
    "PlattScaling",
    "probs_matrix",
    "reliability_curve",
    "reliability_diagram",
    "ReliabilityCurve",
    "save_calibrator",
    "save_model_calibration",
    "save_source_calibration",
    "SourceCalibration",
    "TemperatureScaling",
    "VectorScaling",
    "write_model_calibration",
]

callable_package(__name__, "calibrate")
