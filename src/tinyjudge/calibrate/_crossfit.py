"""Honest evaluation: calibrate on some human labels, measure on the others.

Folds are grouped (GroupKFold) so that every item of one prompt sits on the same
side; otherwise a calibrator can learn a prompt from its siblings and look better
than it will on new prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np
from sklearn.base import clone

from tinyjudge.calibrate._calibrators import BaseCalibrator, check_probs, make_calibrator
from tinyjudge.calibrate._metrics import calibration_metrics
from tinyjudge.errors import UsageError

__all__ = ["CrossFitResult", "CrossFitOptions", "cross_fit"]


class CrossFitResult(NamedTuple):
    """Held-out calibrated probabilities and metrics before and after.

    Attributes:
        method: the calibrator's method name.
        y: true class indices.
        before: the source's own probabilities.
        after: each row calibrated by a calibrator fitted without its group.
        fold: the fold each row was held out in.
        metrics_before: ``{metric: BootstrapCI}`` of ``before``.
        metrics_after: ``{metric: BootstrapCI}`` of ``after``.
        groups: the group key per row the folds kept whole (None: random folds).
        seed: the folds' and bootstrap's seed.
    """

    method: str
    y: np.ndarray
    before: np.ndarray
    after: np.ndarray
    fold: np.ndarray
    metrics_before: dict[str, Any]
    metrics_after: dict[str, Any]
    groups: Sequence[Any] | None = None
    seed: int = 0


class CrossFitOptions(TypedDict, total=False):
    """:func:`cross_fit`'s keyword options, for a function that passes them on to it."""

    classes: Sequence[Any] | None
    groups: Sequence[Any] | None
    n_splits: int
    n_boot: int
    seed: int


def cross_fit(
    calibrator: BaseCalibrator | str,
    P: Any,
    y: Any,
    *,
    classes: Sequence[Any] | None = None,
    groups: Sequence[Any] | None = None,
    n_splits: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
) -> CrossFitResult:
    """Cross-fit a calibrator and report held-out metrics before and after.

    Args:
        calibrator: an unfitted calibrator, or a method name for :func:`make_calibrator`.
        P: the source's probabilities, shape (n, k).
        y: the true classes (indices, or names with ``classes``).
        classes: class names in column order.
        groups: a group key per row (e.g. prompt id); folds never split a group.
            None splits items at random (seeded).
        n_splits: folds; at most the number of groups.
        n_boot: bootstrap resamples for the metrics' intervals (clustered by ``groups``).
        seed: fold shuffling and bootstrap seed.
    """
    from sklearn.model_selection import GroupKFold, KFold

    P = check_probs(P)
    base = make_calibrator(calibrator) if isinstance(calibrator, str) else calibrator
    # Work in index space so that every clone sees the same columns whatever
    # classes a training fold happens to contain.
    names = list(classes) if classes is not None else None
    y_idx = make_calibrator("temperature", names)._targets(y, P.shape[1])
    if len(y_idx) != len(P):
        raise UsageError(f"P has {len(P)} rows but y has {len(y_idx)} entries")
    if n_splits < 2:
        raise UsageError(f"n_splits must be at least 2, got {n_splits}")
    if groups is not None:
        n_groups = len(set(groups))
        if n_splits > n_groups:
            raise UsageError(f"n_splits={n_splits} needs at least as many groups, got {n_groups}")
        splits = GroupKFold(n_splits=n_splits).split(P, y_idx, groups=list(groups))
    else:
        if n_splits > len(P):
            raise UsageError(f"n_splits={n_splits} is more than the {len(P)} items")
        splits = KFold(n_splits=n_splits, shuffle=True, random_state=seed).split(P)
    after = np.empty_like(P)
    fold = np.empty(len(P), dtype=np.intp)
    for f, (train, test) in enumerate(splits):
        cal = clone(base).set_params(classes=None)
        after[test] = cal.fit(P[train], y_idx[train]).predict_proba(P[test])
        fold[test] = f
    kw: dict[str, Any] = {"groups": groups, "n_boot": n_boot, "seed": seed}
    return CrossFitResult(
        base.method,
        y_idx,
        P,
        after,
        fold,
        calibration_metrics(y_idx, P, **kw),
        calibration_metrics(y_idx, after, **kw),
        groups,
        seed,
    )
