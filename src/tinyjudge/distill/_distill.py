"""The distill and score workflows behind the CLI: split, fit, validate, save; stream-score."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tinyjudge._people_items import PEOPLE_KEY, people_digest
from tinyjudge.records import Item, Label, unique_ids
from tinyjudge.rubric import Rubric, load_rubric

from ._base import RewardModel, batched
from ._data import grouped_split, training_set
from ._load import make_model
from ._people import DEFAULT_PEOPLE_METHOD, fit_with_people, people_targets
from ._split_checks import check_split
from ._transformer import TransformerRM
from .hf import is_main_process

if TYPE_CHECKING:
    from tinyjudge.datasets.jsonl import KeptLabels

__all__ = ["DistillResult", "distill", "agreement", "score_file"]


class DistillResult(NamedTuple):
    """A fitted model and how well it agrees with its teacher on held-out items."""

    model: RewardModel
    validation: dict[str, Any]
    n_train: int
    n_val: int
    n_unscored: int


def agreement(teacher: Sequence[str], student: Sequence[str]) -> dict[str, float]:
    """Accuracy and Cohen's kappa of the student's labels against the teacher's."""
    from sklearn.metrics import accuracy_score, cohen_kappa_score

    return {
        "accuracy": float(accuracy_score(teacher, student)),
        "cohen_kappa": float(cohen_kappa_score(teacher, student)),
    }


def distill(
    items: Sequence[Item],
    labels: Sequence[Label],
    source: str,
    rubric: Rubric | str,
    tier: str = "linear",
    group_by: str | None = None,
    val_fraction: float = 0.2,
    seed: int = 0,
    human: str | None = None,
    human_method: str = DEFAULT_PEOPLE_METHOD,
    human_weight: float | None = None,
    raters: Sequence[str] = (),
    **params: Any,
) -> DistillResult:
    """Fit a reward model on ``source``'s labels and validate it on held-out groups.

    The saved model is the one fitted on the training split, so the validation
    figures in its model card describe exactly that model. A validation split of
    fewer than 50 items, or items sharing a prompt or task field on both sides of a
    split without ``group_by``, gives a :class:`SplitWarning`. The transformer tier
    also scores the validation split after each epoch and keeps the best epoch.
    Under ``torchrun``/``accelerate launch`` every rank trains on its shard and
    rank 0 alone validates: the other ranks get empty ``validation``.

    Args:
        items: the items the labels refer to.
        labels: labels of any sources; only ``source``'s are used.
        source: the teacher, e.g. ``judge:gpt-4``.
        rubric: the rubric (or its name) the labels were written under.
        tier: ``linear``, ``probe`` or ``transformer`` (``encoder``, its first name).
        group_by: a dotted key (``metadata.prompt_id``) kept on one side of the split.
        val_fraction: share of groups held out.
        seed: the split's seed.
        human: people's label source (e.g. ``human:final``): learn from ``source``'s
            labels and these together, to predict what people say (see
            :mod:`tinyjudge.distill._people`); validation is then against people.
        human_method: how the two are combined, one of ``PEOPLE_METHODS``.
        human_weight: the ``weighted`` method's weight of a person's row.
        raters: human rater sources for ``dawid-skene``.
        **params: options of the tier's estimator (e.g. ``epochs=3`` for ``transformer``).
    """
    rubric = load_rubric(rubric)
    if human is not None:
        return _distill_with_people(
            items, labels, source, rubric, tier, group_by, val_fraction, seed,
            (human, human_method, human_weight, tuple(raters)), params,
        )  # fmt: skip
    ts = training_set(items, labels, source, rubric)
    train, val = grouped_split(ts.items, group_by, val_fraction, seed)
    check_split(ts.items, train, val, group_by)
    model = make_model(tier, rubric, **params)
    val_items = [ts.items[i] for i in val]
    if isinstance(model, TransformerRM):  # scored after each epoch, the best epoch kept
        model.fit(
            [ts.items[i] for i in train], ts.y_soft[train], eval_set=(val_items, ts.y_soft[val])
        )
    else:
        model.fit([ts.items[i] for i in train], ts.y_soft[train])
    if not is_main_process():
        # Data-parallel: rank 0 alone validates (and saves); the others trained their shard.
        return DistillResult(model, {}, len(train), len(val), ts.n_unscored)
    validation = {
        **agreement([ts.y_hard[i] for i in val], model.predict(val_items)),
        "n_val": len(val),
    }
    model.card_.update(
        {
            "teacher_source": source,
            "n_unscored": ts.n_unscored,
            "group_by": group_by,
            "validation": validation,
        }
    )
    if source.startswith("human:"):  # people were the teacher: every training item counts
        model.card_[PEOPLE_KEY] = people_digest(ts.items[i].id for i in train)
    return DistillResult(model, validation, len(train), len(val), ts.n_unscored)


def _distill_with_people(
    items: Sequence[Item],
    labels: Sequence[Label],
    source: str,
    rubric: Rubric,
    tier: str,
    group_by: str | None,
    val_fraction: float,
    seed: int,
    people: tuple[str, str, float | None, tuple[str, ...]],
    params: dict[str, Any],
) -> DistillResult:
    """``distill`` with people's labels: split by group, build the targets from the
    training groups alone, validate against people (and the judge) on the others."""
    human, method, weight, raters = people
    everything = people_targets(items, labels, source, human, rubric, method, weight, raters)
    train, val = grouped_split(everything.items, group_by, val_fraction, seed)
    check_split(everything.items, train, val, group_by)
    train_items = [everything.items[i] for i in train]
    pt = people_targets(train_items, labels, source, human, rubric, method, weight, raters)
    model = fit_with_people(make_model(tier, rubric, **params), pt)
    val_items = [everything.items[i] for i in val]
    pred = dict(zip((it.id for it in val_items), model.predict(val_items), strict=True))
    validation: dict[str, Any] = {}
    for who, src in (("people", human), ("judge", source)):
        truth = {
            lab.item_id: lab.label
            for lab in labels
            if lab.source == src
            and lab.status == "ok"
            and lab.label is not None
            and lab.item_id in pred
        }
        ids = list(truth)
        if len({truth[i] for i in ids} | {pred[i] for i in ids}) > 1:
            got = agreement([truth[i] for i in ids], [pred[i] for i in ids])
            validation |= {f"{k}_vs_{who}": v for k, v in got.items()}
        validation[f"n_val_{who}"] = len(ids)
    n_unscored = sum(1 for lab in labels if lab.source == source and lab.status != "ok")
    model.card_.update(
        {
            "teacher_source": source,
            "human_source": human,
            "n_unscored": n_unscored,
            "group_by": group_by,
            "validation": validation,
        }
    )
    model.card_[PEOPLE_KEY] = people_digest(
        it.id for it, person in zip(pt.items, pt.is_human, strict=True) if person
    )
    return DistillResult(model, validation, len(train), len(val), n_unscored)


def score_file(
    model: RewardModel,
    items_path: str | Path,
    out_path: str | Path,
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
    replace_labels: bool = False,
    on_written: Callable[[KeptLabels], None] | None = None,
) -> int:
    """Score an items file into a labels file, streaming in batches.

    The output appears only when every item is scored (atomic rename). Labels
    already in ``out_path`` from other sources (people's, a judge's) are kept
    after the model's, unless ``replace_labels`` (see
    :func:`~tinyjudge.datasets.write_labels`); ``on_written`` is told what was kept.
    Items that share an id, or an ``out_path`` that is ``items_path``, are refused.
    ``on_batch`` gets the number of items of each finished batch (for progress).
    Returns the number of labels written.
    """
    from tinyjudge._atomic import refuse_writing_over_inputs
    from tinyjudge.datasets.jsonl import read_jsonl, write_labels

    refuse_writing_over_inputs([(out_path, "out_path")], [(items_path, "items file")])

    def labels() -> Iterator[Label]:
        items = unique_ids(read_jsonl(items_path, Item), str(items_path))
        for batch in batched(items, batch_size):
            P = model.predict_proba(batch)
            yield from model.labels_for(batch, np.asarray(P))
            if on_batch is not None:
                on_batch(len(batch))

    written = write_labels(out_path, labels(), replace_labels)
    if on_written is not None:
        on_written(written)
    return written.written
