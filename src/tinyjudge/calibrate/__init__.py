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

from ._config import CalibrateConfig as CalibrateConfig
from ._config import check_calibration_method as check_calibration_method

if TYPE_CHECKING:
    from ._calibrators import CALIBRATORS as CALIBRATORS
    from ._calibrators import BaseCalibrator as BaseCalibrator
    from ._calibrators import IsotonicCalibration as IsotonicCalibration
    from ._calibrators import PlattScaling as PlattScaling
    from ._calibrators import TemperatureScaling as TemperatureScaling
    from ._calibrators import VectorScaling as VectorScaling
    from ._calibrators import make_calibrator as make_calibrator
    from ._crossfit import CrossFitResult as CrossFitResult
    from ._crossfit import cross_fit as cross_fit
    from ._data import calibrator_state as calibrator_state
    from ._data import is_one_hot as is_one_hot
    from ._data import load_calibrator as load_calibrator
    from ._data import probs_matrix as probs_matrix
    from ._data import save_calibrator as save_calibrator
    from ._fit import calibrate_model as calibrate_model
    from ._fit import calibrate_source as calibrate_source
    from ._fit import calibrate_source_methods as calibrate_source_methods
    from ._fit import save_model_calibration as save_model_calibration
    from ._fit import save_source_calibration as save_source_calibration
    from ._fit import write_model_calibration as write_model_calibration
    from ._guard import MethodCheck as MethodCheck
    from ._guard import compare_methods as compare_methods
    from ._metrics import METRIC_NAMES as METRIC_NAMES
    from ._metrics import METRICS as METRICS
    from ._metrics import ReliabilityCurve as ReliabilityCurve
    from ._metrics import brier_score as brier_score
    from ._metrics import calibration_metrics as calibration_metrics
    from ._metrics import expected_calibration_error as expected_calibration_error
    from ._metrics import max_calibration_error as max_calibration_error
    from ._metrics import nll as nll
    from ._metrics import reliability_curve as reliability_curve
    from ._model import CalibratableModel as CalibratableModel
    from ._model import CalibrationWarning as CalibrationWarning
    from ._model import calibrate as calibrate
    from ._plot import reliability_diagram as reliability_diagram
    from ._result import Calibration as Calibration
    from ._result import SourceCalibration as SourceCalibration
    from ._result import load_calibration as load_calibration

# The rest loads on first use (PEP 562): the command imports CalibrateConfig when the
# CLI starts, and that must not load scipy or scikit-learn.
__getattr__, __dir__ = lazy_names(__name__)
callable_package(__name__, "calibrate")
