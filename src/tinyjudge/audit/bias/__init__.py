"""Bias probes for a judge: position, verbosity, self-consistency, injection susceptibility.

Each probe is a function over Labels (one source's) or plain arrays and returns
a NamedTuple with the figure, its confidence interval and the counts behind it;
unscored verdicts are counted, never read as a class. Bootstrap intervals
resample items, or whole clusters (e.g. prompts) when ``groups`` maps an item
id to its cluster.
"""

from __future__ import annotations

from tinyjudge._faces import lazy_names

from ._consistency import SelfConsistency as SelfConsistency
from ._consistency import samples_from_labels as samples_from_labels
from ._consistency import self_consistency as self_consistency
from ._injection import InjectionFlips as InjectionFlips
from ._injection import injection_flip_rate as injection_flip_rate
from ._position import PositionBias as PositionBias
from ._position import position_bias as position_bias
from ._report import bias_report as bias_report
from ._verbosity import VerbosityBias as VerbosityBias
from ._verbosity import verbosity_bias as verbosity_bias

_, __dir__ = lazy_names(__name__)
