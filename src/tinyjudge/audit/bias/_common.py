"""Shared pieces of the bias probes: bootstrap intervals of a mean, one-source checks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tinyjudge.audit._bootstrap import bootstrap_ci
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Label

__all__ = ["Interval", "mean_ci", "one_source"]

Interval = tuple[float, float]
_NAN_CI: Interval = (math.nan, math.nan)


def mean_ci(
    values: np.ndarray,
    ids: Sequence[str],
    groups: Mapping[str, Any] | None,
    level: float,
    n_boot: int,
    seed: int,
) -> Interval:
    """Percentile bootstrap interval of a mean, by cluster when ``groups`` is given."""
    if values.size == 0:
        return _NAN_CI
    keys = [groups.get(i, i) for i in ids] if groups is not None else None
    ci = bootstrap_ci(
        lambda v: float(np.mean(v)), values, groups=keys, n_boot=n_boot, level=level, seed=seed
    )
    return (ci.low, ci.high)


def one_source(labels: Iterable[Label], probe: str) -> list[Label]:
    labs = list(labels)
    sources = sorted({lab.source for lab in labs})
    if len(sources) > 1:
        raise TinyjudgeError(
            f"{probe} reads one source's labels, got {len(sources)}: {sources}; "
            "filter with [lab for lab in labels if lab.source == ...]"
        )
    return labs
