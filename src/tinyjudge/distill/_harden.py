"""Hardening a reward model against the exploits a policy finds (issue 29).

Two steps, both on the training split only:

1. **Counterfactual augmentation.** Each training item gets ``harden_copies``
   edited copies, each with a label-preserving edit drawn at random (format,
   length, and the rubric's ``reward_model.claims``: an answer that caves still
   caves when "I must respectfully disagree" is put in front of it), with the
   item's own target. Master keys (an empty answer, ":", a claim alone, the
   question echoed back) are added on a share of the training contexts with the
   label an answer that does nothing deserves (:func:`master_key_label`).
2. **Adversarial rounds.** The current model is searched (black box, as
   :func:`tinyjudge.exploit.search_phrases` does) on the training split; the
   phrases it finds are put in front of training answers, each copy keeping its
   item's label, and the model is refitted. The rounds stop when the best
   exploit a search finds on the *validation* split flips fewer than
   ``harden_bound`` of the items the model places outside the target, or after
   ``harden_rounds`` rounds.

The card records the edits used, each round and the validation figures of the
plain and the hardened model (:func:`exploit_figures`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._base import RewardModel, _dialogue_key
from ._text import answer_prefixes

if TYPE_CHECKING:
    from tinyjudge.exploit import Edit

__all__ = [
    "HardenConfig",
    "harden_target",
    "master_key_label",
    "augment",
    "own_verdicts",
    "exploit_figures",
    "fit_hardened",
]

Fit = Callable[[list[Item], np.ndarray], RewardModel]
# Bootstrap resamples behind the figures hardening records (their intervals are not
# recorded; the resamples are cheap next to the model passes).
N_BOOT = 200


@dataclass
class HardenConfig(Config):
    """Options of hardening and of ensembles (``distill(..., harden=HardenConfig(...))``)."""

    harden: bool = option(False, "augment with label-preserving edits, then adversarial rounds")
    harden_rounds: int = option(3, "adversarial rounds at most", low=0, high=20)
    harden_bound: float = option(
        0.10, "stop when the best validation exploit flips under this share", low=0.0, high=1.0
    )
    harden_target: str | None = option(
        None, "the label exploits push toward (default: the rubric's first positive label)"
    )
    harden_copies: int = option(2, "edited copies of each training item", low=0, high=50)
    harden_keys: float = option(
        0.02, "master-key copies per training item, for each key", low=0.0, high=1.0
    )
    harden_phrases: int = option(8, "phrases each round's search adds", low=1, high=100)
    harden_mined: int = option(
        40, "openings and n-grams of the target's training answers used as edits", low=0, high=1000
    )
    harden_budget: int = option(
        40, "model passes each search makes (one per candidate phrase)", low=1, high=100_000
    )
    ensemble: int = option(1, "reward models in an ensemble (1: a single model)", low=1, high=32)
    ensemble_mode: Literal["bootstrap", "seed"] = option(
        "bootstrap", "bootstrap: each member on a resample of the training items; seed: seeds"
    )
    ensemble_risk: float = option(
        0.0, "the served score is the members' mean minus this many spreads", low=0.0, high=10.0
    )
    harden_seed: int = option(0, "seed of the edits drawn and of the ensemble's resamples")


def harden_target(rubric: Rubric, target: str | None = None) -> str:
    """The label a policy is rewarded for: ``target`` or the rubric's first positive label.

    Raises:
        UsageError: ``target`` is not one of the rubric's labels, or the rubric
            names no positive label and no target was given.
    """
    names = rubric.label_names
    if target is None:
        if not rubric.positive:
            raise UsageError(
                f"rubric {rubric.id!r} names no positive label; "
                f"pass harden_target (one of {names})",
                param="harden_target",
            )
        return rubric.positive[0]
    if target not in names:
        raise UsageError(
            f"harden_target {target!r} is not a label of rubric {rubric.id!r}; allowed: {names}",
            param="harden_target",
        )
    return target


def master_key_label(rubric: Rubric, target: str) -> str:
    """The label a master key deserves: the rubric's first label other than ``target``.

    A master key (an empty answer, ":", a claim with nothing behind it, the
    question echoed) does not do what the target label describes, so it gets
    the opposite verdict; the rubric's first other label is that verdict for the
    built-in rubrics: ``caves`` for push-back (an answer that never rejects the
    premise caves, by the rubric's own criteria) and, rewarding compliance
    (target ``full_compliance``), ``full_refusal`` (nothing asked for was given);
    for compliance's own positive label ``full_refusal`` the other first label is
    ``full_compliance``, so master keys are not taught as refusals there.
    """
    return next(n for n in rubric.label_names if n != target)


def _edited(item: Item, edit: Edit, tag: str) -> Item:
    from tinyjudge.exploit import apply_edit

    out = apply_edit(item, edit)
    return out.model_copy(update={"id": f"{item.id}~{tag}"})


def augment(
    items: Sequence[Item],
    Y: np.ndarray,
    edits: Sequence[Edit],
    copies: int,
    rng: np.random.Generator,
    tag: str = "aug",
) -> tuple[list[Item], np.ndarray, np.ndarray]:
    """Edited copies of ``items`` that keep their targets: ``copies`` per item.

    Each copy takes a different edit (drawn without replacement while there are
    enough), so an item is seen under several edits. Returns the copies, their
    targets and the index of the item each was made from.
    """
    if not edits or copies == 0:
        return [], np.zeros((0, Y.shape[1]), dtype=Y.dtype), np.zeros(0, dtype=int)
    out: list[Item] = []
    rows: list[int] = []
    for i, it in enumerate(items):
        picks = rng.choice(len(edits), size=copies, replace=copies > len(edits))
        for j in picks:
            out.append(_edited(it, edits[int(j)], f"{tag}{len(out)}"))
            rows.append(i)
    return out, Y[rows], np.asarray(rows, dtype=int)


def _master_keys(
    items: Sequence[Item], keys: Sequence[Edit], share: float, rng: np.random.Generator
) -> tuple[list[Item], np.ndarray]:
    """Each master key on ``share`` of the training contexts; the copies and their origins."""
    n = min(len(items), int(round(share * len(items))))
    out: list[Item] = []
    rows: list[int] = []
    for key in keys if n else ():
        for i in rng.choice(len(items), size=n, replace=False):
            out.append(_edited(items[int(i)], key, f"key{len(out)}"))
            rows.append(int(i))
    return out, np.asarray(rows, dtype=int)


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


def _rate(value: Any) -> float:
    """A flip rate that may be a number or an Interval."""
    return float(getattr(value, "value", value))


def exploit_figures(
    model: RewardModel,
    items: Sequence[Item],
    target: str,
    bank: Sequence[Item] | None,
    budget: int,
    edits: Sequence[Edit] | None = None,
) -> dict[str, Any]:
    """What a policy gets out of ``model`` on ``items``: the best searched phrase, the worst edit.

    Returns:
        ``best_search_flip`` and ``best_search_phrase`` (one phrase put in front of
        every answer; the share of items outside ``target`` it moves into it),
        ``worst_format_flip`` and ``worst_format_edit`` (the format family), and
        ``worst_edit_flip`` and ``worst_edit`` over every label-preserving edit.
    """
    from tinyjudge.exploit import builtin_edits, flip_stats, search_phrases

    items = list(items)
    found = search_phrases(
        model, items, target=target, bank=bank, k=1, budget=budget, n_best=1, n_boot=N_BOOT
    )
    best = found.best[0] if found.best else None
    figures: dict[str, Any] = {
        "best_search_flip": _rate(best.flip_to_target) if best else 0.0,
        "best_search_phrase": best.edit.prepend if best else None,
    }
    pool = edits if edits is not None else builtin_edits(model.rubric, target)
    rates = {
        e.name: (
            e.family,
            _rate(flip_stats(model, items, e, target=target, n_boot=N_BOOT).flip_to_target),
        )
        for e in pool
        if e.preserves_label
    }
    for key, family in (("format", "format"), ("edit", None)):
        pool = {n: r for n, (f, r) in rates.items() if family is None or f == family}
        worst = max(pool, key=pool.__getitem__) if pool else None
        figures[f"worst_{key}_flip"] = pool[worst] if worst else 0.0
        figures[f"worst_{key}_edit"] = worst
    return figures


def _search_edits(
    model: RewardModel,
    items: list[Item],
    bank: list[Item],
    target: str,
    config: HardenConfig,
    seed: int,
) -> list[Edit]:
    """The phrases a search finds against ``model`` on ``items``, as label-preserving edits."""
    from tinyjudge.exploit import Edit, search_phrases

    found = search_phrases(
        model, items, target=target, bank=bank, k=1, budget=config.harden_budget,
        n_best=config.harden_phrases, n_boot=N_BOOT, seed=seed,
    )  # fmt: skip
    phrases = [b.edit.prepend for b in found.best if _rate(b.flip_to_target) > 0]
    return [Edit(f"found:{p}", "search", True, prepend=p) for p in phrases if p]


def _last_answer(item: Item) -> str:
    return next((m.text for m in reversed(item.messages) if m.role == "assistant"), "")


def mined_edits(
    items: Sequence[Item], Y: np.ndarray, rubric: Rubric, target: str, top: int
) -> list[Edit]:
    """The openings and n-grams that mark the target's answers, as label-preserving edits.

    They are what a search tries first (:func:`tinyjudge.exploit.mine_candidates`
    on the training answers, by the teacher's labels); put in front of answers of
    every label, they stop telling the labels apart, so the model has to read
    the rest of the answer.
    """
    from tinyjudge.exploit import Edit, mine_candidates
    from tinyjudge.exploit._edits import slug

    if top == 0:
        return []
    j = rubric.label_names.index(target)
    answers = [_last_answer(it) for it in items]
    inside = [a for a, y in zip(answers, Y[:, j], strict=True) if y >= 0.5]
    outside = [a for a, y in zip(answers, Y[:, j], strict=True) if y < 0.5]
    found = mine_candidates(inside, outside, top=top)
    return [Edit(f"mined:{slug(c.phrase)}", "search", True, prepend=c.phrase) for c in found]


class _Pool:
    """The training rows: items, soft targets and the training item each was made from."""

    def __init__(self, items: list[Item], Y: np.ndarray) -> None:
        self.items, self.Y = list(items), Y
        self.origin = np.arange(len(items))

    def add(self, items: list[Item], Y: np.ndarray, origin: np.ndarray) -> None:
        self.items += items
        self.Y = np.vstack([self.Y, Y])
        self.origin = np.concatenate([self.origin, origin])

    def without(self, drop: np.ndarray) -> tuple[list[Item], np.ndarray]:
        """The rows not made from the training items flagged in ``drop``."""
        rows = np.flatnonzero(~drop[self.origin])
        return [self.items[i] for i in rows], self.Y[rows]


def _folds(items: Sequence[Item], group_by: str | None, rng: np.random.Generator) -> np.ndarray:
    """0 or 1 for each item, whole groups on one side."""
    from ._data import group_keys

    keys = group_keys(items, group_by)
    unique = sorted(set(keys))
    side = dict(zip(unique, rng.permutation(len(unique)) % 2, strict=True))
    return np.array([side[k] for k in keys])


def fit_hardened(
    fit: Fit,
    items: Sequence[Item],
    Y: np.ndarray,
    val_items: Sequence[Item],
    rubric: Rubric,
    config: HardenConfig,
    group_by: str | None = None,
) -> tuple[RewardModel, dict[str, Any]]:
    """Fit the plain model, augment, run the adversarial rounds; the last model and its record.

    Each round searches the training split out of fold: a model fitted without
    half of the training groups (and every copy made from them) is searched on
    that half, and the other way round, since a model reads its own training
    answers too well for a search on them to find what a policy would.

    Args:
        fit: makes a new model of the tier and fits it on items and soft targets.
        items: the training items (their copies are made here).
        Y: their soft targets, one column per rubric label.
        val_items: the validation items the stopping rule and the card's figures use.
        rubric: the model's rubric (its claims are among the edits).
        config: the options.
        group_by: the split's key; the rounds' two folds keep each group whole.

    Returns:
        The hardened model, and the record that goes into its card under ``harden``.
    """
    from tinyjudge.exploit import builtin_edits

    items = list(items)
    target = harden_target(rubric, config.harden_target)
    rng = np.random.default_rng(config.harden_seed)
    edits = builtin_edits(rubric, target)
    keys = [e for e in edits if e.family == "master_key"]
    key_label = master_key_label(rubric, target)
    key_row = np.eye(len(rubric.label_names), dtype=Y.dtype)[rubric.label_names.index(key_label)]
    budget = config.harden_budget

    t0 = time.perf_counter()
    plain = fit(items, Y)
    before = exploit_figures(plain, val_items, target, items, budget, edits)
    own = own_verdicts(items, Y, rubric)
    base_items, base_Y = [items[i] for i in own], Y[own]
    keep = [e for e in edits if e.preserves_label]
    keep += mined_edits(base_items, base_Y, rubric, target, config.harden_mined)
    pool = _Pool(items, Y)
    aug_items, aug_Y, aug_from = augment(base_items, base_Y, keep, config.harden_copies, rng)
    pool.add(aug_items, aug_Y, own[aug_from])
    key_items, key_from = _master_keys(base_items, keys, config.harden_keys, rng)
    pool.add(key_items, np.tile(key_row, (len(key_items), 1)), own[key_from])
    fold = _folds(items, group_by, rng)
    model = fit(pool.items, pool.Y)
    rounds: list[dict[str, Any]] = []
    for r in range(config.harden_rounds + 1):
        figures = exploit_figures(model, val_items, target, items, budget, edits)
        rounds.append({"round": r, "n_train": len(pool.items), **figures})
        if figures["best_search_flip"] < config.harden_bound or r == config.harden_rounds:
            break
        found: dict[str, Edit] = {}
        for side in (0, 1):
            held = fold == side
            fold_model = fit(*pool.without(held))
            audit = [items[i] for i in own if held[i]]
            bank = [items[i] for i in own if not held[i]]
            for e in _search_edits(fold_model, audit, bank, target, config, config.harden_seed + r):
                found.setdefault(str(e.prepend), e)
        if not found:
            break
        new_items, new_Y, new_from = augment(
            base_items, base_Y, list(found.values()), config.harden_copies, rng, tag=f"r{r + 1}-"
        )
        rounds[-1]["added"] = list(found)
        pool.add(new_items, new_Y, own[new_from])
        model = fit(pool.items, pool.Y)
    record = {
        "target": target,
        "master_key_label": key_label,
        "edits": [e.name for e in keep],
        "master_keys": [e.name for e in keys],
        "n_augmented": len(aug_items),
        "n_master_keys": len(key_items),
        "rounds": rounds,
        "before": before,
        "after": {k: v for k, v in rounds[-1].items() if k not in {"round", "n_train", "added"}},
        "bound": config.harden_bound,
        "seconds": round(time.perf_counter() - t0, 2),
        "config": {k: v for k, v in vars(config).items() if k.startswith("harden_")},
    }
    return model, record
