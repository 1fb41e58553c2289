"""Training data for a reward model: one source's labels on items, and a grouped split."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label, check_unique_ids
from tinyjudge.rubric import Rubric, load_rubric

from ._split_checks import SHARED_FIELDS
from ._text import answer_prefixes

__all__ = [
    "TrainingSet",
    "training_set",
    "grouped_split",
    "group_keys",
    "find_group_key",
    "data_hash",
    "targets",
    "own_verdicts",
]


class TrainingSet(NamedTuple):
    """Items with a usable label from one source, in the same order as the targets.

    ``y_soft`` has one row per item and one column per rubric label (rubric
    order): the teacher's ``probs`` when it gave them, else one-hot.
    ``n_unscored`` counts the source's ``unscored`` labels, left out of training;
    ``n_no_item`` its labels of items not among those given, left out too.
    """

    items: list[Item]
    y_hard: list[str]
    y_soft: np.ndarray
    n_unscored: int
    n_no_item: int = 0


def training_set(
    items: Sequence[Item], labels: Sequence[Label], source: str, rubric: Rubric | str
) -> TrainingSet:
    """Pair items with the labels of ``source`` under ``rubric``.

    Labels of items absent from ``items`` are left out (and counted in ``n_no_item``),
    so a subset of the items can be trained on with the full label file.

    Raises:
        TinyjudgeError: no labels of ``source`` (the message lists the sources
            present), labels written under another rubric, a label value the
            rubric does not offer, no label matching any item, or a single class.
    """
    rubric = load_rubric(rubric)
    names = rubric.label_names
    of_source = [lab for lab in labels if lab.source == source]
    if not of_source:
        present = sorted(Counter(lab.source for lab in labels))
        raise UsageError(
            f"no labels with source {source!r}; the labels hold {present}; pass one with source",
            param="source",
        )
    other = sorted({lab.rubric for lab in of_source if lab.rubric != rubric.id})
    if other:
        raise UsageError(
            f"labels of {source!r} were written under rubric {other[0]!r}, not {rubric.id!r}; "
            f"pass rubric {other[0]} (or its YAML file)",
            param="rubric",
        )
    check_unique_ids(items)
    by_id = {item.id: item for item in items}
    chosen: dict[str, Label] = {}
    n_unscored = 0
    for lab in of_source:
        if lab.status != "ok":
            n_unscored += 1
            continue
        if lab.label not in names:
            raise UsageError(
                f"item {lab.item_id!r}: label {lab.label!r} of {source!r} is not offered by "
                f"rubric {rubric.id!r}; allowed: {names}",
                param="labels",
            )
        chosen[lab.item_id] = lab  # a later label for the same item wins
    if chosen and not any(i in by_id for i in chosen):
        raise UsageError(
            f"none of the {len(chosen)} labels of {source!r} names an item in the items file "
            f"(first: {next(iter(chosen))!r}); are the items and labels from the same run?",
            param="labels",
        )
    kept = [by_id[i] for i in by_id if i in chosen]
    y_hard = [chosen[it.id].label or "" for it in kept]
    classes = sorted(set(y_hard))
    if len(classes) < 2:
        raise UsageError(
            f"the labels of {source!r} hold a single class {classes}; a reward model needs "
            f"at least 2 of {names}",
            param="labels",
        )
    no_item = sum(1 for i in chosen if i not in by_id)
    Y = targets([chosen[it.id] for it in kept], names)
    return TrainingSet(kept, y_hard, Y, n_unscored, no_item)


def targets(labels: Sequence[Label], names: Sequence[str]) -> np.ndarray:
    """Soft targets in ``names`` order: ``probs`` when given, else one-hot."""
    index = {n: j for j, n in enumerate(names)}
    y = np.zeros((len(labels), len(names)), dtype=np.float32)
    for i, lab in enumerate(labels):
        if lab.probs:
            for name, p in lab.probs.items():
                if name in index:
                    y[i, index[name]] = p
        if y[i].sum() <= 0 and lab.label in index:
            y[i, index[lab.label]] = 1.0
        y[i] /= max(float(y[i].sum()), 1e-12)
    return y


def grouped_split(
    items: Sequence[Item],
    group_by: str | None = None,
    val_fraction: float = 0.2,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Train and validation indices, with each group on one side only.

    Args:
        items: the training items.
        group_by: a dotted key such as ``metadata.prompt_id``; ``None`` puts
            each item in its own group.
        val_fraction: share of groups held out for validation.
        seed: the shuffle's seed.

    Raises:
        TinyjudgeError: an item lacks the key, or there are too few groups.
    """
    from sklearn.model_selection import GroupShuffleSplit

    if not 0.0 < val_fraction < 1.0:
        raise UsageError(
            f"val_fraction must be in (0, 1), got {val_fraction}", param="val_fraction"
        )
    groups = group_keys(items, group_by)
    if len(set(groups)) < 2:
        raise UsageError(
            f"only {len(set(groups))} distinct {group_by or 'item'} value(s); "
            "a train/validation split needs at least 2",
            param="group_by",
        )
    split = GroupShuffleSplit(n_splits=1, test_size=val_fraction, random_state=seed)
    train, val = next(split.split(np.zeros(len(groups)), groups=groups))
    return np.sort(train), np.sort(val)


def group_keys(items: Sequence[Item], group_by: str | None) -> list[str]:
    """Each item's group: the value at ``group_by``, or its own id."""
    if group_by is None:
        return [it.id for it in items]
    keys = []
    for it in items:
        value = it.get(group_by)
        if value is None:
            raise UsageError(
                f"item {it.id!r} has no {group_by!r}; group_by needs a key every item has "
                "(e.g. metadata.prompt_id)",
                param="group_by",
            )
        keys.append(str(value))
    return keys


def find_group_key(items: Sequence[Item]) -> str | None:
    """The first of the keys importers write for a shared prompt, question or dialogue
    (:data:`SHARED_FIELDS`, coarsest first) that every item has; ``None`` if none is.

    >>> from tinyjudge.records import Item
    >>> turn = {"messages": [{"role": "user", "content": "hi"}]}
    >>> find_group_key([Item(id="a", metadata={"question_id": 1, "dialogue_id": "d"}, **turn)])
    'metadata.question_id'
    >>> find_group_key([Item(id="a", **turn)]) is None
    True
    """
    for name in SHARED_FIELDS:
        if items and all(_has_key(it.metadata.get(name)) for it in items):
            return f"metadata.{name}"
    return None


def _has_key(value: object) -> bool:
    # the values check_split counts as a shared key: strings and integers, not flags
    return isinstance(value, str | int) and not isinstance(value, bool)


def data_hash(items: Sequence[Item], y_soft: np.ndarray) -> str:
    """SHA-256 (16 hex digits) of the training items' content and their targets."""
    h = hashlib.sha256()
    for it in items:
        h.update(it.id.encode())
        h.update(it.content_hash().encode())
    h.update(np.ascontiguousarray(y_soft, dtype=np.float32).tobytes())
    return h.hexdigest()[:16]


def own_verdicts(items: Sequence[Item], Y: np.ndarray, rubric: Rubric) -> np.ndarray:
    """Indices of the items whose label is their own answer's (see ``combine: worst_answer``).

    Under ``worst_answer`` a dialogue that turned negative earlier keeps that label
    on later answers; an edited copy of such an item would teach the inherited
    label to the edited answer, so only the items fit keeps are edited.
    """
    if rubric.reward_model.combine != "worst_answer":
        return np.arange(len(items))
    cols = [rubric.label_names.index(p) for p in rubric.positive]
    pos = Y[:, cols].sum(axis=1)
    key = {_dialogue_key(it): i for i, it in enumerate(items)}
    keep = [
        i
        for i, it in enumerate(items)
        if not any(
            (j := key.get(_dialogue_key(p))) is not None and pos[j] < 0.5
            for p in answer_prefixes(it)[:-1]
        )
    ]
    return np.asarray(keep, dtype=int)


def _dialogue_key(item: Item) -> tuple[tuple[str, str], ...]:
    return tuple((m.role, m.text) for m in item.messages)
