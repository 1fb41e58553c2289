"""The distill and score workflows behind the CLI: split, fit, validate, save; stream-score."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

import numpy as np

from tinyjudge._people_items import PEOPLE_KEY, TEACHER_KEY, people_digest
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label, unique_ids
from tinyjudge.results import short_repr
from tinyjudge.rubric import Rubric, load_rubric

from ._base import RewardModel, batched
from ._configs import EnsembleConfig, TierConfig
from ._data import group_keys, grouped_split, training_set
from ._ensemble import ensemble_fit
from ._load import TIERS, tier_config
from ._people import DEFAULT_PEOPLE_METHOD, fit_with_people, people_targets
from ._split_checks import check_split
from ._tiers import DEFAULT_TIER
from .hf import is_main_process

if TYPE_CHECKING:
    from tinyjudge.datasets.jsonl import KeptLabels

__all__ = ["DistillResult", "Hardening", "distill", "teacher_of", "agreement", "score_file"]


class Hardening(Protocol):
    """What ``distill`` hardens through (``tinyjudge.exploit.Hardened``): a wrapper of any
    tier's fit, as scikit-learn's ``CalibratedClassifierCV`` wraps an estimator.

    Hardening searches the model with the exploit stage, which sits above distill;
    distill hands it the tier's fit once and imports none of it. ``fit`` leaves the
    hardened model in ``model_`` and the card's record in ``record_``.
    """

    model_: RewardModel
    record_: dict[str, Any]

    def fit(
        self,
        fit: Callable[[list[Item], np.ndarray], RewardModel],
        items: list[Item],
        Y: np.ndarray,
        val_items: list[Item],
        rubric: Rubric,
        group_by: str | None = None,
    ) -> Hardening: ...


class _Watched(Protocol):
    """A tier that ``takes_eval_set``: its fit scores a split while it trains."""

    def fit(self, items: list[Item], y: np.ndarray, *, eval_set: tuple[list[Item], np.ndarray]
            ) -> RewardModel: ...  # fmt: skip


class DistillResult(NamedTuple):
    """A fitted model and how well it agrees with its teacher on held-out items.

    The counts add up: the teacher's labels are ``n_split + n_val`` items with a usable
    label, ``n_unscored`` unscored ones and ``n_no_item`` of items not given; the model
    was fitted on ``n_train = n_split + n_copies - n_left_out`` rows. It prints as
    :meth:`lines`.

    Attributes:
        model: the fitted reward model.
        validation: its agreement with the teacher (and people) on the validation split.
        n_train: rows the model was fitted on.
        n_val: items in the validation split.
        n_unscored: the teacher's unscored labels, left out.
        n_no_item: the teacher's labels of items not among those given, left out.
        n_left_out: training rows left out because their label is inherited from an
            earlier answer of the dialogue (``combine: worst_answer``).
        n_copies: edited copies added to the training split (hardening's augmentation,
            master keys and the phrases its rounds found).
    """

    model: RewardModel
    validation: dict[str, Any]
    n_train: int
    n_val: int
    n_unscored: int
    n_no_item: int = 0
    n_left_out: int = 0
    n_copies: int = 0

    @property
    def n_split(self) -> int:
        """Items in the training split."""
        return self.n_train + self.n_left_out - self.n_copies

    def lines(self) -> list[str]:
        """Where every label went, then the validation figures."""
        m = self.model
        out = [
            f"{m.source} ({m.tier}): {self.n_split + self.n_val} items with a usable label: "
            f"{self.n_split} to train, {self.n_val} to validate",
        ]
        if self.n_copies or self.n_left_out:
            fitted = f"fitted on {self.n_train} rows"
            if self.n_copies:
                fitted += f" (with {self.n_copies} edited copies)"
            if self.n_left_out:
                fitted += f"; {self.n_left_out} left out: label inherited from an earlier answer"
            out.append(fitted)
        if self.n_unscored or self.n_no_item:
            out.append(
                f"left out: {self.n_unscored} unscored labels, {self.n_no_item} labels of "
                "items not given"
            )
        figures = ", ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in self.validation.items()
        )
        if figures:
            out.append(f"validation: {figures}")
        return out

    def __repr__(self) -> str:
        return short_repr(self, self.lines())


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
    source: str | None = None,
    rubric: Rubric | str | None = None,
    tier: str | None = None,
    group_by: str | None = None,
    val_fraction: float = 0.2,
    split_seed: int = 0,
    human: str | None = None,
    human_method: str = DEFAULT_PEOPLE_METHOD,
    human_weight: float | None = None,
    raters: Sequence[str] = (),
    harden: Hardening | None = None,
    ensemble: EnsembleConfig | None = None,
    config: TierConfig | None = None,
    name: str | None = None,
    **options: Any,
) -> DistillResult:
    """Fit a reward model on ``source``'s labels and validate it on held-out groups.

    ``distill(items, labels).model`` is enough when the labels hold one teacher
    (besides ``human``) under one rubric; the tier follows from ``config``
    (``config=TransformerConfig(lora_r=16)``), or is named with its options as
    keywords (``tier="probe", C=1.0``), linear when neither is given.

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
        source: the teacher, e.g. ``judge:gpt-4`` (default: the labels' one source
            other than ``human`` and ``raters``).
        rubric: the rubric (or its name) the labels were written under (default:
            the teacher's labels' one rubric, built in).
        tier: ``linear``, ``probe`` or ``transformer`` (``encoder``, its first name);
            default: ``config``'s tier, else ``linear``.
        group_by: a dotted key (``metadata.prompt_id``) kept on one side of the split.
        val_fraction: share of groups held out.
        split_seed: the split's seed.
        human: people's label source (e.g. ``human:final``): learn from ``source``'s
            labels and these together, to predict what people say (see
            :mod:`tinyjudge.distill._people`); validation is then against people.
        human_method: how the two are combined, one of ``PEOPLE_METHODS``.
        human_weight: the ``weighted`` method's weight of a person's row.
        raters: human rater sources for ``dawid-skene``.
        harden: ``tinyjudge.exploit.Hardened(HardenConfig(...))`` hardens the model
            against exploits: label-preserving edits and the rubric's claims,
            master keys, then adversarial rounds until the best exploit on the
            validation split flips under its ``bound``. The card gets the record
            under ``harden``.
        ensemble: an :class:`EnsembleConfig` fits ``k`` members (each hardened fit
            too) and serves their mean minus ``risk`` spreads; ``k`` 1 is one model.
        config: the tier's options whole (:class:`LinearConfig`, :class:`ProbeConfig`,
            :class:`TransformerConfig`), used as given.
        name: the model's name (its labels get source ``rm:<name>``).
        **options: fields of the tier's config (``epochs=3`` for ``transformer``), over
            ``config``, else over the rubric's ``reward_model.params`` for the tier.

    Raises:
        UsageError: more than one teacher or rubric among the labels (pass
            ``source``/``rubric``), an option not of the tier or out of range.
    """
    source, rubric = teacher_of(labels, source, rubric, (human, *raters))
    tier = tier or (config.tier if config is not None else DEFAULT_TIER)
    tier_options = tier_config(tier, rubric, config, **options)

    def new_model() -> RewardModel:
        return TIERS[tier](rubric, name, config=tier_options)

    if harden is not None and not callable(getattr(harden, "fit", None)):
        raise UsageError(
            f"harden takes a hardening wrapper, got a {type(harden).__name__}: pass "
            "harden=Hardened(HardenConfig(...)) (from tinyjudge.exploit)",
            param="harden",
        )
    if ensemble is not None and ensemble.k == 1:
        ensemble = None
    if human is not None:
        if harden is not None or ensemble is not None:
            raise UsageError(
                "harden and ensemble are not supported with human labels yet; drop one",
                param="harden",
            )
        return _distill_with_people(
            items, labels, source, rubric, group_by, val_fraction, split_seed,
            (human, human_method, human_weight, tuple(raters)), new_model,
        )  # fmt: skip
    ts = training_set(items, labels, source, rubric)
    train, val = grouped_split(ts.items, group_by, val_fraction, split_seed)
    check_split(ts.items, train, val, group_by)
    val_items = [ts.items[i] for i in val]

    def fit(fit_items: list[Item], Y: np.ndarray) -> RewardModel:
        one = new_model()
        if one.takes_eval_set:  # e.g. scored after each epoch, the best epoch kept
            return cast(_Watched, one).fit(fit_items, Y, eval_set=(val_items, ts.y_soft[val]))
        return one.fit(fit_items, Y)

    fit_one = fit if ensemble is None else ensemble_fit(fit, ensemble)
    train_items = [ts.items[i] for i in train]
    record: dict[str, Any] | None = None
    if harden is not None:
        harden.fit(fit_one, train_items, ts.y_soft[train], val_items, rubric, group_by)
        model, record = harden.model_, harden.record_
    else:
        model = fit_one(train_items, ts.y_soft[train])
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
    if record is not None:
        model.card_["harden"] = record
    taught = people_digest(ts.items[i].id for i in train)
    # the teacher's labels it learned, so no one takes the teacher as truth on these items
    model.card_[TEACHER_KEY] = taught
    if source.startswith("human:"):  # people were the teacher: every training item counts
        model.card_[PEOPLE_KEY] = taught
    if ts.n_no_item:
        model.card_["n_labels_without_item"] = ts.n_no_item
    n_train, n_left_out, n_copies = _rows(model, len(train))
    return DistillResult(
        model, validation, n_train, len(val), ts.n_unscored, ts.n_no_item, n_left_out, n_copies
    )


def teacher_of(
    labels: Sequence[Label],
    source: str | None,
    rubric: Rubric | str | None,
    others: Sequence[str | None] = (),
) -> tuple[str, Rubric]:
    """The teacher and its rubric: those given, else the labels' one of each.

    ``source`` defaults to the one source among the labels (under ``rubric`` when
    given) that is not in ``others`` (people's sources, when they are learnt too);
    ``rubric`` to the one rubric the teacher's labels were written under.

    Raises:
        UsageError: none or several of either among the labels, naming them.
    """
    if source is None:
        under = None if rubric is None else load_rubric(rubric).id
        found = sorted(
            {lab.source for lab in labels if lab.source not in others}
            if under is None
            else {lab.source for lab in labels if lab.source not in others and lab.rubric == under}
        )
        if len(found) != 1:
            said = f"{len(found)} sources ({', '.join(found[:6])})" if found else "no source"
            raise UsageError(f"the labels hold {said}; pass the teacher as source=", param="source")
        source = found[0]
    if rubric is None:
        ids = sorted({lab.rubric for lab in labels if lab.source == source})
        if len(ids) != 1:
            said = f"{len(ids)} rubrics ({', '.join(ids[:6])})" if ids else "no rubric"
            raise UsageError(
                f"the labels of {source!r} hold {said}; pass the rubric as rubric=", param="rubric"
            )
        rubric = ids[0]
    return source, load_rubric(rubric)


def _distill_with_people(
    items: Sequence[Item],
    labels: Sequence[Label],
    source: str,
    rubric: Rubric,
    group_by: str | None,
    val_fraction: float,
    seed: int,
    people: tuple[str, str, float | None, tuple[str, ...]],
    new_model: Callable[[], RewardModel],
) -> DistillResult:
    """``distill`` with people's labels: split by group, build the targets from the
    training groups alone, validate against people (and the judge) on the others."""
    human, method, weight, raters = people
    everything = people_targets(items, labels, source, human, rubric, method, weight, raters)
    train, val = grouped_split(everything.items, group_by, val_fraction, seed)
    check_split(everything.items, train, val, group_by)
    train_items = [everything.items[i] for i in train]
    pt = people_targets(train_items, labels, source, human, rubric, method, weight, raters)
    model = fit_with_people(new_model(), pt, groups=group_keys(pt.items, group_by))
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
    model.card_[TEACHER_KEY] = people_digest(it.id for it in pt.items)
    n_train, n_left_out, n_copies = _rows(model, len(train))
    return DistillResult(model, validation, n_train, len(val), n_unscored, 0, n_left_out, n_copies)


def _rows(model: RewardModel, n_split: int) -> tuple[int, int, int]:
    """``n_train``, ``n_left_out`` and ``n_copies`` as the model's card says: the rows it
    was fitted on (``worst_answer`` leaves out answers that inherit an earlier label;
    hardening adds edited copies), else the training split's size."""
    card = getattr(model, "card_", {})
    n = card.get("n_train")
    if not isinstance(n, int):
        return n_split, 0, 0
    left = int(card.get("n_left_out_inherited", 0))
    return n, left, max(0, n + left - n_split)


def score_file(
    model: RewardModel,
    items_path: str | Path,
    out_path: str | Path,
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
    unscored: list[Label] | None = None,
    replace_labels: bool = False,
    on_written: Callable[[KeptLabels], None] | None = None,
) -> int:
    """Score an items file into a labels file, streaming in batches.

    The output appears only when every item is scored (atomic rename). Labels
    already in ``out_path`` from other sources (people's, a judge's) are kept
    after the model's, unless ``replace_labels`` (see
    :func:`~tinyjudge.datasets.write_labels`); ``on_written`` is told what was kept.
    Items that share an id, or an ``out_path`` that is ``items_path``, are refused.
    ``on_batch`` gets the number of items of each finished batch (for progress);
    ``unscored``, when given, collects the labels written as ``unscored`` (an item
    lacking a reference the model reads), for the caller to say so.
    Returns the number of labels written.
    """
    from tinyjudge._atomic import refuse_writing_over_inputs
    from tinyjudge.datasets.jsonl import read_jsonl, write_labels

    refuse_writing_over_inputs([(out_path, "out_path")], [(items_path, "items file")])

    def labels() -> Iterator[Label]:
        items = unique_ids(read_jsonl(items_path, Item), str(items_path))
        for batch in batched(items, batch_size):
            for lab in model.score_items(batch, batch_size):
                if unscored is not None and lab.status == "unscored":
                    unscored.append(lab)
                yield lab
            if on_batch is not None:
                on_batch(len(batch))

    written = write_labels(out_path, labels(), replace_labels)
    if on_written is not None:
        on_written(written)
    return written.written
