"""From Label records to rates: join a cheap source and a human source by item.

The behaviour is the rubric's ``positive`` labels (e.g. ``full_refusal`` and
``partial_refusal`` for refusal). A label's value is the probability mass it puts
on them (``probs``), else its ``score`` when that is a probability, else 1/0 for
its class. An item is in the population when the cheap source scored it; unscored
labels are counted, never turned into a class.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np

from tinyjudge.errors import RubricError, UsageError
from tinyjudge.records import Item, Label, join_sources
from tinyjudge.rubric import Rubric, load_rubric

from ._config import EstimateConfig, Method
from ._rates import compare_rates, estimate_rate
from ._report import RateComparison, RateReport, RateRow

__all__ = ["behaviour_value", "estimate_rates"]

MISSING_GROUP = "(missing)"


def behaviour_value(label: Label, rubric: Rubric) -> float:
    """The probability that a scored label says the behaviour occurred.

    Raises:
        TinyjudgeError: the rubric has no ``positive`` labels, or the label's
            ``score`` (used without ``probs``) is not in [0, 1].
    """
    if not rubric.positive:
        raise RubricError(
            f"rubric {rubric.id!r} names no `positive` labels, so it defines no rate; "
            "add e.g. `positive: [full_refusal]` to its YAML"
        )
    if label.probs:
        return float(sum(label.probs.get(p, 0.0) for p in rubric.positive))
    if label.label is not None:
        return 1.0 if label.label in rubric.positive else 0.0
    score = float(label.score)  # type: ignore[arg-type]  # an ok label has one of the two
    if not 0.0 <= score <= 1.0:
        raise UsageError(
            f"label of {label.item_id!r} from {label.source!r} has score {score}, not a "
            "probability in [0, 1], and no probs or label to read the behaviour from"
        )
    return score


def _by_source(
    labels: Iterable[Label], rubric_id: str | None
) -> tuple[dict[str, dict[str, Label]], str]:
    """``{source: {item_id: label}}`` under one rubric (the only one, if not named)."""
    seen: dict[str, dict[str, dict[str, Label]]] = {}
    for lab in labels:
        # A later label for the same item and source wins, as in audit's pairing.
        seen.setdefault(lab.rubric, {}).setdefault(lab.source, {})[lab.item_id] = lab
    if not seen:
        raise UsageError("no labels to estimate from: the label files are empty")
    if rubric_id is None:
        if len(seen) > 1:
            raise UsageError(
                f"the labels use several rubrics {sorted(seen)}; choose one with rubric",
                param="rubric",
            )
        rubric_id = next(iter(seen))
    if rubric_id not in seen:
        raise UsageError(f"no labels under rubric {rubric_id!r}; rubrics present: {sorted(seen)}")
    return seen[rubric_id], rubric_id


def _group_of(item: Item | None, by: str | None) -> str:
    if by is None:
        return "all"
    value = item.get(by) if item is not None else None
    return MISSING_GROUP if value is None else str(value)


def estimate_rates(
    labels: Iterable[Label],
    items: Sequence[Item] | None = None,
    config: EstimateConfig | None = None,
    *,
    rubric: str | Rubric | None = None,
    **options: Any,
) -> RateReport:
    """Estimate a behaviour's rate from a cheap source on all items and a few human labels.

    Args:
        labels: Label records of any sources; only ``cheap`` and ``human`` are used.
        items: the items, needed for ``by`` and ``cluster`` (values are read from them);
            when given, labels of items not among them are left out (and counted).
        config: the options (:class:`EstimateConfig`: ``cheap`` and ``human`` sources,
            ``by``, ``compare``, ``level``, ``method``, ``n_strata``, ``human_fraction``
            and its ``seed``, ``cluster``); keyword ``options`` (its fields) go over it,
            so ``estimate_rates(labels, cheap="judge:gpt-4", human="human:final")`` is
            enough. ``human_fraction`` keeps that share of the human labels, drawn at
            random (what a few labels would give), and reports the rate from all of
            them beside, in ``held_back``; ``cluster`` makes every interval
            cluster-robust (see :func:`estimate_rate`), an item without the key its
            own cluster (counted in ``counts["no_cluster"]``).
        rubric: the rubric (name, path or object) whose ``positive`` labels are the
            behaviour; by default the one rubric the labels use.

    Returns:
        A :class:`RateReport` of typed rows (``report.overall.rate`` is an
        :class:`~tinyjudge.results.Interval`). ``counts`` holds ``items`` (scored by the cheap
        source), ``human`` (used), ``unscored_cheap``, ``unscored_human``,
        ``human_without_cheap``, ``not_in_items`` and ``human_held_back``.

    Raises:
        TinyjudgeError: an unknown source (the message lists those present), no item
            with both labels, ``by`` without items, an unknown group in ``compare``,
            a fraction outside (0, 1], or fewer than 2 human labels in a group.
    """
    cfg = EstimateConfig.from_options(config, **options)
    cheap, human, by, compare, cluster = cfg.cheap, cfg.human, cfg.by, cfg.compare, cfg.cluster
    level, method, n_strata, seed = cfg.level, cast(Method, cfg.method), cfg.n_strata, cfg.seed
    human_fraction = cfg.human_fraction
    if rubric is None:
        table, rubric_id = _by_source(labels, None)
        rub = load_rubric(rubric_id)
    else:
        rub = load_rubric(rubric)
        table, rubric_id = _by_source(labels, rub.id)
    for name, src in (("cheap", cheap), ("human", human)):
        if src not in table:
            raise UsageError(
                f"no labels from {name} source {src!r} under rubric {rubric_id!r}; "
                f"sources present: {sorted(table)}"
            )
    for key, what in ((by, "grouping by"), (cluster, "clustering by")):
        if key is not None and items is None:
            raise UsageError(f"{what} {key!r} needs the items: pass items", param="items")
    if compare is not None and by is None:
        raise UsageError("comparing two groups needs a grouping key: pass by", param="by")
    index = {it.id: it for it in items} if items is not None else None
    counts = dict.fromkeys(
        ["items", "human", "unscored_cheap", "unscored_human", "human_without_cheap"], 0
    )
    counts["not_in_items"] = 0
    if index is not None:
        for src in (cheap, human):
            counts["not_in_items"] += sum(1 for i in table[src] if i not in index)
        table = {s: {i: lab for i, lab in table[s].items() if i in index} for s in (cheap, human)}
    joined = join_sources(table, cheap, human)
    counts["unscored_cheap"] = joined.left_out_a
    counts["unscored_human"] = joined.left_out_b
    f_val = {i: behaviour_value(lab, rub) for i, lab in joined.scored_a.items()}
    y_val = {i: behaviour_value(lab, rub) for i, lab in joined.scored_b.items() if i in f_val}
    counts["human_without_cheap"] = len(joined.scored_b) - len(y_val)
    if not y_val:
        raise UsageError(
            f"no item has both a scored {cheap!r} label and a scored {human!r} label; "
            "check that the two sources labelled the same item ids"
        )
    ids = list(f_val)
    group = {i: _group_of(index.get(i) if index is not None else None, by) for i in ids}
    held_back: dict[str, float] = {}
    if human_fraction is not None and human_fraction < 1.0:
        everyone = sorted(y_val)
        held_back["overall"] = float(np.mean([y_val[i] for i in everyone]))
        if by is not None:
            for g in sorted({group[i] for i in everyone}):
                held_back[g] = float(np.mean([y_val[i] for i in everyone if group[i] == g]))
        keep = min(len(everyone), max(2, round(human_fraction * len(everyone))))
        chosen = np.random.default_rng(seed).choice(len(everyone), size=keep, replace=False)
        y_val = {everyone[j]: y_val[everyone[j]] for j in sorted(chosen)}
        counts["human_held_back"] = len(everyone) - len(y_val)
    counts["items"], counts["human"] = len(ids), len(y_val)
    where: dict[str, str] = {}
    if cluster is not None and index is not None:
        where = {i: str(v) if (v := index[i].get(cluster)) is not None else "\x00" + i for i in ids}
        counts["no_cluster"] = sum(1 for v in where.values() if v.startswith("\x00"))

    def arrays(members: list[str]) -> tuple[np.ndarray, np.ndarray]:
        f = np.asarray([f_val[i] for i in members], dtype=float)
        y = np.asarray([y_val.get(i, np.nan) for i in members], dtype=float)
        return f, y

    def clusters_of(members: list[str]) -> list[str] | None:
        return [where[i] for i in members] if where else None

    def fit(members: list[str], what: str) -> RateRow:
        try:
            got = estimate_rate(
                *arrays(members), level=level, method=method, n_strata=n_strata,
                clusters=clusters_of(members),
            )  # fmt: skip
        except UsageError as e:
            raise UsageError(f"{what}: {e}", param=e.param) from None
        return RateRow.of(got)

    overall = fit(ids, "all items")
    groups: dict[str, RateRow] = {}
    if by is not None:
        for g in sorted(set(group.values())):
            groups[g] = fit([i for i in ids if group[i] == g], f"group {by}={g}")
    comparison = None
    if compare is not None:
        missing = [g for g in compare if g not in groups]
        if missing:
            raise UsageError(
                f"no group {missing[0]!r} under {by!r}; groups present: {sorted(groups)}"
            )
        a, b = ([i for i in ids if group[i] == g] for g in compare)
        difference = compare_rates(
            *arrays(a), *arrays(b), level=level, method=method, n_strata=n_strata,
            clusters_a=clusters_of(a), clusters_b=clusters_of(b),
        )  # fmt: skip
        comparison = RateComparison.of(*compare, difference)
    return RateReport(
        rub.id, cheap, human, by, overall, groups, comparison, counts, held_back, cluster,
        tuple(rub.positive),
    )  # fmt: skip
