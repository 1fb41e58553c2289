"""Learn from a judge's labels and people's together, to predict what people say.

A judge labels every item; people label a few. The judge is often wrong in a
systematic way (GPT-4 calls most partial refusals full compliance on XSTest),
and a student trained on the judge alone copies the mistake. Every method here
turns both sources into one training set for any tier, through the two things
every tier's ``fit`` takes: soft targets (n, k) and per-item sample weights.

Methods (``bench/people_fidelity.py`` compares them on XSTest):

- ``weighted``: a person's label where there is one, else the judge's; each
  person's row weighs ``human_weight`` (default: as much as all judge-only rows
  together, shared out among the person-labelled rows).
- ``posterior``: judge-only rows get ``P(person says h | judge says j)``,
  estimated from the items both labelled (the judge's confusion matrix against
  people, with the people's label prior); person-labelled rows their label.
- ``forward``: forward loss correction, fitted by EM on soft targets: a
  judge-only row's target is ``P(h | x, judge said j) ~ p_model(h | x) C[h, j]``
  with the model of the previous round (the first round as ``posterior``).
- ``dawid-skene``: soft targets from Dawid-Skene over the judge and every
  human rater source given (``raters``), each with its own confusion matrix.
- ``auto`` (the default): on a tier with a linear head (linear, probe), the
  combination chosen by grouped cross-validation on people's rows among the
  judge's head, people's, the two stacked and one weighted fit, calibrated
  against people out of fold (:mod:`tinyjudge.distill._combine`). On another
  tier, ``people`` with at least :data:`AUTO_MIN_PEOPLE` person-labelled items,
  else ``weighted``.
- ``people``: people's labels only: judge-only rows stay in with weight 0, so
  the text features (vocabulary, IDF) are fitted on every item while the head
  learns from people alone (the encoder tier leaves those rows out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge._people_confusion import judge_confusion, person_posterior
from tinyjudge._people_methods import (
    AUTO_MIN_PEOPLE,
    DEFAULT_PEOPLE_METHOD,
    PEOPLE_METHODS,
    PeopleMethod,
    even_weight,
)
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label, index_labels, join_sources
from tinyjudge.rubric import Rubric, load_rubric

from ._data import targets

__all__ = [
    "PEOPLE_METHODS", "PeopleMethod", "DEFAULT_PEOPLE_METHOD", "AUTO_MIN_PEOPLE", "PeopleTargets",
    "people_targets", "fit_with_people", "judge_confusion", "even_weight",
]  # fmt: skip


class PeopleTargets(NamedTuple):
    """One training set from a judge's and people's labels.

    Attributes:
        items: every item with a usable label from either source.
        Y: soft targets (n, k) in rubric label order.
        weight: per-item sample weights (n,).
        is_human: True where a person's label is in the target.
        judge: the judge's soft labels (n, k); zero rows where it gave none.
        confusion: ``[person label, judge label]`` row-normalised, estimated on
            the items both labelled (add-half smoothing).
        method: the method that made the targets.
        n_judge, n_human, n_both: items the judge labelled, people labelled, both.
        asked: the method asked for (``auto`` resolves to ``method`` for a tier
            without a linear head; a tier with one combines by cross-validation).
    """

    items: list[Item]
    Y: np.ndarray
    weight: np.ndarray
    is_human: np.ndarray
    judge: np.ndarray
    confusion: np.ndarray
    method: str
    n_judge: int
    n_human: int
    n_both: int
    asked: str = ""

    def card(self) -> dict[str, Any]:
        """What the model card says about the training labels."""
        return {
            "human_method": self.method,
            "n_judge_labels": self.n_judge,
            "n_human_labels": self.n_human,
            "n_both": self.n_both,
            "human_weight": float(self.weight[self.is_human].mean()) if self.n_human else None,
        }


def _has_class(label: Label) -> bool:
    return label.status == "ok" and bool(label.label)


def _class_of(label: Label) -> str:
    """The class of a label that :func:`_has_class` kept."""
    assert label.label is not None
    return label.label


def _offered(got: dict[str, Label], source: str, names: Sequence[str]) -> dict[str, Label]:
    bad = next((lab for lab in got.values() if lab.label not in names), None)
    if bad is not None:
        raise UsageError(
            f"item {bad.item_id!r}: label {bad.label!r} of {source!r} is not offered by the "
            f"rubric; allowed: {list(names)}",
            param="labels",
        )
    return got


def _table(labels: Sequence[Label], sources: Sequence[str]) -> dict[str, dict[str, Label]]:
    table = index_labels(labels)
    for src in sources:
        if src not in table:
            raise UsageError(
                f"no labels with source {src!r}; the labels hold {sorted(table)}", param="labels"
            )
    return table


def _scored(labels: Sequence[Label], source: str, names: Sequence[str]) -> dict[str, Label]:
    """One source's labels that carry a class, by item, checked against the rubric."""
    got = _table(labels, [source])[source]
    return _offered({i: lab for i, lab in got.items() if _has_class(lab)}, source, names)


def _scored_pair(
    labels: Sequence[Label], source: str, human: str, names: Sequence[str]
) -> tuple[dict[str, Label], dict[str, Label]]:
    """:func:`_scored` of the judge and of people, by one join of the two sources."""
    joined = join_sources(_table(labels, [source, human]), source, human, usable=_has_class)
    return _offered(joined.scored_a, source, names), _offered(joined.scored_b, human, names)


def _posterior(judge: np.ndarray, C: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """P(h | judge's soft label) = sum_j judge_j * prior_h C[h, j] / sum_h' prior_h' C[h', j]."""
    joint = prior[:, None] * C  # [h, j]
    p_h_given_j = (joint / joint.sum(axis=0, keepdims=True)).T  # [j, h]
    return judge @ p_h_given_j


def people_targets(
    items: Sequence[Item],
    labels: Sequence[Label],
    source: str,
    human: str,
    rubric: Rubric | str,
    method: str = DEFAULT_PEOPLE_METHOD,
    human_weight: float | None = None,
    raters: Sequence[str] = (),
) -> PeopleTargets:
    """Soft targets and sample weights from ``source``'s (a judge's) and ``human``'s labels.

    Args:
        items: the items; labels of other items are ignored.
        labels: labels of any sources.
        source: the judge, e.g. ``judge:gpt-4``.
        human: the people's source, e.g. ``human:final``.
        rubric: the rubric of both sources' labels.
        method: one of :data:`PEOPLE_METHODS` (see the module doc); ``auto`` is
            resolved here, and the result names the method used.
        human_weight: the ``weighted`` method's weight of a person's row
            (default: judge-only rows / person rows, so both sides weigh the same).
        raters: human rater sources for ``dawid-skene`` (default: ``human`` alone).

    Raises:
        TinyjudgeError: an unknown method, a missing source, a label the rubric
            does not offer, no item people labelled, or no item both labelled.
    """
    if method not in PEOPLE_METHODS:
        raise UsageError(
            f"unknown human_method {method!r}; choose one of {list(PEOPLE_METHODS)}",
            param="human_method",
        )
    if human_weight is not None and not (0 < human_weight < math.inf):
        raise UsageError(
            f"human_weight must be a positive number (a person's row counts that many judge "
            f"rows), got {human_weight}",
            param="human_weight",
        )
    rubric = load_rubric(rubric)
    names = rubric.label_names
    k = len(names)
    judge_of, people_of = _scored_pair(labels, source, human, names)
    index = {n: j for j, n in enumerate(names)}
    kept = [it for it in items if it.id in judge_of or it.id in people_of]
    is_human = np.array([it.id in people_of for it in kept], dtype=bool)
    has_judge = np.array([it.id in judge_of for it in kept], dtype=bool)
    if not is_human.any():
        raise UsageError(f"none of the items has a {human!r} label; check human", param="human")
    J = np.zeros((len(kept), k))
    J[has_judge] = targets([judge_of[it.id] for it in kept if it.id in judge_of], names)
    person = np.array(
        [index[_class_of(people_of[it.id])] if it.id in people_of else -1 for it in kept]
    )
    both = is_human & has_judge
    if not both.any():
        raise UsageError(f"no item has both a {source!r} and a {human!r} label", param="human")
    asked = method
    if method == "auto":
        method = "people" if is_human.sum() >= AUTO_MIN_PEOPLE else "weighted"
    C = judge_confusion(J[both], person[both])
    prior = (np.bincount(person[is_human], minlength=k) + 0.5) / (is_human.sum() + 0.5 * k)
    H = np.eye(k)[np.where(is_human, person, 0)]
    weight = np.ones(len(kept))
    if method in ("weighted", "people"):
        Y = np.where(is_human[:, None], H, J)
        if method == "weighted":
            even = even_weight(int((~is_human).sum()), int(is_human.sum()))
            weight[is_human] = human_weight if human_weight is not None else even
        else:
            weight[~is_human] = 0.0
    elif method in ("posterior", "forward"):
        Y = np.where(is_human[:, None], H, _posterior(J, C, prior))
    else:  # dawid-skene
        Y = _dawid_skene(kept, labels, J, has_judge, [*(raters or [human])], names)
    return PeopleTargets(
        kept, Y, weight, is_human, J, C, method,
        int(has_judge.sum()), int(is_human.sum()), int(both.sum()), asked,
    )  # fmt: skip


def _dawid_skene(
    kept: list[Item],
    labels: Sequence[Label],
    J: np.ndarray,
    has_judge: np.ndarray,
    raters: list[str],
    names: Sequence[str],
) -> np.ndarray:
    from tinyjudge._aggregate import dawid_skene, vote_counts

    judge = "the judge"  # a column name that no rater source (``human:...``) can take
    ids = [it.id for it in kept]
    said = [
        (i, judge, names[int(k)])
        for i, k, h in zip(ids, J.argmax(axis=1), has_judge, strict=True)
        if h
    ]
    for rater in raters:
        of = _scored(labels, rater, names)
        said += [(i, rater, _class_of(of[i])) for i in ids if i in of]
    return dawid_skene(vote_counts(said, ids, [judge, *raters], names)).probs


def fit_with_people(
    model: Any, pt: PeopleTargets, rounds: int = 2, groups: Sequence[str] | None = None
) -> Any:
    """Fit ``model`` (any tier) on :func:`people_targets`' output; returns it.

    Method ``auto`` on a tier with a linear head combines the two sources by grouped
    cross-validation over ``groups`` (one key per item of ``pt.items``; default: each
    item its own group), see :mod:`tinyjudge.distill._combine`. ``forward`` runs
    ``rounds`` more fits after the first, each with the judge-only rows' targets
    re-weighted by the previous model (EM for the forward-corrected likelihood
    ``sum_h p(h | x) C[h, j]``); the other methods fit once.
    """
    if pt.asked == "auto" and model.linear_head:
        return _combined(model, pt, [it.id for it in pt.items] if groups is None else groups)
    if pt.method == "people" and model.drops_unweighted_rows:
        # rows of weight 0 teach a fine-tuned transformer nothing and cost a forward pass each
        keep = np.flatnonzero(pt.weight > 0)
        model.fit([pt.items[i] for i in keep], pt.Y[keep], pt.weight[keep])
        return _card(model, pt)
    model.fit(pt.items, pt.Y, pt.weight)
    if pt.method != "forward":
        return _card(model, pt)
    judge_only = ~pt.is_human
    for _ in range(rounds):
        P = model.predict_proba([pt.items[i] for i in np.flatnonzero(judge_only)])
        Y = pt.Y.copy()
        Y[judge_only] = person_posterior(P, pt.judge[judge_only], pt.confusion)
        model.fit(pt.items, Y, pt.weight)
    return _card(model, pt)


def _combined(model: Any, pt: PeopleTargets, groups: Sequence[str]) -> Any:
    """The tier's features on every item, then the head :func:`combine_heads` chooses."""
    from ._combine import combine_heads
    from ._linear import SoftLogistic

    if len(groups) != len(pt.items):
        raise UsageError(
            f"groups has {len(groups)} keys for {len(pt.items)} items; give one per item",
            param="groups",
        )
    has_judge = pt.judge.sum(axis=1) > 0
    # the judge's head on its own rows; rows only people labelled shape the features alone
    model.fit(pt.items, np.where(has_judge[:, None], pt.judge, pt.Y), has_judge.astype(float))
    judge_full = model.head_
    head, combination = combine_heads(
        model.head_inputs(pt.items), pt.Y, pt.is_human, pt.judge, groups,
        lambda: SoftLogistic(C=judge_full.C, balanced=judge_full.balanced), judge_full,
    )  # fmt: skip
    model.head_ = head
    _card(model, pt)
    model.card_.update({"human_method": "auto", "human_weight": None})
    model.card_["combination"] = combination.card()
    return model


def _card(model: Any, pt: PeopleTargets) -> Any:
    model.card_.update(pt.card())
    return model
