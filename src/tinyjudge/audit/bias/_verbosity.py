"""Verbosity bias: does the longer response win, more often than for a reference?"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge._stats import bootstrap_ci
from tinyjudge.audit.lengths import message_token_text
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label, Message

from ._common import Interval, cluster_keys, mean_interval, one_source

__all__ = ["VerbosityBias", "verbosity_bias", "longer_wins", "response_length"]


class VerbosityBias(NamedTuple):
    """How often the longer response wins, and how much more often than for a reference.

    Attributes:
        longer_win_rate: among pairs with a non-tie verdict and responses of
            different length, the share where the longer one won, with its bootstrap interval.
        n: pairs counted.
        reference_rate: the same share for the reference's verdicts (e.g. people)
            on the pairs both judged; None without a reference.
        excess: judge minus reference on those same pairs: the length preference
            beyond what the reference shows, with its paired bootstrap interval; None
            without a reference.
        n_paired: pairs in the excess.
        level: nominal coverage.
    """

    longer_win_rate: Interval
    n: int
    reference_rate: float | None
    excess: Interval | None
    n_paired: int
    level: float


def response_length(messages: Sequence[Message]) -> int:
    """Characters of a response: message texts and tool calls (as ``audit.lengths`` counts)."""
    return sum(len(message_token_text(m)) for m in messages)


def longer_wins(
    verdicts: Sequence[str | None], len_a: Sequence[float], len_b: Sequence[float]
) -> np.ndarray:
    """1.0 where the verdict picks the longer response, 0.0 the shorter, NaN otherwise.

    NaN marks a tie, a missing verdict or two responses of equal length.

    >>> longer_wins(["a", "b", "tie", "a", None], [10, 10, 10, 5, 5], [5, 5, 5, 5, 9]).tolist()
    [1.0, 0.0, nan, nan, nan]
    """
    la, lb = np.asarray(len_a, dtype=float), np.asarray(len_b, dtype=float)
    if not len(verdicts) == la.size == lb.size:
        raise UsageError(
            f"verdicts and lengths must align: got {len(verdicts)}, {la.size}, {lb.size}"
        )
    out = np.full(la.size, np.nan)
    for i, v in enumerate(verdicts):
        if v in ("a", "b") and la[i] != lb[i]:
            out[i] = float((v == "a") == (la[i] > lb[i]))
    return out


def _pair_lengths(items: Mapping[str, Item] | Sequence[Item]) -> dict[str, tuple[int, int]]:
    index = items if isinstance(items, Mapping) else {it.id: it for it in items}
    return {
        i: (response_length(it.response_a or []), response_length(it.response_b or []))
        for i, it in index.items()
        if it.is_pairwise
    }


def _wins(labels: Iterable[Label], lengths: dict[str, tuple[int, int]]) -> dict[str, float]:
    out = {}
    for lab in labels:
        if lab.status != "ok" or lab.item_id not in lengths:
            continue
        la, lb = lengths[lab.item_id]
        w = longer_wins([lab.label], [la], [lb])[0]
        if not math.isnan(w):
            out[lab.item_id] = float(w)
    return out


def verbosity_bias(
    labels: Iterable[Label],
    items: Mapping[str, Item] | Sequence[Item],
    *,
    reference: Iterable[Label] | None = None,
    groups: Mapping[str, Any] | None = None,
    level: float = 0.9,
    n_boot: int = 2000,
    seed: int = 0,
) -> VerbosityBias:
    """Association of one source's pairwise verdicts with response length.

    A judge may prefer the longer answer because it is better; comparing with a
    reference (human labels on the same pairs) separates that from a bias.

    Args:
        labels: one source's pairwise labels (``a``, ``b``, ``tie``).
        items: the pairwise items (their responses are measured in characters).
        reference: another source's labels on the same pairs, e.g. ``human:gold``.
        groups: item id -> cluster for the bootstrap.
        level: coverage of the intervals.
        n_boot: bootstrap resamples.
        seed: bootstrap seed.

    Raises:
        TinyjudgeError: labels of several sources, or no pair with a non-tie
            verdict and responses of different length.
    """
    lengths = _pair_lengths(items)
    judge = _wins(one_source(labels, "verbosity_bias"), lengths)
    if not judge:
        raise UsageError(
            "no pair with an a/b verdict and responses of different length among the labels "
            f"({len(lengths)} pairwise items given)"
        )
    ids = list(judge)
    w = np.asarray([judge[i] for i in ids])
    ci = mean_interval(w, ids, groups, level, n_boot, seed)
    if reference is None:
        return VerbosityBias(ci, len(ids), None, None, 0, level)
    ref = _wins(one_source(reference, "verbosity_bias reference"), lengths)
    both = [i for i in ids if i in ref]
    if not both:
        raise UsageError("the reference gave no a/b verdict on the pairs the source judged")
    j = np.asarray([judge[i] for i in both])
    r = np.asarray([ref[i] for i in both])
    diff = bootstrap_ci(
        lambda x, y: float(np.mean(x) - np.mean(y)),
        j,
        r,
        groups=cluster_keys(both, groups),
        n_boot=n_boot,
        level=level,
        seed=seed,
    )
    return VerbosityBias(
        ci,
        len(ids),
        float(r.mean()),
        diff.as_interval(),
        len(both),
        level,
    )
