"""What every reward-model tier shares: targets, scoring to Labels, and saving."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from tinyjudge._model_dir import (
    FORMAT,
    FORMAT_VERSION,
    META_FILE,
    ModelDirUpdate,
    model_rubric,
    save_model_dir,
)
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from ._card import model_card
from ._data import data_hash
from ._text import View, answer_prefixes, answer_views, item_views

__all__ = [
    "RewardModel",
    "FORMAT",
    "FORMAT_VERSION",
    "META_FILE",
    "model_rubric",
    "batched",
]


def batched(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    """Consecutive lists of at most ``size`` items, without holding the whole stream."""
    batch: list[Item] = []
    for it in items:
        batch.append(it)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


_VIEW_BATCH = 256


class RewardModel(ClassifierMixin, BaseEstimator):
    """A scikit-learn classifier over items whose classes are a rubric's labels.

    Subclasses implement ``_fit(items, Y)`` on soft targets ``Y`` (n, k),
    ``_proba(items)``, ``_save_files(model_dir)`` (any files: shards, adapters) and
    ``_load(model_dir, meta)``. A calibrator set on ``calibrator_`` maps every
    ``predict_proba`` output; ``tinyjudge.calibrate(model, ...)`` gives a calibrated
    copy, which carries its ``calibration_`` (``save`` writes both, ``load_model``
    reads them back).
    """

    tier: ClassVar[str] = ""
    calibrator_: Any = None
    calibration_: Any = None  # the tinyjudge.calibrate.Calibration behind calibrator_
    # predict_proba keeps every probability in [PROB_FLOOR, 1 - PROB_FLOOR]: never
    # exactly 0 or 1, so a log (NLL, a calibrator, a reward) is always finite.
    PROB_FLOOR: ClassVar[float] = 1e-9
    # Declared capabilities (no tier name is checked anywhere). linear_head: a SoftLogistic
    # ``head_`` over ``head_inputs(items)``, which the people combination refits (_combine.py).
    # takes_eval_set: ``fit(..., eval_set=(items, Y))`` scores a split while training.
    # drops_unweighted_rows: rows of weight 0 teach it nothing and are left out of a fit.
    linear_head: ClassVar[bool] = False
    takes_eval_set: ClassVar[bool] = False
    drops_unweighted_rows: ClassVar[bool] = False

    # -- fitting ---------------------------------------------------------------

    @property
    def view(self) -> str:
        """What this model reads of an item: the rubric's ``reward_model.view``."""
        return self.rubric.reward_model.view

    def views_of(self, items: Sequence[Item]) -> list[View]:
        """The (context, response) text this model reads of each single item."""
        return [self.item_views(it)[0] for it in items]

    def item_views(self, item: Item) -> list[View]:
        """What this model reads of one item: one view, or two (``a``, ``b``) for a pair.

        The rubric's view (:func:`~tinyjudge.distill.item_views`); a tier that reads
        items another way (the cross tier) says so here and in :meth:`answer_views`.
        """
        return item_views(item, self.view, self.rubric)

    def answer_views(self, item: Item) -> list[View]:
        """One view per answer of the item, as ``combine: worst_answer`` scores them."""
        return answer_views(item, self.view, self.rubric)

    def fit(
        self,
        items: Sequence[Item],
        y: Sequence[str] | np.ndarray,
        sample_weight: Sequence[float] | np.ndarray | None = None,
    ) -> RewardModel:
        """Fit on items and the teacher's labels (strings) or soft targets (n, k).

        ``sample_weight`` (one non-negative number per item) scales each item's
        share of the loss on top of the balanced class mass, e.g. to let a
        person's label count more than a judge's (see :func:`fit_with_people`).

        Under the rubric's ``reward_model.combine: worst_answer``, items whose
        dialogue already turned negative at an earlier labelled answer are left
        out (their label is inherited, not a verdict on their own answer).
        """
        items = list(items)
        Y = self._targets(items, y)
        w = _check_weights(sample_weight, len(items))
        self.classes_ = list(self.rubric.label_names)
        n_given = len(items)
        if self.rubric.reward_model.combine == "worst_answer":
            keep = self._own_verdicts(items, Y)
            items, Y, w = [items[i] for i in keep], Y[keep], w[keep]
        self._fit(items, Y, w)
        self.card_ = {
            "data_hash": data_hash(items, Y),
            "n_train": len(items),
            "view": self.view,
            "combine": self.rubric.reward_model.combine,
            "references": [r.name for r in self.rubric.references]
            if self.rubric.reward_model.references
            else [],
        }
        if n_given != len(items):
            self.card_["n_left_out_inherited"] = n_given - len(items)
        licences = {it.metadata.get("license") for it in items}
        if licences != {None}:  # the card's licence: never guessed for items that name none
            named = sorted(str(x) for x in licences if x is not None)
            self.card_["licenses"] = named + ([None] if None in licences else [])
        return self

    def _positive_mass(self, P: np.ndarray) -> np.ndarray:
        cols = [self.rubric.label_names.index(p) for p in self.rubric.positive]
        return P[:, cols].sum(axis=1)

    def _own_verdicts(self, items: list[Item], Y: np.ndarray) -> np.ndarray:
        """Indices of items with no negative earlier answer among the labelled items."""
        key = {_dialogue_key(it): i for i, it in enumerate(items)}
        pos = self._positive_mass(Y)
        keep = []
        for i, it in enumerate(items):
            earlier = [key.get(_dialogue_key(p)) for p in answer_prefixes(it)[:-1]]
            if not any(j is not None and pos[j] < 0.5 for j in earlier):
                keep.append(i)
        if not keep:
            raise UsageError(
                "worst_answer: every training item inherits an earlier label", param="y"
            )
        return np.asarray(keep)

    def _targets(self, items: list[Item], y: Sequence[str] | np.ndarray) -> np.ndarray:
        names = self.rubric.label_names
        arr = np.asarray(y)
        if arr.ndim == 2:
            if arr.shape != (len(items), len(names)):
                raise UsageError(
                    f"soft targets must have shape (n_items, n_labels) = "
                    f"({len(items)}, {len(names)}), got {arr.shape}",
                    param="y",
                )
            Y = np.clip(arr.astype(np.float32), 0.0, None)
            sums = Y.sum(axis=1, keepdims=True)
            if np.any(sums <= 0):
                raise UsageError("every soft-target row needs some positive mass", param="y")
            return Y / sums
        if len(arr) != len(items):
            raise UsageError(f"got {len(items)} items but {len(arr)} labels", param="y")
        index = {n: j for j, n in enumerate(names)}
        Y = np.zeros((len(items), len(names)), dtype=np.float32)
        for i, value in enumerate(arr.tolist()):
            if value not in index:
                raise UsageError(
                    f"label {value!r} is not offered by rubric {self.rubric.id!r}; "
                    f"allowed: {names}",
                    param="y",
                )
            Y[i, index[value]] = 1.0
        return Y

    def _check_fitted(self) -> None:
        if not hasattr(self, "classes_"):
            raise UsageError(f"this {type(self).__name__} is not fitted; call fit() first")

    # -- prediction ------------------------------------------------------------

    def predict_proba(self, items: Sequence[Item]) -> np.ndarray:
        """Probabilities (n, k) over ``classes_`` (the rubric's label order).

        Every rubric label has a column and every probability is strictly
        between 0 and 1 (at least :attr:`PROB_FLOOR`).
        """
        self._check_fitted()
        items = list(items)
        if not items:
            return np.zeros((0, len(self.classes_)))
        if self.rubric.reward_model.combine == "worst_answer":
            P = self._worst_answer_proba(items)
        else:
            P = np.asarray(self._proba(items), dtype=np.float64)
        if self.calibrator_ is not None:
            P = np.asarray(self.calibrator_.predict_proba(P), dtype=np.float64)
        P = np.maximum(P / P.sum(axis=1, keepdims=True), self.PROB_FLOOR)
        return P / P.sum(axis=1, keepdims=True)

    def _worst_answer_proba(self, items: list[Item]) -> np.ndarray:
        """Each item's answers scored once each; the item gets its worst answer's row.

        Each answer's view is built once (:func:`answer_views`), so a rollout of
        ``n`` turns costs ``O(n)``, not one whole re-render per answer.
        """
        index: dict[View, int] = {}
        rows: list[list[int]] = []
        for it in items:
            rows.append([index.setdefault(v, len(index)) for v in self.answer_views(it)])
        views = list(index)
        # In batches: the features of a long rollout's answers are never all held at once.
        P = np.concatenate(
            [
                np.asarray(self._proba_views(views[i : i + _VIEW_BATCH]), dtype=np.float64)
                for i in range(0, len(views), _VIEW_BATCH)
            ]
        )
        P /= P.sum(axis=1, keepdims=True)
        pos = self._positive_mass(P)
        return np.stack([P[ids[int(np.argmin(pos[ids]))]] for ids in rows])

    def predict(self, items: Sequence[Item]) -> list[str]:
        """The most probable label of each item."""
        P = self.predict_proba(items)
        return [self.classes_[j] for j in P.argmax(axis=1)]

    @property
    def source(self) -> str:
        """The source of this model's labels: ``rm:<name>``, ``rm:<name>+cal`` when calibrated.

        Calibrated and uncalibrated scores of one model are two sources, so an
        audit of both keeps both.
        """
        return f"rm:{self.name}" + ("+cal" if self.calibrator_ is not None else "")

    @property
    def calibration(self) -> Any:
        """The :class:`tinyjudge.calibrate.Calibration` this model carries (``calibration_``;
        None when uncalibrated): method, human source, folds, grouping, held-out metrics."""
        return self.calibration_

    def score_items(self, items: Iterable[Item], batch_size: int = 64) -> list[Label]:
        """Labels with source :attr:`source`, ``probs`` and the rubric's scalar ``score``.

        When the model reads the rubric's references, an item lacking a required one
        gets an ``unscored`` label naming the missing field: never a blind score.
        """
        out: list[Label] = []
        for batch in batched(items, batch_size):
            labels: list[Label | None] = [None] * len(batch)
            pairs, singles = [], []  # a pairwise model scores a single rollout on its own
            for i, it in enumerate(batch):
                if note := self.blind_note(it):
                    labels[i] = self._blind_label(it, note)
                elif self.rubric.type == "pairwise" and not it.is_pairwise:
                    singles.append(i)
                else:
                    pairs.append(i)
            for idx, score in ((pairs, self._class_labels), (singles, self.reward_labels)):
                if idx:
                    for i, lab in zip(idx, score([batch[i] for i in idx]), strict=True):
                        labels[i] = lab
            out += [lab for lab in labels if lab is not None]
        return out

    def _class_labels(self, items: list[Item]) -> list[Label]:
        return self.labels_for(items, self.predict_proba(items))

    def reward_labels(self, items: list[Item]) -> list[Label]:
        """Labels of single items scored by a pairwise (Bradley-Terry) model, one each.

        Raises:
            UsageError: this tier has no pointwise reward for a pairwise rubric.
        """
        raise UsageError(
            f"the {self.tier} tier scores items of its rubric's type ({self.rubric.type}); "
            "give it pairs, or distill a transformer tier for a per-rollout reward",
            param="tier",
        )

    def blind_note(self, item: Item) -> str | None:
        """The required references ``item`` lacks, when this model reads references (else None)."""
        if not self.rubric.reward_model.references:
            return None
        return self.rubric.missing_reference_note(item)

    def _blind_label(self, item: Item, note: str) -> Label:
        return Label(
            item_id=item.id,
            rubric=self.rubric.id,
            rubric_hash=self.rubric.hash,
            source=self.source,
            status="unscored",
            reason=f"missing reference {note}: the reward model reads it; not scored without it",
        )

    def labels_for(self, items: Sequence[Item], P: np.ndarray) -> list[Label]:
        """Turn a probability matrix for ``items`` into Label records."""
        labels = []
        for it, row in zip(items, P, strict=True):
            probs = {c: float(p) for c, p in zip(self.classes_, row, strict=True)}
            labels.append(
                Label(
                    item_id=it.id,
                    rubric=self.rubric.id,
                    rubric_hash=self.rubric.hash,
                    source=self.source,
                    label=self.classes_[int(np.argmax(row))],
                    probs=probs,
                    score=self.rubric.score(probs),
                )
            )
        return labels

    # -- saving ----------------------------------------------------------------

    def save(self, model_dir: str | Path) -> Path:
        """Write the model, ``tinyjudge.json`` (every file's hash), a README model card
        and the model's calibration (``calibration.json``, its plot and card section).

        The directory is built beside ``model_dir`` and swapped in whole when it
        is complete (see :func:`tinyjudge._model_dir.save_model_dir`): a failed
        or killed save leaves the old model as it was, and nothing of an old
        model (a calibration fitted to its weights) survives. A calibration is
        bound to the weights saved with it; ``load_model`` applies it.

        Raises:
            ModelDirError: ``model_dir`` holds files but is not a model directory.
        """
        self._check_fitted()
        d = Path(model_dir)
        meta = {
            "tier": self.tier,
            "name": self.name,
            "classes": self.classes_,
            "params": self._meta_params(),
            "card": getattr(self, "card_", {}),
        }
        usage = self._usage(d)
        card = lambda m: model_card(m, usage)  # noqa: E731
        save_model_dir(d, meta, self.rubric, self._save_files, card, self._attach_calibration(d))
        if hasattr(self, "model_dir_"):
            self.model_dir_ = d
        return d

    def _attach_calibration(self, d: Path) -> Callable[[ModelDirUpdate], None] | None:
        """What ``save`` writes beside the weights for the calibration (None: uncalibrated)."""
        calibration, calibrator = self.calibration_, self.calibrator_
        if calibrator is None and calibration is None:
            return None
        from tinyjudge.calibrate import calibrator_state, write_model_calibration

        def attach(staged: ModelDirUpdate) -> None:
            if calibration is not None:
                write_model_calibration(staged, calibration, d.name)
            else:  # a calibrator set by hand: the calibrator alone
                staged.write_calibration(calibrator_state(calibrator))

        return attach

    def _meta_params(self) -> dict[str, Any]:
        return {k: v for k, v in self.get_params().items() if k not in {"rubric", "name"}}

    def _usage(self, model_dir: Path) -> str:
        return (
            "```python\nimport tinyjudge\n\n"
            f'rm = tinyjudge.load_model("{model_dir.name}")\nlabels = rm.score_items(items)\n```'
        )

    def top_terms(self, label: str, top: int = 20) -> list[tuple[str, float]]:
        """The answer's words weighed most toward ``label``, with their weights, heaviest
        first, where the tier's weights show words; none here (a search stays black-box)."""
        return []

    # -- subclass hooks --------------------------------------------------------

    def head_inputs(self, items: list[Item]) -> Any:
        """The matrix ``head_`` reads for these items (tiers with :attr:`linear_head`)."""
        raise NotImplementedError(f"the {self.tier} tier has no linear head")

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        raise NotImplementedError

    def _proba(self, items: list[Item]) -> np.ndarray:
        raise NotImplementedError

    def _proba_views(self, views: list[View]) -> np.ndarray:
        """Probabilities for the views of single items (each answer under ``worst_answer``)."""
        raise NotImplementedError

    def _save_files(self, model_dir: Path) -> None:
        """Write the tier's files into ``model_dir``; every file there is listed and hashed."""
        raise NotImplementedError

    @classmethod
    def _load(cls, model_dir: Path, meta: dict[str, Any]) -> RewardModel:
        raise NotImplementedError


def _dialogue_key(item: Item) -> tuple[tuple[str, str], ...]:
    return tuple((m.role, m.text) for m in item.messages)


def init_common(model: RewardModel, rubric: Rubric | str, name: str | None) -> None:
    """Set ``rubric`` (a Rubric) and ``name`` in a way ``sklearn.clone`` accepts."""
    model.rubric = load_rubric(rubric)
    model.name = name or f"{model.rubric.id}-{model.tier}"


def class_balance(Y: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Per-row weights that give each class the same total mass ("balanced").

    With ``sample_weight`` the mass is the weighted one, and each row's weight
    includes its own sample weight.
    """
    s = np.ones(len(Y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    mass = (Y * s[:, None]).sum(axis=0)
    present = mass > 0
    w = np.zeros(Y.shape[1])
    w[present] = s.sum() / (present.sum() * mass[present])
    return (Y @ w) * s


def _check_weights(sample_weight: Any, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=float)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise UsageError(
            f"sample_weight must hold {n} finite, non-negative numbers (not all 0), "
            f"got shape {w.shape}",
            param="sample_weight",
        )
    return w
