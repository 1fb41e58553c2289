"""People's labels as the target, the judge's as a plentiful biased proxy: chosen by grouped CV.

``distill --human`` (method ``auto``) on a tier that declares a linear head
(:attr:`RewardModel.linear_head`: its scores are a :class:`SoftLogistic` over
``head_inputs(items)``) fits its features once on every training item, then
measures four heads on people's rows by grouped cross-validation:

- ``judge``: the head distilled from the judge's labels alone;
- ``people``: a head fitted on people's rows alone (the plain baseline);
- ``stack``: a head fitted on people's rows over the features plus the judge
  head's logits, cross-fitted (a row's judge logits come from a head that never
  saw its group). Logits are linear in the features, so the stacked head folds
  into one head of the tier: the saved model needs no judge and no new format;
- ``weighted``: one head on every row, a person's label where there is one
  (else the judge's), people's rows weighing as much as the judge's together.

The best by cross-validated kappa with people (log loss breaks a tie) is refitted
on every row, and a temperature fitted on its out-of-fold probabilities (never
below 1) is folded into its head, so the model is calibrated against people without a row seeing
itself. ``people`` is always a candidate, so in cross-validation the choice is
never worse than the plain baseline. The card carries the table
(:class:`Combination`).

A tier without a linear head (the transformer; a cross-encoder unless it
declares one) keeps :func:`~tinyjudge.distill._people.people_targets`' rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from tinyjudge._people_methods import even_weight

from ._linear import SoftLogistic

__all__ = ["CANDIDATES", "Combination", "combine_heads", "merge_stacked"]

CANDIDATES = ("judge", "people", "stack", "weighted")
MAX_FOLDS = 5


@dataclass(frozen=True)
class Combination:
    """What the combination chose and why: the grouped cross-validation on people's rows.

    Attributes:
        chosen: the candidate refitted on every row.
        table: per candidate, ``kappa`` and ``log_loss`` on people's held-out rows.
        folds: the number of grouped folds (0: too few groups to cross-validate).
        temperature: the temperature folded into the chosen head.
    """

    chosen: str
    table: dict[str, dict[str, float]]
    folds: int
    temperature: float

    def card(self) -> dict[str, Any]:
        """The model card's record."""
        return {
            "chosen": self.chosen,
            "folds": self.folds,
            "temperature": round(self.temperature, 4),
            "cv": {k: {m: round(v, 4) for m, v in row.items()} for k, row in self.table.items()},
        }


@dataclass(frozen=True)
class Scorer:
    """A fitted head and the matrix of its inputs on every row."""

    head: Any  # a SoftLogistic, or a _Prior
    inputs: Any

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return self.head.predict_proba(self.inputs[rows])


class _Prior:
    """What a head can say from rows of a single class: the smoothed class shares."""

    def __init__(self, Y: np.ndarray) -> None:
        mass = Y.sum(axis=0) + 0.5
        self.p_ = mass / mass.sum()

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.tile(self.p_, (X.shape[0], 1))


def _fit(new_head: Callable[[], SoftLogistic], X: Any, Y: np.ndarray, w: Any = None) -> Any:
    """A head fitted on the rows, or their prior when the rows hold one class only (a small
    fold of people's rows can: it then predicts what it saw, and its CV figures show it)."""
    if np.count_nonzero(Y.sum(axis=0)) < 2:
        return _Prior(Y)
    return new_head().fit(X, Y, w)


def _centred(head: SoftLogistic) -> tuple[np.ndarray, np.ndarray]:
    """The head's weights and biases, minus their mean over its present classes, one row
    per class (zero for a class it never saw): its centred logits are linear in X."""
    W = head.coef_.astype(np.float64)
    b = head.intercept_.astype(np.float64)
    Wc = np.zeros((head.k_, W.shape[1]))
    bc = np.zeros(head.k_)
    Wc[head.present_] = W - W.mean(axis=0)
    bc[head.present_] = b - b.mean()
    return Wc, bc


def _centred_logits(head: SoftLogistic, X: Any) -> np.ndarray:
    """The head's logits, each row minus its mean over the present classes (n, k)."""
    Wc, bc = _centred(head)
    return np.asarray(X @ Wc.T) + bc


def _stacked(X: Any, Z: np.ndarray) -> Any:
    return sparse.hstack([X, sparse.csr_matrix(Z)], format="csr")


def merge_stacked(stacked: SoftLogistic, judge: SoftLogistic, n_features: int) -> SoftLogistic:
    """One head equal to ``stacked`` over ``[X, centred judge logits of X]``.

    The judge's centred logits are ``X @ Wc.T + bc``, so ``W X + A (Wc X + bc) + b``
    is ``(W + A Wc) X + (b + A bc)``.
    """
    W, A = stacked.coef_[:, :n_features].astype(np.float64), stacked.coef_[:, n_features:]
    Wc, bc = _centred(judge)
    merged = SoftLogistic(C=stacked.C, balanced=stacked.balanced)
    merged.k_, merged.present_, merged.absent_p_ = stacked.k_, stacked.present_, stacked.absent_p_
    merged.coef_ = (W + A @ Wc).astype(np.float32)
    merged.intercept_ = (stacked.intercept_ + A @ bc).astype(np.float32)
    return merged


def _scaled(head: SoftLogistic, temperature: float) -> SoftLogistic:
    """The head with its logits divided by ``temperature`` (temperature scaling, folded in)."""
    out = SoftLogistic(C=head.C, balanced=head.balanced)
    out.k_, out.present_, out.absent_p_ = head.k_, head.present_, head.absent_p_
    out.coef_ = (head.coef_ / temperature).astype(np.float32)
    out.intercept_ = (head.intercept_ / temperature).astype(np.float32)
    return out


def _folds(groups: np.ndarray, human: np.ndarray) -> list[np.ndarray]:
    """Grouped folds of the people-labelled rows: each a set of row indices."""
    from sklearn.model_selection import GroupKFold

    rows = np.flatnonzero(human)
    n_groups = len(np.unique(groups[rows]))
    if n_groups < 2:
        return []
    split = GroupKFold(n_splits=min(MAX_FOLDS, n_groups)).split(rows, groups=groups[rows])
    return [rows[te] for _, te in split]


def combine_heads(
    X: Any,
    Y: np.ndarray,
    is_human: np.ndarray,
    judge: np.ndarray,
    groups: Sequence[str],
    new_head: Callable[[], SoftLogistic],
    judge_full: SoftLogistic,
) -> tuple[SoftLogistic, Combination]:
    """Choose and fit the head that best predicts people from the judge's and people's rows.

    Args:
        X: the tier's head inputs on every training row (n, d).
        Y: targets (n, k): a person's label (one-hot) on ``is_human`` rows.
        is_human: True on rows people labelled.
        judge: the judge's soft labels (n, k); zero rows where it gave none.
        groups: each row's group (rows of a group are held out together).
        new_head: an unfitted head with the tier's options.
        judge_full: the head fitted on every row the judge labelled.

    Returns:
        The chosen head (temperature folded in) and the record of the choice.
    """
    from sklearn.metrics import cohen_kappa_score, log_loss

    from tinyjudge.calibrate import make_calibrator

    g = np.asarray(groups)
    has_judge = judge.sum(axis=1) > 0
    k = Y.shape[1]
    folds = _folds(g, is_human)

    def judge_head(rows: np.ndarray) -> SoftLogistic:
        return new_head().fit(X[rows], judge[rows])

    def fit(name: str, train: np.ndarray, Z: np.ndarray, jh: SoftLogistic) -> Scorer:
        """Candidate ``name`` fitted with people's labels on rows ``train``."""
        if name == "judge":
            return Scorer(jh, X)
        if name == "people":
            return Scorer(_fit(new_head, X[train], Y[train]), X)
        if name == "stack":
            XZ = _stacked(X, Z)
            return Scorer(_fit(new_head, XZ[train], Y[train]), XZ)
        # weighted: every judge row outside the held-out groups, people's rows on top
        person = np.zeros(len(Y), dtype=bool)
        person[train] = True
        out = np.isin(g, g[is_human & ~person])  # the held-out groups: none of their rows
        rows = np.flatnonzero(((has_judge & ~is_human) | person) & ~out)
        w = np.where(person[rows], even_weight(int((~person[rows]).sum()), len(train)), 1.0)
        T = np.where(person[:, None], Y, judge)[rows]
        return Scorer(_fit(new_head, X[rows], T, w), X)

    table: dict[str, dict[str, float]] = {}
    oof = {name: np.zeros((len(Y), k)) for name in CANDIDATES}
    chosen, held = "weighted", np.zeros(0, dtype=int)
    Z_oof = np.zeros((len(Y), k))
    if folds:
        held = np.concatenate(folds)
        y_true = Y[held].argmax(axis=1)
        # one judge head per fold, blind to the fold's groups: its logits on the fold's people
        # rows are what the stacked head reads there, so no row's feature saw its own group
        heads = [judge_head(np.flatnonzero(has_judge & ~np.isin(g, g[f]))) for f in folds]
        for fold, jh in zip(folds, heads, strict=True):
            Z_oof[fold] = _centred_logits(jh, X[fold])
        for fold, jh in zip(folds, heads, strict=True):
            train = np.flatnonzero(is_human & ~np.isin(g, g[fold]))
            for name in CANDIDATES:
                oof[name][fold] = fit(name, train, Z_oof, jh)(fold)
        for name in CANDIDATES:
            P = oof[name][held]
            table[name] = {
                # undefined (one class on both sides) is no agreement beyond chance
                "kappa": float(np.nan_to_num(cohen_kappa_score(y_true, P.argmax(axis=1)))),
                "log_loss": float(log_loss(y_true, P, labels=list(range(k)))),
            }
        # rows of one class teach people's or the stacked head nothing to refit on
        able = CANDIDATES if np.count_nonzero(Y[is_human].sum(axis=0)) > 1 else ("judge",)
        chosen = max(able, key=lambda n: (table[n]["kappa"], -table[n]["log_loss"]))
    human_rows = np.flatnonzero(is_human)
    if chosen == "judge":
        head = judge_full
    elif chosen == "people":
        head = new_head().fit(X[human_rows], Y[human_rows])
    elif chosen == "stack":
        stacked = new_head().fit(_stacked(X[human_rows], Z_oof[human_rows]), Y[human_rows])
        head = merge_stacked(stacked, judge_full, X.shape[1])
    else:
        head = fit("weighted", human_rows, Z_oof, judge_full).head
    temperature = 1.0
    if len(held):
        cal = make_calibrator("temperature").fit(oof[chosen][held], Y[held].argmax(axis=1))
        # Never sharpen: the out-of-fold heads saw fewer rows than the one refitted on all,
        # which is surer of itself already; a temperature below 1 fitted on the former made the
        # latter overconfident (XSTest, 300 labels: ECE 0.036 -> 0.052 in bench/people.py).
        temperature = max(1.0, float(cal.temperature_))
        head = _scaled(head, temperature)
    return head, Combination(chosen, table, len(folds), temperature)
