"""The judge's confusion against people, and what it says about one item: one place.

``distill --human`` reads it to turn the judge's labels into targets (``posterior``,
``forward``); the labelling page's ``--select teach`` reads it to ask people where they
would most likely overturn the judge. Both estimate the matrix on the items that the
judge and people both labelled, and combine it with a model's probabilities the same way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["judge_confusion", "person_posterior", "overturn_chance"]


def judge_confusion(judge: np.ndarray, person: np.ndarray, smoothing: float = 0.5) -> np.ndarray:
    """``C[h, j]`` = P(judge says j | person says h) from rows both labelled (soft judge rows).

    Args:
        judge: the judge's labels as rows of probabilities (n, k); one-hot for a hard label.
        person: people's label indices (n,).
        smoothing: added to every count, so a class people never used (or the judge never
            said) gets the uniform row, never a zero.

    >>> judge_confusion(np.eye(2)[[0, 0, 1]], np.array([0, 1, 1])).round(3).tolist()
    [[0.75, 0.25], [0.5, 0.5]]
    """
    k = judge.shape[1]
    counts = np.eye(k)[person].T @ judge + smoothing
    return counts / counts.sum(axis=1, keepdims=True)


def person_posterior(P: np.ndarray, judge: np.ndarray, C: np.ndarray) -> np.ndarray:
    """P(person says h | x, judge's label) ~ ``p(h | x) * sum_j judge_j C[h, j]``, per row.

    Args:
        P: a model's probabilities over people's labels (n, k).
        judge: the judge's labels as rows of probabilities (n, k).
        C: :func:`judge_confusion`.

    >>> C = np.array([[0.9, 0.1], [0.5, 0.5]])  # the judge calls half of people's 1s a 0
    >>> person_posterior(np.array([[0.5, 0.5]]), np.eye(2)[[0]], C).round(3).tolist()
    [[0.643, 0.357]]
    """
    post = P * (judge @ C.T)
    return post / post.sum(axis=1, keepdims=True)


def overturn_chance(P: np.ndarray, judge: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The chance that a person's label differs from the judge's, per row (n,).

    ``1 - sum_h judge_h P(h | x, judge)`` with :func:`person_posterior`: the model's
    probability of each of people's labels, corrected by how often the judge gives the label
    it gave when people say each one. With no overlap to learn from (``C`` uniform) it is
    ``1 - p(judge's label | x)``.

    >>> C = np.array([[0.9, 0.1], [0.5, 0.5]])
    >>> overturn_chance(np.array([[0.5, 0.5], [0.5, 0.5]]), np.eye(2), C).round(3).tolist()
    [0.357, 0.167]
    """
    return 1.0 - (person_posterior(P, judge, C) * judge).sum(axis=1)
