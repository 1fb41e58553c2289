"""Several raters' labels of one item into one: majority vote, or Dawid-Skene.

Both are pure functions on a count array ``votes[i, j, k]``: how many times rater
``j`` gave item ``i`` the label ``k`` (0 or 1 in a label sheet), which
:func:`vote_counts` builds. A label sheet's ``human:final`` and distill's
``dawid-skene`` targets (the judge as one more rater) both aggregate here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["Aggregate", "vote_counts", "majority", "dawid_skene"]


class Aggregate(NamedTuple):
    """One distribution over the labels per item, and the raters' estimated quality.

    Attributes:
        probs: ``[items, labels]``, each row summing to 1 (a row of zeros for an
            item nobody labelled).
        confusion: ``[raters, true label, given label]`` for Dawid-Skene; None
            for a majority vote.
        iterations: EM iterations run (0 for a majority vote).
    """

    probs: np.ndarray
    confusion: np.ndarray | None = None
    iterations: int = 0


def vote_counts(
    votes: Iterable[tuple[str, str, str]],
    item_ids: Sequence[str],
    raters: Sequence[str],
    names: Sequence[str],
) -> np.ndarray:
    """``[items, raters, labels]`` counts from ``(item_id, rater, label)`` votes.

    A vote for an item, rater or label not listed is left out.

    >>> vote_counts([("q1", "ann", "no"), ("q1", "bob", "yes"), ("q9", "ann", "no")],
    ...             ["q1"], ["ann", "bob"], ["yes", "no"]).tolist()
    [[[0.0, 1.0], [1.0, 0.0]]]
    """
    row = {i: n for n, i in enumerate(item_ids)}
    col = {r: n for n, r in enumerate(raters)}
    kind = {k: n for n, k in enumerate(names)}
    counts = np.zeros((len(item_ids), len(raters), len(names)))
    for item_id, rater, label in votes:
        if item_id in row and rater in col and label in kind:
            counts[row[item_id], col[rater], kind[label]] += 1
    return counts


def majority(votes: np.ndarray) -> Aggregate:
    """Each item's vote shares.

    >>> majority(np.array([[[1, 0], [1, 0], [0, 1]]])).probs.round(3).tolist()
    [[0.667, 0.333]]
    """
    counts = votes.sum(axis=1).astype(float)
    totals = counts.sum(axis=1, keepdims=True)
    return Aggregate(np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0))


def dawid_skene(
    votes: np.ndarray, max_iter: int = 100, tol: float = 1e-6, smoothing: float = 0.01
) -> Aggregate:
    """Dawid and Skene's (1979) EM estimate of each item's true label.

    Each rater has a confusion matrix (how often they say ``l`` when the truth
    is ``k``); EM alternates between the items' posteriors and the raters'
    matrices, starting from the majority vote. A careful rater then outweighs
    two careless ones, which a majority vote cannot do.

    Args:
        votes: ``[items, raters, labels]`` counts.
        max_iter: the most EM iterations.
        tol: stop when no posterior moves by more than this.
        smoothing: added to every confusion count, so that a label a rater
            never used is unlikely, not impossible.
    """
    n_items, n_raters, n_labels = votes.shape
    post = majority(votes).probs
    labelled = votes.sum(axis=(1, 2)) > 0
    confusion = np.full((n_raters, n_labels, n_labels), 1.0 / n_labels)
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        prior = (post[labelled].sum(axis=0) + smoothing) / (labelled.sum() + smoothing * n_labels)
        # M-step: confusion[j, k, l] = sum_i post[i, k] * votes[i, j, l], row-normalised
        counts = np.einsum("ik,ijl->jkl", post, votes) + smoothing
        confusion = counts / counts.sum(axis=2, keepdims=True)
        # E-step: log post[i, k] = log prior[k] + sum_jl votes[i, j, l] log confusion[j, k, l]
        log_post = np.log(prior)[None, :] + np.einsum("ijl,jkl->ik", votes, np.log(confusion))
        log_post -= log_post.max(axis=1, keepdims=True)
        new = np.exp(log_post)
        new /= new.sum(axis=1, keepdims=True)
        new[~labelled] = 0.0
        done = np.abs(new - post).max() < tol
        post = new
        if done:
            break
    return Aggregate(post, confusion, iterations)
