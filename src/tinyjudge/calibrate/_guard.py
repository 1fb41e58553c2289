"""Calibration that cannot make things worse: each method against no calibration, held out.

A calibrator is fitted on some people's labels and applied to new items; it can
overfit, or reshape probabilities in a way the data does not support (one
temperature cannot fix a prior shift). :func:`compare_methods` cross-fits every
method on the same grouped folds and puts its held-out NLL and ECE beside those
of the identity (the source's own probabilities, measured on the same rows).

A method is *worse* on a metric when its held-out figure is higher than the
identity's and a paired bootstrap of the difference (the same resampled rows for
both, whole groups at a time) puts the whole 95% interval above 0; or when it is
higher on both NLL and ECE at once. A tick within the noise on one metric while
the other improves (ECE 0.0366 -> 0.0392 on 100 items, NLL 0.55 -> 0.35) is not
a reason to throw a calibration away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from tinyjudge._stats import bootstrap_many
from tinyjudge.calibrate._calibrators import CALIBRATORS, make_calibrator
from tinyjudge.calibrate._crossfit import CrossFitOptions, CrossFitResult, cross_fit
from tinyjudge.calibrate._metrics import METRICS

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["IfWorse", "IF_WORSE", "MethodCheck", "compare_methods", "GUARD_METRICS"]

IfWorse = Literal["identity", "refuse", "keep"]
IF_WORSE: tuple[str, ...] = ("identity", "refuse", "keep")
GUARD_METRICS = ("nll", "ece")  # held-out figures a method must not make worse


class MethodCheck(NamedTuple):
    """How a calibration method fares against no calibration on held-out rows.

    Attributes:
        method: the method asked for.
        worse: the metrics of :data:`GUARD_METRICS` on which ``method`` is worse
            than the identity, held out (empty: it is safe to apply).
        best: the method (or ``"identity"``) with the lowest held-out NLL among
            those no worse than the identity on ECE.
        table: ``{method or "identity": {"nll": ..., "ece": ...}}``, held out.
        result: the asked-for method's :class:`CrossFitResult` (with intervals).
    """

    method: str
    worse: list[str]
    best: str
    table: dict[str, dict[str, float]]
    result: CrossFitResult

    @property
    def ok(self) -> bool:
        """True when ``method`` is no worse than the identity on every guarded metric."""
        return not self.worse

    def message(self) -> str:
        """One line for the user: what was worse, by how much, and what is better."""
        if self.ok:
            return f"{self.method} calibration is no worse than none on held-out NLL and ECE"
        figs = ", ".join(
            f"{m.upper()} {self.table['identity'][m]:.4f} -> {self.table[self.method][m]:.4f}"
            for m in self.worse
        )
        better = (
            "no calibration is better on this data"
            if self.best == "identity"
            else f"method {self.best!r} is better on this data "
            f"(held-out NLL {self.table[self.best]['nll']:.4f}, "
            f"ECE {self.table[self.best]['ece']:.4f})"
        )
        return f"{self.method} calibration makes held-out {figs} worse than none; {better}"


def compare_methods(
    method: str, P: np.ndarray, y: Any, **options: Unpack[CrossFitOptions]
) -> MethodCheck:
    """Cross-fit ``method`` and every other method on the same folds, against the identity.

    Args:
        method: the method asked for (a key of :data:`CALIBRATORS`).
        P: the source's probabilities (n, k).
        y: true classes (indices, or names with ``classes``).
        **options: :func:`cross_fit`'s (``classes``, ``groups``, ``n_splits``,
            ``n_boot``, ``seed``); ``n_boot`` is for the asked-for method's
            intervals, the others are compared on their point figures only.
    """
    make_calibrator(method)  # an unknown method fails in one line
    result = cross_fit(method, P, y, **options)
    after = {method: result.after}
    points_only = options.copy()
    points_only["n_boot"] = 1
    for other in CALIBRATORS:
        if other != method:
            after[other] = cross_fit(other, P, y, **points_only).after
    table = {"identity": _point(result.y, result.before)}
    worse_of: dict[str, list[str]] = {}
    for name, Q in after.items():
        table[name] = _point(result.y, Q)
        worse_of[name] = _worse(result.y, result.before, Q, result.groups, result.seed)
    safe = ["identity", *(m for m in after if not worse_of[m])]
    best = min(safe, key=lambda m: table[m]["nll"])
    return MethodCheck(method, worse_of[method], best, table, result)


def _point(y: np.ndarray, P: np.ndarray) -> dict[str, float]:
    return {m: float(METRICS[m](y, P)) for m in GUARD_METRICS}


def _worse(
    y: np.ndarray, before: np.ndarray, after: np.ndarray, groups: Any, seed: int
) -> list[str]:
    """The guarded metrics on which ``after`` is worse than ``before`` (see the module doc)."""
    diffs = {m: (lambda f: lambda y, A, B: f(y, B) - f(y, A))(METRICS[m]) for m in GUARD_METRICS}
    ci = bootstrap_many(diffs, y, before, after, groups=groups, n_boot=300, seed=seed)
    higher = [m for m in GUARD_METRICS if ci[m].estimate > 0]
    if len(higher) == len(GUARD_METRICS):
        return higher
    return [m for m in higher if ci[m].low > 0]
