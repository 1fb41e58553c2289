"""Self-consistency: how often a judge's repeated samples of one item agree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Label

from ._common import Interval, mean_interval, one_source

__all__ = ["SelfConsistency", "self_consistency", "samples_from_labels"]


class SelfConsistency(NamedTuple):
    """Agreement between a judge's repeated samples of the same item.

    Attributes:
        agreement: mean over items of the chance that two of its samples (drawn
            without replacement) agree: ``sum_c m_c (m_c - 1) / (k (k - 1))``, with
            its bootstrap interval.
        unanimous: share of items whose samples all agree.
        kappa: Fleiss' kappa across samples (chance-corrected; NaN when every
            sample of every item is the same class; None when items have
            different numbers of samples).
        n: items with at least 2 parsed samples.
        mean_samples: mean parsed samples per item.
        n_unparsed: samples that gave no verdict (left out).
        n_skipped: items with fewer than 2 parsed samples.
        level: nominal coverage.
    """

    agreement: Interval
    unanimous: float
    kappa: float | None
    n: int
    mean_samples: float
    n_unparsed: int
    n_skipped: int
    level: float


def self_consistency(
    samples: Sequence[Sequence[str | None]],
    *,
    ids: Sequence[str] | None = None,
    groups: Mapping[str, Any] | None = None,
    level: float = 0.9,
    n_boot: int = 2000,
    seed: int = 0,
) -> SelfConsistency:
    """How often a judge's samples of one item agree, averaged over items.

    Args:
        samples: per item, the verdict of each sample (None: unparsed).
        ids: item ids (for ``groups``); default the positions.
        groups: item id -> cluster for the bootstrap.
        level: coverage of the interval.
        n_boot: bootstrap resamples.
        seed: bootstrap seed.

    Raises:
        TinyjudgeError: no item with 2 or more parsed samples.

    >>> round(self_consistency([["a", "a", "b"], ["b", "b", "b"]]).agreement.value, 4)  # (1/3+1)/2
    0.6667
    """
    from tinyjudge.audit.agreement import fleiss_kappa

    item_ids = list(ids) if ids is not None else [str(i) for i in range(len(samples))]
    if len(item_ids) != len(samples):
        raise UsageError(f"{len(item_ids)} ids for {len(samples)} items")
    kept_ids, agree, rows = [], [], []
    unparsed = skipped = 0
    for item_id, row in zip(item_ids, samples, strict=True):
        got = [s for s in row if s is not None]
        unparsed += len(row) - len(got)
        k = len(got)
        if k < 2:
            skipped += 1
            continue
        counts = np.unique(np.asarray(got, dtype=object), return_counts=True)[1]
        agree.append(float((counts * (counts - 1)).sum() / (k * (k - 1))))
        kept_ids.append(item_id)
        rows.append(got)
    if not rows:
        raise UsageError(
            f"no item with 2 or more parsed samples ({skipped} items, {unparsed} unparsed "
            "samples); judge with samples > 1 to measure self-consistency"
        )
    a = np.asarray(agree)
    kappa = fleiss_kappa(rows) if len({len(r) for r in rows}) == 1 else None
    return SelfConsistency(
        mean_interval(a, kept_ids, groups, level, n_boot, seed),
        float(np.mean(a == 1.0)),
        kappa,
        len(rows),
        float(np.mean([len(r) for r in rows])),
        unparsed,
        skipped,
        level,
    )


def samples_from_labels(
    labels: Iterable[Label], label_names: Sequence[str] | None = None
) -> tuple[list[str], list[list[str | None]]]:
    """Each item's sampled verdicts, as recorded in one source's labels.

    Read from, in this order: ``raw["samples"]``, a list of verdicts; ``raw`` as a
    list of two or more model outputs (the judge with ``samples > 1``; for pairs,
    ``raw["ab"]``, the original order's outputs), parsed with the judge's parser
    against ``label_names``; else several labels of the same item, one verdict each.

    Returns:
        ``(item_ids, samples)`` ready for :func:`self_consistency`.
    """
    per_item: dict[str, list[str | None]] = {}
    for lab in one_source(labels, "samples_from_labels"):
        raw = lab.raw
        if isinstance(raw, dict) and isinstance(raw.get("samples"), list):
            per_item[lab.item_id] = [s if isinstance(s, str) else None for s in raw["samples"]]
            continue
        texts = raw.get("ab") if isinstance(raw, dict) else raw
        if isinstance(texts, list) and len(texts) >= 2:
            if label_names is None:
                raise UsageError(
                    "the labels hold raw model outputs; pass label_names (the rubric's "
                    "labels, e.g. rubric.label_names) to parse them"
                )
            from tinyjudge.judge import ParseFailure, parse_verdict

            parsed = [parse_verdict(t, list(label_names)) for t in texts]
            per_item[lab.item_id] = [
                None if isinstance(p, ParseFailure) else p.label for p in parsed
            ]
            continue
        per_item.setdefault(lab.item_id, []).append(lab.label if lab.status == "ok" else None)
    return list(per_item), list(per_item.values())
