"""The cascade's options and its typed result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError
from tinyjudge.judge import JudgeConfig
from tinyjudge.records import Label
from tinyjudge.results import Interval, Printed, fields_dict

from ._bound import MIN_GROUPS, ThresholdChoice

__all__ = ["CascadeConfig", "StageResult", "CascadeResult"]


@dataclass
class CascadeConfig(Config):
    """Options of :func:`~tinyjudge.cascade.cascade`.

    Without ``judge`` the escalated items are written ``unscored`` (reason
    ``escalated``), ready for the labelling page. ``judge`` is any kind of judge
    (an endpoint, a replay, a local model, a panel), opened with
    :func:`~tinyjudge.judge.open_judge`; its ``timeout`` and ``max_retries`` bound
    each call, and its cache makes a re-run resume.
    """

    target: float = option(0.95, "agreement to guarantee on kept items", low=0.5, high=0.999)
    delta: float = option(0.1, "chance that the guarantee fails", low=0.001, high=0.5)
    step: float = option(
        0.02, "share of calibration items added between two threshold tests", low=0.001, high=0.5
    )
    judge: JudgeConfig | None = option(None, "the judge of the escalated items")
    rubric: str | None = option(None, "the judge's rubric (default: the reward model's)")
    stage: str | None = option(
        None, "people source against which the judge is a second thresholded stage"
    )
    group_by: str | None = option(
        None,
        "item key of dependent items (e.g. metadata.dialogue_id), the guarantee's unit; "
        "default: the first prompt, question or dialogue key every calibration item has",
    )
    bound: Literal["cluster", "exact"] = option(
        "cluster",
        "with groups: cluster (Korn-Graubard over groups) or exact (one random item per group)",
    )
    min_groups: int = option(
        MIN_GROUPS, "fewest groups the cluster bound rests on", low=2, high=1_000_000
    )
    seed: int = option(0, "which item of each group the exact bound reads", low=0, high=2**31)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.judge is None and self.rubric is not None:
            raise UsageError("rubric needs a judge; pass judge too", "rubric", also=("judge",))


@dataclass
class StageResult:
    """One thresholded stage: who decides, against whom, and what it kept.

    Attributes:
        decided_by: the stage's source (``rm:...`` or ``judge:...``).
        reference: the source its threshold was tested against.
        threshold: the confidence it keeps items at (``None``: it keeps none).
        calibration_n: calibration items the threshold was chosen on.
        calibration_agreement: agreement on the calibration items it keeps, with
            the exact two-sided ``1 - delta`` interval.
        lower_bound: the one-sided bound that passed the test (``None`` if none did).
        reached: reported items that reached this stage.
        kept: of those, the items it labelled.
        choice: every threshold tested.
    """

    decided_by: str
    reference: str
    threshold: float | None
    calibration_n: int
    calibration_agreement: Interval
    lower_bound: float | None
    reached: int
    kept: int
    choice: ThresholdChoice

    @property
    def guaranteed(self) -> bool:
        """Whether a threshold passed its test."""
        return self.threshold is not None

    @property
    def share_kept(self) -> float:
        """Share of the items reaching this stage that it labelled."""
        return self.kept / self.reached if self.reached else math.nan

    def unmet(self, target: float) -> str:
        """Why no threshold was kept, in one clause (the first test that failed)."""
        c = self.choice
        if c.too_few_groups:
            return (
                f"target {target} not met: the calibration items come from {c.n_groups} "
                "groups, too few for the cluster bound"
            )
        if not c.steps:
            unit = "groups" if c.bound == "exact" else "items"
            return (
                f"target {target} not met: {c.n_used} calibration {unit} cannot reach it "
                f"at delta {c.delta} even if all agree"
            )
        first = c.steps[0]
        unit = "calibration items (one per group)" if c.bound == "exact" else "calibration items"
        return (
            f"target {target} not met vs {self.reference}: its most confident "
            f"{first.n} {unit} agree {first.agree}/{first.n}, lower bound "
            f"{first.lower:.3f} < {target}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields but ``choice``, then what follows from them and the
        thresholds tested (``tests``)."""
        choice = self.choice.to_dict()
        out = fields_dict(self, skip=("choice",)) | {
            "guaranteed": self.guaranteed,
            "calibration_kept": self.choice.chosen.n if self.choice.chosen else 0,
            "share_kept": None if math.isnan(self.share_kept) else self.share_kept,
            **{k: choice[k] for k in ("bound", "n_groups", "n_used", "too_few_groups")},
            "tests": choice["tests"],
        }
        if not self.guaranteed:  # no kept items, no agreement: null, never NaN in JSON
            out["calibration_agreement"] = None
        return out


@dataclass(repr=False)
class CascadeResult(Printed):
    """What :func:`~tinyjudge.cascade.cascade` decided, and at what cost.

    It prints as :meth:`lines` (and a table of its stages in Jupyter), never its labels.

    Attributes:
        labels: one label per reported item (calibration items are never among them),
            source :attr:`source`, each with ``decided_by`` when scored.
        source: ``cascade:<model>><judge>`` (``>people`` without a judge).
        target: the agreement guaranteed on kept items.
        delta: the chance that the guarantee fails.
        guaranteed: whether the first stage could guarantee the target at all.
        note: one line saying what happened when it could not ("" otherwise).
        n_items: reported items.
        n_calibration: calibration items (held out of the report).
        stages: the thresholded stages, cheapest first.
        escalated: items the reward model passed on.
        abstained: items left to people (unscored, reason ``abstained`` or ``escalated``).
        judge_calls: calls the judge made for reported items (cache hits excluded).
        judge_items: reported items the judge was asked about (escalated ones only).
        calibration_judge_items: calibration items the judge was asked about (second stage).
        cost: the judge's cost in this run (``None`` without prices).
        group_by: the item key whose groups are the guarantee's unit (``None``: items).
        grouping: one line saying which key and bound the guarantee rests on.
    """

    labels: list[Label]
    source: str
    target: float
    delta: float
    guaranteed: bool
    note: str
    n_items: int
    n_calibration: int
    stages: list[StageResult]
    escalated: int
    abstained: int
    judge_calls: int = 0
    judge_items: int = 0
    calibration_judge_items: int = 0
    cost: float | None = None
    judge: dict[str, Any] = field(default_factory=dict)
    group_by: str | None = None
    grouping: str = ""

    @property
    def judge_items_per_1000(self) -> float:
        """Judge verdicts needed per 1,000 items (judge-only: 1,000)."""
        return 1000.0 * self.escalated / self.n_items if self.n_items else math.nan

    @property
    def cost_per_1000(self) -> tuple[float, float] | None:
        """``(cascade, judge-only)`` judge cost per 1,000 items, from this run's prices."""
        if self.cost is None or not self.judge_items:
            return None
        per_item = self.cost / self.judge_items
        return (per_item * self.judge_items_per_1000, per_item * 1000.0)

    def lines(self) -> list[str]:
        """A short printable summary."""
        out = [f"{self.n_items} items ({self.n_calibration} calibration items held out)"]
        if self.grouping:
            out.append(self.grouping)
        if self.note:
            out.append(self.note)
        for s in self.stages:
            kept = f"{s.kept}/{s.reached}" + (f" ({s.share_kept:.1%})" if s.reached else "")
            if s.threshold is None:  # the first stage's reason is the note above
                why = "no threshold" if s is self.stages[0] and self.note else s.unmet(self.target)
                out.append(f"{s.decided_by}: {why}; kept {kept}")
                continue
            out.append(
                f"{s.decided_by}: threshold {s.threshold:.4f}, kept {kept}; calibration "
                f"agreement {s.calibration_agreement} vs {s.reference}"
            )
        out.append(
            f"escalated {self.escalated}, judge items {self.judge_items}, "
            f"judge calls {self.judge_calls}, left to people {self.abstained}; "
            f"judge verdicts per 1,000 items {self.judge_items_per_1000:.0f} (judge only 1000)"
        )
        return out

    def table(self) -> tuple[list[str], list[list[object]]]:
        """The stages: who decides, against whom, at what threshold, what it kept."""
        columns = ["decided by", "vs", "threshold", "kept", "calibration agreement"]
        rows: list[list[object]] = [
            [
                s.decided_by,
                s.reference,
                "none" if s.threshold is None else f"{s.threshold:.4f}",
                f"{s.kept}/{s.reached}",
                str(s.calibration_agreement),
            ]
            for s in self.stages
        ]
        return columns, rows

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written to ``cascade.json``: the fields but ``labels`` and ``cost``
        (``abstained`` as ``left_to_people``), then the first stage's threshold and what it
        kept, and the judge's items and cost per 1,000 items beside judge-only."""
        first, cost = self.stages[0], self.cost_per_1000
        out = fields_dict(self, rename={"abstained": "left_to_people"}, skip=("labels", "cost"))
        return out | {
            "bound": first.choice.bound,
            "threshold": first.threshold,
            "calibration_n": first.calibration_n,
            "calibration_agreement": (
                first.calibration_agreement.to_dict() if self.guaranteed else None
            ),
            "share_kept": {s.decided_by: s.to_dict()["share_kept"] for s in self.stages},
            "judge_items_per_1000": self.judge_items_per_1000 if self.n_items else None,
            "judge_only_items_per_1000": 1000.0,
            "cost_per_1000": None if cost is None else cost[0],
            "judge_only_cost_per_1000": None if cost is None else cost[1],
        }
