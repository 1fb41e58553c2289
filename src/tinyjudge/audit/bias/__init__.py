"""Bias probes for a judge: position, verbosity, self-consistency, injection susceptibility.

Each probe is a function over Labels (one source's) or plain arrays and returns
a NamedTuple with the figure, its confidence interval and the counts behind it;
unscored verdicts are counted, never read as a class. Bootstrap intervals
resample items, or whole clusters (e.g. prompts) when ``groups`` maps an item
id to its cluster.
"""

from __future__ import annotations

from ._consistency import SelfConsistency, samples_from_labels, self_consistency
from ._injection import (
    InjectionFlips,
    injection_flip_rate,
)
from ._position import PositionBias, position_bias
from ._report import bias_report
from ._verbosity import VerbosityBias, verbosity_bias

__all__ = [
    "PositionBias",
    "VerbosityBias",
    "SelfConsistency",
    "InjectionFlips",
    "position_bias",
    "verbosity_bias",
    "self_consistency",
    "samples_from_labels",
    "injection_flip_rate",
    "bias_report",
]
