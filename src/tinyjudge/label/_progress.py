"""Live progress of one reviewer: the behaviour-rate estimate so far and how often the
judge and the reward model agree with this reviewer.

Only items the reviewer has already answered enter these figures, so the progress
panel never shows a machine's verdict on the item being labelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge.records import Label
from tinyjudge.rubric import Rubric

__all__ = ["RateEstimate", "SourceAgreement", "rate_estimate", "agreement", "verdicts"]

_Z95 = 1.959963984540054


class RateEstimate(NamedTuple):
    """The behaviour rate (share of items with a positive label) with a 95% interval."""

    rate: float
    low: float
    high: float
    n: int
    method: str


class SourceAgreement(NamedTuple):
    """How one machine source agrees with the reviewer on the items both labelled."""

    source: str
    n: int
    agreement: float
    kappa: float | None


def _wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    denom = 1 + _Z95**2 / n
    centre = (p + _Z95**2 / (2 * n)) / denom
    half = _Z95 * math.sqrt(p * (1 - p) / n + _Z95**2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _ppi_fallback(cheap: np.ndarray, labelled: np.ndarray, human: np.ndarray) -> RateEstimate:
    # PPI mean (Angelopoulos et al., 2023): the cheap mean over every item, corrected by the
    # mean human-minus-cheap residual on the labelled ones.
    resid = human - cheap[labelled]
    n, big_n = int(labelled.sum()), len(cheap)
    rate = float(cheap.mean() + resid.mean())
    se = math.sqrt(float(cheap.var(ddof=1)) / big_n + float(resid.var(ddof=1)) / n)
    low, high = rate - _Z95 * se, rate + _Z95 * se
    return RateEstimate(rate, max(0.0, low), min(1.0, high), n, "PPI")


def rate_estimate(
    rubric: Rubric,
    item_ids: Sequence[str],
    answers: Mapping[str, str],
    cheap: np.ndarray | None,
) -> RateEstimate | None:
    """The rate of the rubric's positive labels from this reviewer's answers.

    With a cheap score for every item this is a prediction-powered (PPI) estimate over
    all items; otherwise the labelled share with a Wilson interval. None before two
    answers or when the rubric names no positive labels.
    """
    if not rubric.positive:
        return None
    index = {item_id: i for i, item_id in enumerate(item_ids)}
    labelled = np.zeros(len(item_ids), dtype=bool)
    human = []
    for item_id in answers:
        if item_id in index:
            labelled[index[item_id]] = True
    for i in np.flatnonzero(labelled):
        human.append(1.0 if answers[item_ids[i]] in rubric.positive else 0.0)
    n = len(human)
    if n < 2:
        return None
    h = np.asarray(human)
    if cheap is not None and n < len(item_ids):
        return _ppi_fallback(cheap, labelled, h)
    low, high = _wilson(int(h.sum()), n)
    return RateEstimate(float(h.mean()), low, high, n, "Wilson")


def _kappa(a: list[str], b: list[str]) -> float | None:
    try:
        from tinyjudge.audit.agreement import cohen_kappa
    except ImportError:
        cohen_kappa = None
    if cohen_kappa is not None:
        value = float(cohen_kappa(a, b))
        return None if math.isnan(value) else value
    cats = sorted(set(a) | set(b))
    n = len(a)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in cats)
    return None if pe >= 1.0 else (po - pe) / (1 - pe)


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
        out.append(
            {
                "source": lab.source,
                "status": lab.status,
                "label": lab.label,
                "score": lab.score if lab.score is not None or not probs else rubric.score(probs),
                "probs": {k: round(v, 3) for k, v in probs.items()},
                # the chosen label's probability, when the source gave a real distribution
                "p": probs.get(lab.label or "") if len(probs) > 1 else None,
                "rationale": lab.rationale,
                "reason": lab.reason,
            }
        )
    return out
