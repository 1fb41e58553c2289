"""Shared pieces of the bias probes: bootstrap intervals of a mean, one-source checks.

A probe's figures are :class:`~tinyjudge.results.Interval` values: ``probe.flip_rate``
prints as ``0.125 [0.050, 0.200]`` and is written as ``{"value", "low", "high"}``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tinyjudge._stats import bootstrap_ci
from tinyjudge.errors import UsageError
from tinyjudge.records import Label
from tinyjudge.results import Interval

__all__ = ["Interval", "cluster_keys", "mean_interval", "one_source"]


def cluster_keys(ids: Sequence[str], groups: Mapping[str, Any] | None) -> list[Any] | None:
    """The bootstrap cluster of each item: its group, or the item itself when it has none.

    An item whose group is absent or None (e.g. items without the ``group_by`` key)
    is its own cluster; lumping all of them into one cluster ``None`` would make
    the interval far too narrow.
    """
    if groups is None:
        return None
    return [("group", g) if (g := groups.get(i)) is not None else ("item", i) for i in ids]


def mean_interval(
    values: np.ndarray,
    ids: Sequence[str],
    groups: Mapping[str, Any] | None,
    level: float,
    n_boot: int,
    seed: int,
) -> Interval:
    """The mean with its percentile bootstrap interval, by cluster when ``groups`` is given
    (``nan`` without bounds for no values)."""
    if values.size == 0:
        return Interval(math.nan)
    ci = bootstrap_ci(
        lambda v: float(np.mean(v)),
        values,
        groups=cluster_keys(ids, groups),
        n_boot=n_boot,
        level=level,
        seed=seed,
    )
    return ci.as_interval()


def one_source(labels: Iterable[Label], probe: str) -> list[Label]:
    labs = list(labels)
    sources = sorted({lab.source for lab in labs})
    if len(sources) > 1:
        raise UsageError(
            f"{probe} reads one source's labels, got {len(sources)}: {sources}; "
            "filter with [lab for lab in labels if lab.source == ...]"
        )
    return labs
