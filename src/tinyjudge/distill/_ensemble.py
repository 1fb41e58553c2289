"""Ensembles of reward models: the members' mean, their spread, a conservative reward.

A policy pushed against one reward model finds the places where it is wrong
with confidence; members fitted on bootstrap resamples of the training items
(or with other seeds) disagree there. The ensemble's probabilities are the
members' mean; each label's ``score`` is the members' mean score minus
``risk`` times their spread (standard deviation), floored at 0, and the
spread itself travels in the label's ``raw`` (``{"spread", "mean", "members", "of"}``,
``of`` naming the labels whose probability the score sums)
and in the reward server's answer, so an RL loop sees the uncertainty.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label

from ._base import RewardModel, batched, model_rubric
from ._configs import EnsembleConfig
from ._configured import Configured

__all__ = ["EnsembleRM", "ensemble_fit", "MEMBERS_FILE"]

MEMBERS_FILE = "members.json"
Fit = Callable[[list[Item], np.ndarray], RewardModel]


class EnsembleRM(Configured):
    """K reward models of one tier; mean probabilities, a score lowered by their spread.

    Args:
        rubric: the rubric (or its name) whose labels are the classes.
        name: the model's name; labels get source ``rm:<name>``.
        config: an :class:`EnsembleConfig`: ``risk``, the served score is the mean
            score minus ``risk`` spreads (0: the mean); keyword options override it.
    """

    tier = "ensemble"
    config_class = EnsembleConfig
    config: EnsembleConfig
    # name -> class of the tiers a member may be; ``_load`` fills it in with its TIERS
    # (this module sits below it: no import circle)
    member_tiers: ClassVar[Mapping[str, type[RewardModel]]] = {}

    def set_members(self, members: Sequence[RewardModel]) -> EnsembleRM:
        """Use ``members`` (fitted, one rubric) as this ensemble's; returns self."""
        if len(members) < 2:
            raise UsageError(f"an ensemble needs at least 2 members, got {len(members)}")
        self.members_ = list(members)
        self.config = self.config.replace(k=len(members))  # a loaded directory's own count
        self.classes_ = list(self.rubric.label_names)
        first = dict(getattr(self.members_[0], "card_", {}))
        self.card_ = {**first, "ensemble": {"k": len(members), "tier": members[0].tier,
                                            "risk": self.config.risk}}  # fmt: skip
        return self

    def member_probas(self, items: Sequence[Item]) -> np.ndarray:
        """Each member's probabilities, shape (k, n, labels)."""
        return np.stack([m.predict_proba(list(items)) for m in self.members_])

    def predict_proba(self, items: Sequence[Item]) -> np.ndarray:
        """The members' mean probabilities (each member reads items as its tier does)."""
        self._check_fitted()
        items = list(items)
        if not items:
            return np.zeros((0, len(self.classes_)))
        return self._combine(self.member_probas(items))

    def _combine(self, members: np.ndarray) -> np.ndarray:
        P = members.mean(axis=0)
        if self.calibrator_ is not None:
            P = np.asarray(self.calibrator_.predict_proba(P), dtype=np.float64)
        P = np.maximum(P / P.sum(axis=1, keepdims=True), self.PROB_FLOOR)
        return P / P.sum(axis=1, keepdims=True)

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        raise UsageError(
            "an ensemble is fitted by distill: pass ensemble=EnsembleConfig(k=K)",
            param="ensemble",
        )

    def _positive_scores(self, members: np.ndarray) -> np.ndarray:
        cols = [self.classes_.index(p) for p in self.rubric.positive]
        return members[:, :, cols].sum(axis=2)

    def labels_for(self, items: Sequence[Item], P: np.ndarray) -> list[Label]:
        """Labels from the mean ``P``; score and spread from the members (scored again)."""
        return self._labels(list(items), P, self.member_probas(items))

    def score_items(self, items: Iterable[Item], batch_size: int = 64) -> list[Label]:
        """Labels with the mean probabilities, the conservative score and the spread."""
        out: list[Label] = []
        for batch in batched(items, batch_size):
            members = self.member_probas(batch)
            out += self._labels(batch, self._combine(members), members)
        return out

    def _labels(self, items: list[Item], P: np.ndarray, members: np.ndarray) -> list[Label]:
        labels = super().labels_for(items, P)
        if not self.rubric.positive:
            return labels
        scores = self._positive_scores(members)
        mean, spread = scores.mean(axis=0), scores.std(axis=0)
        for lab, m, s, row in zip(labels, mean, spread, scores.T, strict=True):
            lab.score = float(max(0.0, m - self.config.risk * s))
            lab.raw = {
                "spread": float(s),
                "mean": float(m),
                "members": [float(x) for x in row],
                "of": list(self.rubric.positive),
            }
        return labels

    def _save_files(self, model_dir: Path) -> None:
        entries = []
        for i, m in enumerate(self.members_):
            sub = model_dir / f"member-{i}"
            sub.mkdir()
            m._save_files(sub)
            entries.append(
                {"tier": m.tier, "name": m.name, "params": m._meta_params(), "folder": sub.name}
            )
        (model_dir / MEMBERS_FILE).write_text(json.dumps(entries, indent=1))

    @classmethod
    def _load(cls, model_dir: Path, meta: dict[str, Any]) -> EnsembleRM:
        rubric = model_rubric(model_dir, meta)
        members = []
        for entry in json.loads((model_dir / MEMBERS_FILE).read_text()):
            sub = {"rubric": meta["rubric"], "classes": meta["classes"], "card": {}, **entry}
            tier = cls.member_tiers[entry["tier"]]
            members.append(tier._load(model_dir / entry["folder"], sub))
        model = cls(rubric, meta["name"], **meta["params"]).set_members(members)
        model.card_ = meta.get("card", {})
        return model


def ensemble_fit(
    fit: Fit, config: EnsembleConfig
) -> Callable[[list[Item], np.ndarray], EnsembleRM]:
    """``fit`` made to fit ``config.k`` members and return their :class:`EnsembleRM`.

    ``bootstrap``: each member on a resample (with replacement) of the items;
    ``seed``: each member on all items in another order (for tiers whose
    training depends on the order and the seed, like the transformer tier).
    """

    def fit_all(items: list[Item], Y: np.ndarray) -> EnsembleRM:
        rng = np.random.default_rng(config.seed)
        members = []
        for _ in range(config.k):
            if config.mode == "bootstrap":
                rows = rng.integers(0, len(items), size=len(items))
            else:
                rows = rng.permutation(len(items))
            members.append(fit([items[int(i)] for i in rows], Y[rows]))
        ens = EnsembleRM(members[0].rubric, members[0].name, config=config)
        return ens.set_members(members)

    return fit_all
