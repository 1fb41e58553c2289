"""Calibrate a source's probabilities against human labels, and measure calibration.

Calibrators are scikit-learn estimators over an (n, k) array of a source's class
probabilities (a judge's, a reward model's); metrics are pure functions of true
class indices and probabilities. A fitted calibrator is saved as
``calibration.json`` inside a model directory (no pickle), and
``tinyjudge.distill.load_model`` applies it whenever the model is loaded.
:func:`calibrate_model` and :func:`calibrate_source` work on records in memory.

>>> import numpy as np
>>> cal = TemperatureScaling().fit(np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]), [0, 1, 1])
>>> float(cal.predict_proba(np.array([[0.7, 0.3]])).sum())
1.0
"""

from __future__ import annotations

from tinyjudge.calibrate._calibrators import (
    CALIBRATORS,
    BaseCalibrator,
    IsotonicCalibration,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
    make_calibrator,
)
from tinyjudge.calibrate._crossfit import CrossFitResult, cross_fit
from tinyjudge.calibrate._data import (
    is_one_hot,
    load_calibrator,
    probs_matrix,
    save_calibrator,
)
from tinyjudge.calibrate._fit import (
    Calibration,
    SourceCalibration,
    calibrate_model,
    calibrate_source,
    save_model_calibration,
    save_source_calibration,
)
from tinyjudge.calibrate._guard import MethodCheck, compare_methods
from tinyjudge.calibrate._metrics import (
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
from tinyjudge.calibrate._plot import reliability_diagram

__all__ = [
    "BaseCalibrator",
    "TemperatureScaling",
    "VectorScaling",
    "PlattScaling",
    "IsotonicCalibration",
    "CALIBRATORS",
    "make_calibrator",
    "save_calibrator",
    "load_calibrator",
    "probs_matrix",
    "is_one_hot",
    "expected_calibration_error",
    "max_calibration_error",
    "brier_score",
    "nll",
    "reliability_curve",
    "ReliabilityCurve",
    "calibration_metrics",
    "METRICS",
    "reliability_diagram",
    "cross_fit",
    "CrossFitResult",
    "compare_methods",
    "MethodCheck",
    "Calibration",
    "SourceCalibration",
    "calibrate_model",
    "calibrate_source",
    "save_model_calibration",
    "save_source_calibration",
    "METRIC_NAMES",
]
