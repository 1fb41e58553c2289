"""Which item a reviewer labels next: in file order, in a random order, or actively.

``teach`` picks the item whose human label should help a distilled model most
(``distill --human``): where people would most likely overturn the judge's label, from the
reward model's probabilities and the judge's confusion against the people who labelled
so far (``1 - p_rm(judge's label)`` before anyone has), or, without a judge label, where
the model is least sure.
It is not a random sample, so no rate estimate is shown in that order.

``active`` asks :func:`tinyjudge.estimate.select_for_labelling` for the item
whose human label shrinks the confidence interval of the behaviour rate fastest,
given a cheap score (a judge's or a reward model's) for every item: stratified
sampling on the cheap score, so the progress panel's rate uses the matching
stratified PPI estimate and stays unbiased.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from tinyjudge._people_confusion import judge_confusion, overturn_chance
from tinyjudge.errors import UsageError
from tinyjudge.records import Label, index_labels
from tinyjudge.rubric import Rubric

__all__ = [
    "SelectMode", "Selector", "cheap_scores", "label_value", "cheap_sources", "teach_values",
]  # fmt: skip

SelectMode = Literal["active", "random", "sequential", "teach"]
SELECT_MODES: tuple[str, ...] = ("active", "random", "sequential", "teach")
_CHEAP_PREFIXES = ("judge:", "rm:")


def label_value(label: Label, rubric: Rubric) -> float | None:
    """A label's score for the behaviour: ``score``, else the positive mass of ``probs``,
    else 1/0 for a positive/other label. None when unscored, not a finite number, or
    the rubric has no positive labels."""
    if label.status != "ok":
        return None
    value: float | None = None
    if label.score is not None:
        value = float(label.score)
    elif label.probs and rubric.positive:
        value = rubric.score(label.probs)
    elif label.label is not None and rubric.positive:
        value = 1.0 if label.label in rubric.positive else 0.0
    # A NaN or infinite score (a judge's bad output) says nothing: missing, not an error.
    return value if value is not None and math.isfinite(value) else None


def cheap_sources(labels: Sequence[Label], rubric: Rubric) -> list[str]:
    """Judge and reward-model sources with a score or probs for this rubric, in file order."""
    found: dict[str, None] = {}
    for lab in labels:
        if (
            lab.rubric == rubric.id
            and lab.source.startswith(_CHEAP_PREFIXES)
            and lab.status == "ok"
            and (lab.score is not None or lab.probs)
        ):
            found.setdefault(lab.source)
    return list(found)


def cheap_scores(
    labels: Sequence[Label], rubric: Rubric, item_ids: Sequence[str], source: str | None = None
) -> tuple[str | None, np.ndarray]:
    """The cheap score of every item from one source; 0.5 (most uncertain) where missing.

    Args:
        labels: everything the labels file holds.
        rubric: the rubric; its ``positive`` labels define the behaviour.
        item_ids: the items, in order.
        source: e.g. ``judge:gpt-4``; by default the first judge or reward-model source
            with scores or probs for this rubric.

    Returns:
        (the source used or None when there is none, scores of shape ``(len(item_ids),)``).

    Raises:
        UsageError: ``source`` was named but has no usable label for this rubric.
    """
    scores = np.full(len(item_ids), 0.5)
    if source is None:
        found = cheap_sources(labels, rubric)
        if not found or not rubric.positive:
            return None, scores
        source = found[0]
    index = {item_id: i for i, item_id in enumerate(item_ids)}
    n = 0
    for lab in labels:
        if lab.source == source and lab.rubric == rubric.id and lab.item_id in index:
            value = label_value(lab, rubric)
            if value is not None:
                scores[index[lab.item_id]] = value
                n += 1
    if n == 0:
        have = sorted({lab.source for lab in labels if lab.rubric == rubric.id})
        why = "" if rubric.positive else f" (rubric {rubric.id!r} names no positive labels)"
        raise UsageError(
            f"cheap {source!r} has no scored label for rubric {rubric.id!r} on these items"
            f"{why}; sources in the labels file: {have}",
            param="cheap",
        )
    return source, scores


def teach_values(
    labels: Sequence[Label],
    rubric: Rubric,
    item_ids: Sequence[str],
    model: str | None = None,
    reads_judge: bool = False,
) -> tuple[str, str | None, np.ndarray]:
    """How much each item's human label should teach a reward model: the chance that people
    overturn the judge there.

    Where a ``judge:`` source labelled the item, the chance that a person's label differs
    from the judge's: the model's probabilities combined with the judge's confusion against
    people, estimated (add-half smoothing, per judge class) on the items that the judge and
    people (every ``human:`` source in ``labels``) both labelled
    (:func:`tinyjudge._people_confusion.overturn_chance`). With no such item it is
    ``1 - p_model(judge's label)``, and so it is when ``reads_judge``: a model whose head
    already read the judge's outputs (``stack``) holds the judge's errors in its
    probabilities, and the confusion would count the judge twice. Without a judge label,
    ``1 - max p_model``; 0 where the model gave no probabilities.

    Args:
        labels: machine labels, and people's labels so far (``human:`` sources).
        rubric: the rubric.
        item_ids: the items, in order.
        model: the ``rm:`` source with ``probs`` (default: the first in the file).
        reads_judge: the model's head read the judge's outputs as features (its card's
            people method is in :data:`tinyjudge._people_methods.READS_JUDGE`): its doubt
            alone, without the judge's confusion against people.

    Returns:
        (the model source, the judge source or None, values of shape ``(len(item_ids),)``).

    Raises:
        UsageError: no reward-model source with probabilities for this rubric.
    """
    ok = [lab for lab in labels if lab.rubric == rubric.id and lab.status == "ok"]
    models = list(
        dict.fromkeys(lab.source for lab in ok if lab.source.startswith("rm:") and lab.probs)
    )
    if model is None and models:
        model = models[0]
    if model is None or model not in models:
        raise UsageError(
            f"select teach needs a reward model's probabilities ({model or 'an rm: source'}) "
            f"in the labels file: run `tinyjudge score MODEL ITEMS` and add its labels; "
            f"rm: sources with probs: {models}",
            param="select",
        )
    judges = list(dict.fromkeys(lab.source for lab in ok if lab.source.startswith("judge:")))
    judge = judges[0] if judges else None
    table = index_labels(ok)
    names = rubric.label_names
    index = {name: k for k, name in enumerate(names)}
    judged = table[judge] if judge is not None else {}
    said = {i: index[lab.label] for i, lab in judged.items() if lab.label in index}
    # each person's label of an item the judge labelled is one row of the confusion (none
    # when the model read the judge: the uniform C leaves 1 - p(judge's label))
    overlap = [
        (said[i], index[lab.label])
        for src, got in table.items()
        if src.startswith("human:") and not reads_judge
        for i, lab in got.items()
        if i in said and lab.label in index
    ]
    j_both, h_both = np.array(overlap, dtype=int).reshape(-1, 2).T
    C = judge_confusion(np.eye(len(names))[j_both], h_both)
    values = np.zeros(len(item_ids))
    for i, item_id in enumerate(item_ids):
        lab = table[model].get(item_id)
        if lab is None or not lab.probs:
            continue
        p = np.array([lab.probs.get(name, 0.0) for name in names])
        j = said.get(item_id)
        if j is None:
            values[i] = 1.0 - p.max()
        elif p.sum() > 0:
            values[i] = overturn_chance(p[None] / p.sum(), np.eye(len(names))[[j]], C)[0]
        else:
            values[i] = 1.0
    return model, judge, values


def _seed(*parts: object) -> int:
    blob = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "little")


class Selector:
    """Chooses a reviewer's next item.

    Args:
        item_ids: every item, in file order.
        mode: ``sequential`` (file order), ``random`` (one fixed shuffle, so a restart
            continues the same order) or ``active``.
        cheap: cheap scores in [0, 1] per item; required for ``active``.
        teach: :func:`teach_values` per item; required for ``teach`` (highest first).

    Every reviewer gets the same order (the same shuffle; the same active pick from the
    same labelled set), so two reviewers label the same items and their agreement can
    be measured; a reviewer who skips simply moves on.
    """

    def __init__(
        self,
        item_ids: Sequence[str],
        mode: SelectMode,
        cheap: np.ndarray | None = None,
        teach: np.ndarray | None = None,
    ) -> None:
        if mode not in SELECT_MODES:
            raise UsageError(f"select {mode!r} is not one of {list(SELECT_MODES)}", param="select")
        if mode == "active" and cheap is None:
            raise UsageError(
                "active selection needs a cheap score per item: a judge: or rm: source with "
                "scores or probs in the labels file (see cheap), or use select random",
                param="select",
                also=("cheap",),
            )
        if mode == "teach" and teach is None:
            raise UsageError(
                "select teach needs a reward model's probabilities per item", param="select"
            )
        self.item_ids = list(item_ids)
        self.mode = mode
        self.cheap = cheap
        self.teach = teach

    def next_item(self, done: set[str]) -> tuple[str, str] | None:
        """The next item among those not in ``done`` (a reviewer's answered and skipped
        items), and how it was chosen (``sequential``, ``random`` or ``active``); None
        when all are done.
        """
        todo = [i for i, item_id in enumerate(self.item_ids) if item_id not in done]
        if not todo:
            return None
        if self.mode == "sequential":
            return self.item_ids[todo[0]], "sequential"
        if self.mode == "random":
            order = np.random.default_rng(_seed("random", len(self.item_ids))).permutation(
                len(self.item_ids)
            )
            first = next(i for i in order if self.item_ids[i] not in done)
            return self.item_ids[int(first)], "random"
        if self.mode == "teach":
            teach = self.teach
            assert teach is not None
            best = max(todo, key=lambda i: (teach[i], -i))  # ties: file order
            return self.item_ids[best], "teach"
        from tinyjudge.estimate import select_for_labelling

        assert self.cheap is not None
        labelled = np.array([item_id in done for item_id in self.item_ids], dtype=bool)
        # Seeded by how much is done, so the same state always offers the same item.
        rng = np.random.default_rng(_seed("active", len(done)))
        (picked,) = select_for_labelling(self.cheap, labelled, k=1, rng=rng)
        return self.item_ids[int(picked)], "active"
