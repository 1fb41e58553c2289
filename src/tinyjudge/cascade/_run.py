"""The cascade: the reward model keeps what it has earned, the judge (or people) the rest."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyjudge._progress import progress
from tinyjudge.errors import UsageError
from tinyjudge.judge import JudgeConfig, JudgeLike, open_judge
from tinyjudge.records import Item, Label, index_labels
from tinyjudge.results import Interval

from ._bound import ThresholdChoice, choose_threshold, clopper_pearson
from ._cluster import korn_graubard_items
from ._result import CascadeConfig, CascadeResult, StageResult

if TYPE_CHECKING:
    from tinyjudge.distill import RewardModel

__all__ = ["cascade"]


def _judge_run(judge: JudgeLike, items: list[Item], what: str) -> Any:
    """``judge.run(items)``, its calls said through :func:`~tinyjudge._progress.progress`."""
    with progress(f"judging {len(items)} {what}", len(items)) as step:
        seen = [0]

        def said(done: int, total: int) -> None:
            step(done - seen[0])
            seen[0] = done

        return judge.run(items, said)


def _stage(
    confidence: np.ndarray,
    agree: np.ndarray,
    groups: list[str] | None,
    config: CascadeConfig,
) -> tuple[ThresholdChoice, Interval, float | None]:
    # each stage spends its share of delta (Jung et al.'s Algorithm 2): a union bound
    delta = config.delta / (2 if config.stage else 1)
    choice = choose_threshold(
        confidence, agree, target=config.target, delta=delta, step=config.step,
        groups=groups, bound=config.bound if groups is not None else "item",
        min_groups=config.min_groups, seed=config.seed,
    )  # fmt: skip
    chosen = choice.chosen
    if chosen is None:
        return choice, Interval(math.nan), None
    kept = confidence >= chosen.threshold
    if choice.bound == "cluster" and groups is not None:
        keys = np.asarray(groups, dtype=object)[kept]
        low, high = korn_graubard_items(agree[kept], keys, delta)
    else:  # the items the test read (one per group under the exact bound)
        low, high = clopper_pearson(chosen.agree, chosen.n, delta)
    return choice, Interval(chosen.agreement, low, high), chosen.lower


def _grouping(
    items: Sequence[Item], config: CascadeConfig
) -> tuple[str | None, list[str] | None, str]:
    """The key whose groups are the guarantee's unit, each item's group, and the line."""
    from tinyjudge.distill import find_group_key, group_keys

    key = config.group_by or find_group_key(items)
    if key is None:
        return None, None, (
            "no prompt, question or dialogue key on the calibration items: the bound takes "
            "them as independent (item level); pass group_by if they share one"
        )  # fmt: skip
    groups = group_keys(items, key)
    n = len(set(groups))
    if config.bound == "exact":
        how = f"exact bound on one random item of each of the {n} groups of {key}"
    else:
        how = f"cluster bound (Korn-Graubard) over the {n} groups of {key}"
    said = "given" if config.group_by else "found"
    return key, groups, f"guarantee unit: the group ({said} key {key}); {how}"


def _confidence(label: Label | None) -> float:
    """A label's confidence: its top probability (-inf when it has none to offer)."""
    if label is None or label.status != "ok" or not label.probs:
        return -math.inf
    return max(label.probs.values())


def _load(model: RewardModel | str | os.PathLike[str]) -> RewardModel:
    if isinstance(model, str | os.PathLike):
        from tinyjudge.distill import load_model

        return load_model(os.fspath(model))
    return model


def _reference(
    index: dict[str, dict[str, Label]], source: str, ids: set[str], param: str
) -> dict[str, Label]:
    if source not in index:
        raise UsageError(
            f"no calibration labels from source {source!r} under this rubric; "
            f"sources present: {sorted(index)}",
            param,
        )
    return {i: lab for i, lab in index[source].items() if i in ids and lab.status == "ok"}


def cascade(
    model: RewardModel | str | os.PathLike[str],
    items: Sequence[Item],
    calibration: Iterable[Label],
    *,
    reference: str,
    config: CascadeConfig | None = None,
    judge: JudgeLike | JudgeConfig | None = None,
    cache: str | os.PathLike[str] | None = None,
    **options: Any,
) -> CascadeResult:
    """Label ``items`` with the reward model where it has earned it, and escalate the rest.

    The items that ``calibration`` labels (its ``reference`` source, and the
    ``stage`` source when there is a second stage) choose the thresholds and are
    held out: every other item gets one label, source ``cascade:<model>><judge>``.

    Args:
        model: a fitted reward model, or its model directory.
        items: the items, calibration items among them.
        calibration: labels that include the ``reference`` source's (a judge's or
            people's), on some of ``items``.
        reference: the source the reward model's agreement is guaranteed against.
        config: the options (:class:`CascadeConfig`); keyword options over it.
        judge: a ready judge for the escalated items, or a
            :class:`~tinyjudge.judge.JudgeConfig` to open one with (the same as
            ``config.judge``).
        cache: the judge's SQLite cache, so that a re-run makes no call twice.

    Raises:
        UsageError: the reference (or stage) source has no labels on ``items``, a
            second stage without a judge, or a judge under another rubric.
        DataError: an item id given twice, or a calibration label outside the
            rubric's labels.

    Example:
        >>> res = cascade("runs/rm", items, labels, reference="judge:gpt-4",
        ...               target=0.95, judge=JudgeConfig(model="gpt-4o"))  # doctest: +SKIP
        >>> res.stages[0].share_kept, res.guaranteed  # doctest: +SKIP
    """
    if isinstance(judge, JudgeConfig):
        options["judge"], judge = judge, None
    cfg = CascadeConfig.from_options(config, **options)
    rm = _load(model)
    items = list(items)
    if judge is not None and cfg.judge is not None:
        raise UsageError("pass a ready judge or config.judge, not both", "judge")
    with ExitStack() as stack:
        if judge is None and cfg.judge is not None:
            rubric = cfg.rubric or rm.rubric
            judge = stack.enter_context(open_judge(cfg.judge, rubric, cache=cache, items=items))
        return _cascade(rm, items, calibration, reference, cfg, judge)


def _cascade(
    rm: RewardModel,
    items: list[Item],
    calibration: Iterable[Label],
    reference: str,
    cfg: CascadeConfig,
    judge: JudgeLike | None,
) -> CascadeResult:
    if judge is not None and judge.rubric.id != rm.rubric.id:
        raise UsageError(
            f"the judge's rubric {judge.rubric.id!r} is not the reward model's "
            f"{rm.rubric.id!r}; their labels would not be one source",
            "rubric",
        )
    if cfg.stage is not None and judge is None:
        raise UsageError("a second stage needs a judge; pass judge", "stage", also=("judge",))
    ids = {it.id for it in items}
    index = index_labels(calibration, rubric=rm.rubric.id)
    ref = _reference(index, reference, ids, "reference")
    people = _reference(index, cfg.stage, ids, "stage") if cfg.stage else {}
    held = set(ref) | set(people)
    if not ref:
        raise UsageError(
            f"none of the items has an ok label from {reference!r}; "
            "the threshold needs calibration items",
            "reference",
        )

    P = rm.predict_proba(items)
    rm_labels = rm.labels_for(items, P)
    conf = P.max(axis=1)
    row = {it.id: i for i, it in enumerate(items)}
    cal = [row[i] for i in ref]
    agree = np.array([rm_labels[r].label == ref[items[r].id].label for r in cal])
    key, groups, grouping = _grouping([items[r] for r in cal], cfg)
    choice, agreement, lower = _stage(conf[cal], agree, groups, cfg)

    report = [i for i, it in enumerate(items) if it.id not in held]
    lam = choice.threshold
    kept = [i for i in report if lam is not None and conf[i] >= lam]
    kept_set = set(kept)
    escalated = [i for i in report if i not in kept_set]
    stages = [
        StageResult(rm.source, reference, lam, len(cal), agreement, lower, len(report),
                    len(kept), choice)
    ]  # fmt: skip
    note = "" if lam is not None else _unmet_note(stages[0], cfg, key)
    source = f"cascade:{rm.name}>" + (judge.model if judge is not None else "people")

    out: dict[int, Label] = {
        i: rm_labels[i].model_copy(update={"source": source, "decided_by": rm.source}) for i in kept
    }
    result = CascadeResult([], source, cfg.target, cfg.delta, lam is not None, note,
                           len(report), len(held), stages, len(escalated), 0,
                           group_by=key, grouping=grouping)  # fmt: skip
    if judge is None:
        for i in escalated:
            out[i] = _unscored(rm, items[i], source, "escalated")
    else:
        # the second stage is calibrated on the people-labelled items the first escalates
        reach = {i: lab for i, lab in people.items() if lam is None or conf[row[i]] < lam}
        _escalate(judge, items, escalated, reach, cfg, source, out, result)
    result.labels = [out[i] for i in report]
    result.abstained = sum(1 for lab in result.labels if lab.status == "unscored")
    return result


def _unmet_note(stage: StageResult, cfg: CascadeConfig, key: str | None) -> str:
    """The one line a cascade that keeps nothing prints: why, and what would change it."""
    choice = stage.choice
    if choice.too_few_groups:
        fix = (
            f"label items of at least {cfg.min_groups} groups of {key}, or use the exact "
            "bound (bound exact: one item per group)"
        )
    elif not choice.steps:
        fix = "label more calibration items, or lower target or raise delta"
    else:
        fix = "lower target, raise delta, or label more calibration items"
    return f"{stage.unmet(cfg.target)}: every item is escalated; {fix}"


def _unscored(rm: RewardModel, item: Item, source: str, reason: str) -> Label:
    return Label(item_id=item.id, rubric=rm.rubric.id, rubric_hash=rm.rubric.hash,
                 source=source, status="unscored", reason=reason)  # fmt: skip


def _escalate(
    judge: JudgeLike,
    items: list[Item],
    escalated: list[int],
    people: dict[str, Label],
    cfg: CascadeConfig,
    source: str,
    out: dict[int, Label],
    result: CascadeResult,
) -> None:
    """Send the escalated items (only those) to the judge; a second stage if asked."""
    summaries = []
    lam2: float | None = None
    if cfg.stage is not None:
        cal_items = [it for it in items if it.id in people]
        judged = _judge_run(judge, cal_items, "calibration items for the second stage")
        summaries.append(judged.summary)
        result.calibration_judge_items = len(cal_items)
        by_id = {lab.item_id: lab for lab in judged}
        conf2 = np.array([_confidence(by_id.get(it.id)) for it in cal_items])
        agree2 = np.array([
            by_id[it.id].status == "ok" and by_id[it.id].label == people[it.id].label
            for it in cal_items
        ])  # fmt: skip
        groups2 = None
        if result.group_by is not None:
            from tinyjudge.distill import group_keys

            groups2 = group_keys(cal_items, result.group_by)
        choice2, agreement2, lower2 = _stage(conf2, agree2, groups2, cfg)
        lam2 = choice2.threshold
        result.stages.append(
            StageResult(judge.source, cfg.stage, lam2, len(cal_items), agreement2, lower2,
                        len(escalated), 0, choice2)
        )  # fmt: skip
    judgment = _judge_run(judge, [items[i] for i in escalated], "escalated items")
    summaries.append(judgment.summary)
    for i, lab in zip(escalated, judgment, strict=True):
        if cfg.stage is not None and (lam2 is None or _confidence(lab) < lam2):
            out[i] = Label(item_id=lab.item_id, rubric=lab.rubric, rubric_hash=lab.rubric_hash,
                           source=source, status="unscored", reason="abstained",
                           raw=lab.label)  # fmt: skip
            continue
        out[i] = lab.model_copy(update={"source": source, "decided_by": judge.source})
        if cfg.stage is not None:
            result.stages[1].kept += 1
    result.judge_items = len(escalated)
    result.judge_calls = judgment.summary.calls
    costs = [s.cost for s in summaries if s.cost is not None]
    result.cost = judgment.summary.cost
    result.judge = {
        "model": judge.model,
        "calls": sum(s.calls for s in summaries),
        "cache_hits": sum(s.cache_hits for s in summaries),
        "unscored": judgment.summary.unscored,
        "total_cost": sum(costs) if costs else None,
    }
