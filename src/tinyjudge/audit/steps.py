"""Step localisation: does a source blame the same step and agent as people did?

On failure-attribution data such as Who&When, each label names the step (a
0-based message index) where a run first went wrong and the agent to blame.
This module scores any source against a reference source (by default the
people, ``human:who_and_when``): exact step accuracy, accuracy within ±1 and ±3
steps, and agent accuracy, each with a bootstrap interval, and a per-source
comparison table so two judges or two prompts can be set side by side.

>>> step_accuracy([3, 5, 0], [3, 6, 4])
0.3333333333333333
>>> step_accuracy([3, 5, 0], [3, 6, 4], tolerance=1)
0.6666666666666666
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tinyjudge._stats import BootstrapCI, bootstrap_ci
from tinyjudge.audit._pairs import source_table
from tinyjudge.errors import UsageError
from tinyjudge.records import Label, index_labels
from tinyjudge.results import plain

__all__ = [
    "StepAgreement",
    "step_accuracy",
    "agent_accuracy",
    "same_agent",
    "step_agreement",
    "compare_step_sources",
    "step_table",
    "HUMAN_SOURCE",
]

HUMAN_SOURCE = "human:who_and_when"
_SEP = re.compile(r"[\s_\-]+")


def same_agent(a: str | None, b: str | None) -> bool:
    """Whether two agent names are the same agent.

    Judges write ``Verification Expert`` for ``Verification_Expert``, so names
    are compared case-folded with runs of spaces, underscores and hyphens made
    equal. A missing name matches nothing.
    """
    if a is None or b is None:
        return False
    return _SEP.sub("_", a.strip().casefold()) == _SEP.sub("_", b.strip().casefold())


def step_accuracy(
    true_steps: Sequence[int] | np.ndarray,
    pred_steps: Sequence[int] | np.ndarray,
    tolerance: int = 0,
) -> float:
    """Share of items whose predicted step is within ``tolerance`` of the true step.

    ``tolerance=0`` is exact step accuracy. NaN on an empty sample.

    Raises:
        TinyjudgeError: the arrays differ in length, or ``tolerance`` is negative.
    """
    t = np.asarray(true_steps, dtype=float)
    p = np.asarray(pred_steps, dtype=float)
    if t.shape != p.shape:
        raise UsageError(f"step arrays must be equally long, got {t.size} and {p.size}")
    if tolerance < 0:
        raise UsageError(f"tolerance must be >= 0, got {tolerance}")
    if t.size == 0:
        return math.nan
    return float(np.mean(np.abs(t - p) <= tolerance))


def agent_accuracy(
    true_agents: Sequence[str | None] | np.ndarray,
    pred_agents: Sequence[str | None] | np.ndarray,
) -> float:
    """Share of items whose predicted agent is the true one (see :func:`same_agent`)."""
    if len(true_agents) != len(pred_agents):
        raise UsageError(
            f"agent arrays must be equally long, got {len(true_agents)} and {len(pred_agents)}"
        )
    if len(true_agents) == 0:
        return math.nan
    return float(np.mean([same_agent(a, b) for a, b in zip(true_agents, pred_agents, strict=True)]))


class StepAgreement(NamedTuple):
    """How well one source localises failures, measured against a reference source.

    Attributes:
        source: the source scored, e.g. ``judge:gpt-4o``.
        reference: the source taken as truth, e.g. ``human:who_and_when``.
        n: items where both gave an ``ok`` label with a step.
        exact: exact step accuracy with its bootstrap interval.
        within_1: accuracy within ±1 step.
        within_3: accuracy within ±3 steps.
        agent: agent accuracy (on the same ``n`` items).
        n_unscored: items both labelled where either label is unscored or has no step;
            counted here, never scored as a miss or a hit.
        only_reference: reference items the source did not label at all.
        only_source: items the source labelled that the reference did not.
    """

    source: str
    reference: str
    n: int
    exact: BootstrapCI
    within_1: BootstrapCI
    within_3: BootstrapCI
    agent: BootstrapCI
    n_unscored: int
    only_reference: int
    only_source: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields, each metric as an interval (``{"value", "low",
        "high"}``), then their ``level`` once."""
        metrics = {
            m: getattr(self, m).as_interval() for m in ("exact", "within_1", "within_3", "agent")
        }
        return plain(self._asdict() | metrics) | {"level": self.exact.level}


def _usable(label: Label) -> bool:
    return label.status == "ok" and label.step is not None


def _nan_ci(level: float, n_boot: int) -> BootstrapCI:
    return BootstrapCI(math.nan, math.nan, math.nan, level, n_boot, n_boot, 0)


def step_agreement(
    labels: Iterable[Label] | dict[str, dict[str, Label]],
    source: str,
    reference: str = HUMAN_SOURCE,
    *,
    rubric: str | None = "failure_step",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> StepAgreement:
    """Score one source's step and agent verdicts against a reference source.

    Args:
        labels: Label records of any sources, or :func:`index_labels` output.
        source: the source to score.
        reference: the source taken as truth.
        rubric: keep only labels under this rubric (None keeps all).
        n_boot: bootstrap resamples for each interval (items are resampled;
            the same seed draws the same resamples for every metric).
        level: interval coverage.
        seed: resampling seed, for reproducible reports.

    Raises:
        TinyjudgeError: either source has no labels (the message lists those present).
    """
    by_source = source_table(labels, (source, reference), rubric)
    ref, got = by_source[reference], by_source[source]
    true_steps: list[int] = []
    pred_steps: list[int] = []
    true_agents: list[str | None] = []
    pred_agents: list[str | None] = []
    unscored = 0
    for item_id, r in ref.items():
        g = got.get(item_id)
        if g is None:
            continue
        if not (_usable(r) and _usable(g)):
            unscored += 1
            continue
        true_steps.append(int(r.step))  # type: ignore[arg-type]
        pred_steps.append(int(g.step))  # type: ignore[arg-type]
        true_agents.append(r.label)
        pred_agents.append(g.label)
    n = len(true_steps)
    cis: list[BootstrapCI] = []
    for tol in (0, 1, 3):
        if n == 0:
            cis.append(_nan_ci(level, n_boot))
            continue
        cis.append(
            bootstrap_ci(
                lambda t, p, tol=tol: step_accuracy(t, p, tol),
                np.asarray(true_steps),
                np.asarray(pred_steps),
                n_boot=n_boot,
                level=level,
                seed=seed,
            )
        )
    if n == 0:
        cis.append(_nan_ci(level, n_boot))
    else:
        cis.append(
            bootstrap_ci(
                agent_accuracy,
                np.asarray(true_agents, dtype=object),
                np.asarray(pred_agents, dtype=object),
                n_boot=n_boot,
                level=level,
                seed=seed,
            )
        )
    return StepAgreement(
        source=source,
        reference=reference,
        n=n,
        exact=cis[0],
        within_1=cis[1],
        within_3=cis[2],
        agent=cis[3],
        n_unscored=unscored,
        only_reference=sum(1 for i in ref if i not in got),
        only_source=sum(1 for i in got if i not in ref),
    )


def compare_step_sources(
    labels: Iterable[Label],
    reference: str = HUMAN_SOURCE,
    sources: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[StepAgreement]:
    """:func:`step_agreement` of each source against the reference, in one table.

    Args:
        labels: Label records of any sources.
        reference: the source taken as truth.
        sources: the sources to score; default every source other than the reference.
        **kwargs: passed to :func:`step_agreement` (``rubric``, ``n_boot``, ``level``, ``seed``).
    """
    by_source = index_labels(labels, kwargs.pop("rubric", "failure_step"))
    if sources is None:
        sources = sorted(s for s in by_source if s != reference)
    return [step_agreement(by_source, s, reference, **kwargs) for s in sources]


def _cell(ci: BootstrapCI) -> str:
    if math.isnan(ci.estimate):
        return "n/a"
    low, high = ci.interval()
    if low is None or high is None:
        return f"{ci.estimate:.3f}"
    return f"{ci.estimate:.3f} [{low:.3f}, {high:.3f}]"


def step_table(rows: Sequence[StepAgreement]) -> str:
    """A Markdown table of :func:`compare_step_sources` rows, one source per line."""
    if not rows:
        return "(no sources to compare)"
    level = int(round(rows[0].exact.level * 100))
    head = (
        "| source | n | exact step | within ±1 | within ±3 | agent | unscored | missing |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.source} | {r.n} | {_cell(r.exact)} | {_cell(r.within_1)} | "
        f"{_cell(r.within_3)} | {_cell(r.agent)} | {r.n_unscored} | {r.only_reference} |\n"
        for r in rows
    )
    ref = rows[0].reference
    return head + body + f"\nAgainst `{ref}`; [{level}% bootstrap intervals over items]."
