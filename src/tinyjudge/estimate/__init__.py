"""Estimate behaviour rates from many cheap labels plus a few human ones (PPI).

The array-level statistics (:func:`ppi_mean`, :func:`estimate_rate`,
:func:`compare_rates`, :func:`select_for_labelling`) are pure functions; the
label-level layer joins :class:`~tinyjudge.records.Label` records by item, and
:func:`estimate_rates` returns typed rows (:class:`RateRow`, whose ``rate`` is an
:class:`~tinyjudge.results.Interval`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import lazy_names

from ._config import METHODS as METHODS
from ._config import EstimateConfig as EstimateConfig
from ._config import Method as Method

if TYPE_CHECKING:
    from ._active import select_for_labelling as select_for_labelling
    from ._active import stratified_ppi_mean as stratified_ppi_mean
    from ._labels import behaviour_value as behaviour_value
    from ._labels import estimate_rates as estimate_rates
    from ._ppi import Difference as Difference
    from ._ppi import MeanEstimate as MeanEstimate
    from ._ppi import clustered_se as clustered_se
    from ._ppi import difference as difference
    from ._ppi import ppi_mean as ppi_mean
    from ._ppi import wilson_mean as wilson_mean
    from ._rates import RateCounts as RateCounts
    from ._rates import RateDifference as RateDifference
    from ._rates import RateEstimate as RateEstimate
    from ._rates import compare_rates as compare_rates
    from ._rates import estimate_rate as estimate_rate
    from ._report import RateComparison as RateComparison
    from ._report import RateReport as RateReport
    from ._report import RateRow as RateRow

__getattr__, __dir__ = lazy_names(__name__)
