"""Live progress of one reviewer: the behaviour-rate estimate so far and how often the
judge and the reward model agree with this reviewer.

Only items the reviewer has already answered enter these figures, so the progress
panel never shows a machine's verdict on the item being labelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from tinyjudge.audit.agreement import cohen_kappa
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Label
from tinyjudge.results import Interval, plain
from tinyjudge.rubric import Rubric

__all__ = ["RateEstimate", "SourceAgreement", "rate_estimate", "agreement", "verdicts"]

_LEVEL = 0.95


class RateEstimate(NamedTuple):
    """The behaviour rate (share of items with a positive label) with a 95% interval.

    ``human`` is the same rate from the reviewer's labels alone, for comparison;
    ``note`` says why there is no estimate yet when ``rate`` is None.
    """

    rate: Interval | None
    n: int
    method: str
    human: Interval | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``/api/progress``'s ``rate``): each rate as ``{"value", "low",
        "high"}``."""
        return plain(self._asdict())


class SourceAgreement(NamedTuple):
    """How one machine source agrees with the reviewer on the items both labelled."""

    source: str
    n: int
    agreement: float
    kappa: float | None


def rate_estimate(
    rubric: Rubric,
    item_ids: Sequence[str],
    answers: Mapping[str, str],
    cheap: np.ndarray | None,
    method: Literal["ppi++", "stratified"] = "ppi++",
) -> RateEstimate | None:
    """The rate of the rubric's positive labels from this reviewer's answers.

    With a cheap score for every item this is :func:`tinyjudge.estimate.estimate_rate`
    over all items: ``stratified`` when the items were chosen by active selection (the
    only estimate that stays unbiased then), ``ppi++`` for a random order. Without cheap
    scores it is the Wilson interval of the labels alone. None before two answers or
    when the rubric names no positive labels.
    """
    from tinyjudge.estimate import estimate_rate, wilson_mean

    if not rubric.positive:
        return None
    index = {item_id: i for i, item_id in enumerate(item_ids)}
    human = np.full(len(item_ids), np.nan)
    for item_id, label in answers.items():
        if item_id in index:
            human[index[item_id]] = 1.0 if label in rubric.positive else 0.0
    n = int((~np.isnan(human)).sum())
    if n < 2:
        return None
    alone = wilson_mean(human[~np.isnan(human)], level=_LEVEL)
    base = RateEstimate(alone.interval, n, "Wilson")
    if cheap is None:
        return base
    try:
        est = estimate_rate(cheap, human, level=_LEVEL, method=method).estimate
    except TinyjudgeError as e:
        # e.g. the stratified estimate before every cheap-score bin has a label
        return RateEstimate(None, n, method, base.rate, note=str(e))
    return RateEstimate(est.interval, n, est.method, base.rate)


def _kappa(a: list[str], b: list[str]) -> float | None:
    value = float(cohen_kappa(a, b))
    return None if math.isnan(value) else value


def machine_source(source: str) -> bool:
    """Sources a reviewer may see after answering: anything but another human."""
    return not source.startswith("human:")


def agreement(
    labels: Sequence[Label], rubric: Rubric, answers: Mapping[str, str]
) -> list[SourceAgreement]:
    """Agreement of each judge, reward model or classifier with the reviewer's answers."""
    by_source: dict[str, tuple[list[str], list[str]]] = {}
    for lab in labels:
        if (
            lab.rubric == rubric.id
            and machine_source(lab.source)
            and lab.status == "ok"
            and lab.label is not None
            and lab.item_id in answers
        ):
            mine, theirs = by_source.setdefault(lab.source, ([], []))
            mine.append(answers[lab.item_id])
            theirs.append(lab.label)
    out = []
    for source, (mine, theirs) in by_source.items():
        n = len(mine)
        agree = sum(x == y for x, y in zip(mine, theirs, strict=True)) / n
        out.append(SourceAgreement(source, n, agree, _kappa(mine, theirs) if n >= 2 else None))
    # judges first, then reward models, then the rest, as the panel lists them
    rank = {"judge": 0, "rm": 1}
    out.sort(key=lambda s: (rank.get(s.source.split(":", 1)[0], 2), s.source))
    return out


def verdicts(labels: Sequence[Label], item_id: str, rubric: Rubric) -> list[dict[str, Any]]:
    """What every machine source said about one item, shown after the reviewer answers."""
    out = []
    for lab in labels:
        if lab.item_id != item_id or lab.rubric != rubric.id or not machine_source(lab.source):
            continue
        probs = lab.probs or {}
        score = lab.score if lab.score is not None or not probs else rubric.score(probs)
        out.append(
            {
                "source": lab.source,
                "status": lab.status,
                "label": lab.label,
                # a NaN or infinite score is shown as missing (and JSON has no NaN)
                "score": score if score is not None and math.isfinite(score) else None,
                "probs": {k: round(v, 3) for k, v in probs.items()},
                # the chosen label's probability, when the source gave a real distribution
                "p": probs.get(lab.label or "") if len(probs) > 1 else None,
                "rationale": lab.rationale,
                "reason": lab.reason,
            }
        )
    return out
