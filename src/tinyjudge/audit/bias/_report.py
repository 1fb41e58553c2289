"""Every bias probe that applies to a set of labels, as JSON-ready figures for the audit report."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label
from tinyjudge.results import Interval

from ._consistency import samples_from_labels, self_consistency
from ._position import position_bias
from ._verbosity import verbosity_bias

__all__ = ["bias_report"]


def _plain(value: Any) -> Any:
    """Intervals and NamedTuples to dicts, tuples to lists, NaN and infinities to None."""
    if isinstance(value, Interval):
        return _plain(value.to_dict())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _label_names(rubric_id: str) -> list[str] | None:
    from tinyjudge.rubric import load_rubric

    try:
        return load_rubric(rubric_id).label_names
    except TinyjudgeError:
        return None


def _has_samples(lab: Label) -> bool:
    raw = lab.raw
    if isinstance(raw, dict):
        raw = raw.get("samples", raw.get("ab"))
    return isinstance(raw, list) and len(raw) >= 2


def bias_report(
    labels: Sequence[Label],
    items: Sequence[Item] | None = None,
    *,
    reference: str | None = None,
    group_by: str | None = None,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the probes that the labels allow, per source.

    Position bias for sources with both-order pairwise labels; verbosity bias for
    sources with a/b verdicts on pairwise ``items`` (against ``reference`` where it
    judged the same pairs); self-consistency for sources whose labels record
    several samples. Injection susceptibility needs a live judge, so it is not
    run here (see :func:`injection_flip_rate`).

    Args:
        labels: Label records of any sources.
        items: the items (for response lengths and for ``group_by``).
        reference: the reference source, e.g. ``human:gold``.
        group_by: an item key (e.g. ``metadata.prompt_id``) whose values are the
            bootstrap's clusters.
        level: coverage of the intervals.
        n_boot: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        ``{"position": {source: {...}}, "verbosity": {...}, "self_consistency":
        {...}, "level": level, "notes": [...]}``, with NaN as None.
    """
    by_source: dict[str, list[Label]] = {}
    for lab in labels:
        by_source.setdefault(lab.source, []).append(lab)
    groups = None
    if group_by is not None and items is not None:
        groups = {it.id: it.get(group_by) for it in items}
    boot: dict[str, Any] = {"level": level, "n_boot": n_boot, "seed": seed}
    out: dict[str, Any] = {
        "position": {},
        "verbosity": {},
        "self_consistency": {},
        "level": level,
        "notes": [
            "injection susceptibility needs a live judge: run "
            "tinyjudge.audit.bias.injection_flip_rate(judge.run, items) with a judge from "
            "tinyjudge.judge.open_judge"
        ],
    }
    pairwise = [it for it in items or [] if it.is_pairwise]
    ref_labels = by_source.get(reference) if reference is not None else None
    probes: list[tuple[str, str, Callable[[], Any]]] = []
    for source, labs in sorted(by_source.items()):
        if any(lab.orders and "ab" in lab.orders and "ba" in lab.orders for lab in labs):

            def position(labs: list[Label] = labs) -> Any:
                return position_bias(labs, groups=groups, **boot)

            probes.append(("position", source, position))
        if pairwise and any(lab.label in ("a", "b") for lab in labs):
            ref = ref_labels if source != reference else None

            def verbosity(labs: list[Label] = labs, ref: list[Label] | None = ref) -> Any:
                return verbosity_bias(labs, pairwise, reference=ref, groups=groups, **boot)

            probes.append(("verbosity", source, verbosity))
        repeated = len({lab.item_id for lab in labs}) < len(labs)
        if repeated or any(_has_samples(lab) for lab in labs):
            names = _label_names(labs[0].rubric)

            def consistency(labs: list[Label] = labs, names: list[str] | None = names) -> Any:
                ids, samples = samples_from_labels(labs, label_names=names)
                return self_consistency(samples, ids=ids, groups=groups, **boot)

            probes.append(("self_consistency", source, consistency))
    for probe, source, run in probes:
        try:
            out[probe][source] = _plain(run())
        except TinyjudgeError as e:
            out["notes"].append(f"{probe} for {source}: not measured ({e})")
    return out
