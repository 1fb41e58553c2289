"""A calibration's held-out figures as JSON and back, so a saved model keeps its whole calibration.

``calibration.json`` holds the fitted calibrator (method, classes, parameters) and,
under ``"fit"``, what it was fitted with and how it fared: the human source, the
:class:`CalibrateConfig`, the counts, the held-out probabilities before and after
(class indices and fold per row, no item ids), the metrics with their intervals and
the comparison with the other methods. A model loaded from its directory carries
the same :class:`~tinyjudge.calibrate.Calibration` as the one that was saved, and
saving it again writes the same card and plot. Floats survive JSON exactly.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from tinyjudge._stats import BootstrapCI
from tinyjudge.calibrate._config import CalibrateConfig
from tinyjudge.calibrate._crossfit import CrossFitResult
from tinyjudge.calibrate._guard import MethodCheck

__all__ = ["FIT_KEY", "fit_record", "read_fit_record"]

FIT_KEY = "fit"


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _ci_record(ci: BootstrapCI) -> dict[str, Any]:
    """The interval (``{"value", "low", "high"}``) and what the bootstrap drew."""
    ends = {"value": _num(ci.estimate), "low": _num(ci.low), "high": _num(ci.high)}
    counts = {k: int(getattr(ci, k)) for k in ("n_boot", "n_undefined", "n_clusters")}
    return {**ends, "level": float(ci.level), **counts}


def _ci(record: dict[str, Any]) -> BootstrapCI:
    def f(key: str) -> float:
        value = record[key]
        return math.nan if value is None else float(value)

    value = "value" if "value" in record else "estimate"  # a file from before the one form
    return BootstrapCI(
        f(value), f("low"), f("high"), float(record["level"]),
        int(record["n_boot"]), int(record["n_undefined"]), int(record["n_clusters"]),
    )  # fmt: skip


def fit_record(
    human: str, config: CalibrateConfig, n: int, unscored: int, warning: str | None,
    check: MethodCheck,
) -> dict[str, Any]:  # fmt: skip
    """The JSON record of a fitted calibration (see the module doc)."""
    cf = check.result
    return {
        "human": human,
        "config": dataclasses.asdict(config),
        "n": n,
        "unscored": unscored,
        "warning": warning,
        "held_out": {
            "y": cf.y.tolist(),
            "fold": cf.fold.tolist(),
            "before": cf.before.tolist(),
            "after": cf.after.tolist(),
            "seed": cf.seed,
        },
        "metrics": {
            "before": {m: _ci_record(ci) for m, ci in cf.metrics_before.items()},
            "after": {m: _ci_record(ci) for m, ci in cf.metrics_after.items()},
        },
        "check": {"worse": list(check.worse), "best": check.best, "table": check.table},
    }


def read_fit_record(record: dict[str, Any], method: str) -> dict[str, Any]:
    """The :class:`~tinyjudge.calibrate.Calibration` fields a :func:`fit_record` gives back.

    Raises:
        KeyError, TypeError, ValueError: the record is not one :func:`fit_record` wrote.
    """
    held = record["held_out"]
    metrics = record["metrics"]
    cf = CrossFitResult(
        method,
        np.asarray(held["y"], dtype=np.intp),
        np.asarray(held["before"], dtype=np.float64),
        np.asarray(held["after"], dtype=np.float64),
        np.asarray(held["fold"], dtype=np.intp),
        {m: _ci(r) for m, r in metrics["before"].items()},
        {m: _ci(r) for m, r in metrics["after"].items()},
        None,
        int(held["seed"]),
    )
    c = record["check"]
    check = MethodCheck(method, list(c["worse"]), str(c["best"]), dict(c["table"]), cf)
    warning = record["warning"]
    return {
        "crossfit": cf,
        "check": check,
        "n": int(record["n"]),
        "unscored": int(record["unscored"]),
        "method": method,
        "warning": None if warning is None else str(warning),
        "human": str(record["human"]),
        "config": CalibrateConfig(**record["config"]),
    }
