"""Estimate behaviour rates from many cheap labels plus a few human ones (PPI).

The array-level statistics (:func:`ppi_mean`, :func:`estimate_rate`,
:func:`compare_rates`, :func:`select_for_labelling`) are pure functions; the
label-level layer joins :class:`~tinyjudge.records.Label` records by item, and
:func:`estimate_rates` returns typed rows (:class:`RateRow`, whose ``rate`` is an
:class:`~tinyjudge.results.Interval`).
"""

from __future__ import annotations

from ._active import cheap_strata, select_for_labelling, stratified_ppi_mean
from ._labels import behaviour_value, estimate_rates
from ._ppi import (
    Difference,
    MeanEstimate,
    clustered_se,
    difference,
    newcombe_difference,
    normal_mean,
    ppi_lambda,
    ppi_mean,
    wilson_mean,
    z_value,
)
from ._rates import (
    METHODS,
    Method,
    RateCounts,
    RateDifference,
    RateEstimate,
    compare_rates,
    estimate_rate,
)
from ._report import RateComparison, RateReport, RateRow

__all__ = [
    "MeanEstimate",
    "Difference",
    "RateEstimate",
    "RateCounts",
    "RateDifference",
    "Method",
    "METHODS",
    "z_value",
    "wilson_mean",
    "normal_mean",
    "ppi_lambda",
    "ppi_mean",
    "clustered_se",
    "difference",
    "newcombe_difference",
    "estimate_rate",
    "compare_rates",
    "estimate_rates",
    "behaviour_value",
    "RateReport",
    "RateRow",
    "RateComparison",
    "cheap_strata",
    "select_for_labelling",
    "stratified_ppi_mean",
]
