"""Position bias: how often a pairwise verdict changes when the responses swap places."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Label

from ._common import Interval, mean_interval, one_source

__all__ = ["PositionBias", "position_bias"]


class PositionBias(NamedTuple):
    """How often a pairwise verdict changes when the two responses swap places.

    Attributes:
        flip_rate: share of pairs whose two orders disagree (``ab != ba`` in
            original positions), with its bootstrap interval; 0 for a judge blind to position.
        n: pairs judged in both orders.
        n_flips: pairs whose orders disagree.
        first_share: among flips between ``a`` and ``b`` (no tie), the share where
            each order picked the response shown first; 0.5 means no direction,
            above it a first-position preference; with its bootstrap interval, NaN
            without such flips.
        n_unscored: pairs with an order that gave no verdict.
        level: nominal coverage.
    """

    flip_rate: Interval
    n: int
    n_flips: int
    first_share: Interval
    n_unscored: int
    level: float


def position_bias(
    labels: Iterable[Label],
    *,
    groups: Mapping[str, Any] | None = None,
    level: float = 0.9,
    n_boot: int = 2000,
    seed: int = 0,
) -> PositionBias:
    """Flip rate of one source's both-order pairwise labels (``orders`` ab and ba).

    Args:
        labels: one source's labels; those without both orders are skipped.
        groups: item id -> cluster for the bootstrap (e.g. the prompt).
        level: coverage of the intervals.
        n_boot: bootstrap resamples.
        seed: bootstrap seed.

    Raises:
        TinyjudgeError: labels of several sources, or no label with both orders.

    >>> mk = lambda i, ab, ba: Label(item_id=i, rubric="r", source="judge:x", label=ab,
    ...                              orders={"ab": ab, "ba": ba})
    >>> position_bias([mk("1", "a", "a"), mk("2", "a", "b"), mk("3", "b", "b")]).flip_rate.value
    0.3333333333333333
    """
    ids, flips, first = [], [], []
    first_ids: list[str] = []
    unscored = 0
    for lab in one_source(labels, "position_bias"):
        orders = lab.orders or {}
        if "ab" not in orders or "ba" not in orders:
            continue
        ab, ba = orders["ab"], orders["ba"]
        if ab is None or ba is None:
            unscored += 1
            continue
        ids.append(lab.item_id)
        flips.append(float(ab != ba))
        if {ab, ba} == {"a", "b"}:
            # In order ab, "a" was shown first; in order ba (mapped back), "b" was.
            first.append(float(ab == "a"))
            first_ids.append(lab.item_id)
    if not ids:
        raise UsageError(
            f"no pairwise label with both orders scored ({unscored} had an unscored order); "
            "judge pairs in both orders to measure position bias"
        )
    f, s = np.asarray(flips), np.asarray(first)
    return PositionBias(
        mean_interval(f, ids, groups, level, n_boot, seed),
        len(ids),
        int(f.sum()),
        mean_interval(s, first_ids, groups, level, n_boot, seed),
        unscored,
        level,
    )
