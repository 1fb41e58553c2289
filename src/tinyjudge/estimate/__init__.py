"""Estimate behaviour rates from many cheap labels plus a few human ones (PPI).

The array-level statistics (:func:`ppi_mean`, :func:`estimate_rate`,
:func:`compare_rates`, :func:`select_for_labelling`) are pure functions; the
label-level layer joins :class:`~tinyjudge.records.Label` records by item, and
:func:`estimate_rates` returns typed rows (:class:`RateRow`, whose ``rate`` is an
:class:`~tinyjudge.results.Interval`).
"""

from __future__ import annotations

from ._active import select_for_labelling, stratified_ppi_mean
from ._config import METHODS, EstimateConfig, Method
from ._labels import behaviour_value, estimate_rates
from ._ppi import (
    Difference,
    MeanEstimate,
    clustered_se,
    difference,
    ppi_mean,
    wilson_mean,
)
from ._rates import (
    RateCounts,
    RateDifference,
    RateEstimate,
    compare_rates,
    estimate_rate,
)
from ._report import RateComparison, RateReport, RateRow

__all__ = [
    "EstimateConfig",
    "MeanEstimate",
    "Difference",
    "RateEstimate",
    "RateCounts",
    "RateDifference",
    "Method",
    "METHODS",
    "wilson_mean",
    "ppi_mean",
    "clustered_se",
    "difference",
    "estimate_rate",
    "compare_rates",
    "estimate_rates",
    "behaviour_value",
    "RateReport",
    "RateRow",
    "RateComparison",
    "select_for_labelling",
    "stratified_ppi_mean",
]
