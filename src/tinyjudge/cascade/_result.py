"""The cascade's options and its typed result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError
from tinyjudge.judge import JudgeConfig
from tinyjudge.records import Label
from tinyjudge.results import Interval, fields_dict

from ._bound import ThresholdChoice

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

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the fields but ``choice``, then what follows from them and the
        thresholds tested (``tests``)."""
        return fields_dict(self, skip=("choice",)) | {
            "guaranteed": self.guaranteed,
            "calibration_kept": self.choice.chosen.n if self.choice.chosen else 0,
            "share_kept": None if math.isnan(self.share_kept) else self.share_kept,
            "tests": self.choice.to_dict()["tests"],
        }


@dataclass
class CascadeResult:
    """What :func:`~tinyjudge.cascade.cascade` decided, and at what cost.

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
        if self.note:
            out.append(self.note)
        for s in self.stages:
            kept = f"{s.kept}/{s.reached}" + (f" ({s.share_kept:.1%})" if s.reached else "")
            at = "none" if s.threshold is None else f"{s.threshold:.4f}"
            out.append(
                f"{s.decided_by}: threshold {at}, kept {kept}; calibration agreement "
                f"{s.calibration_agreement} vs {s.reference}"
            )
        out.append(
            f"escalated {self.escalated}, judge items {self.judge_items}, "
            f"judge calls {self.judge_calls}, left to people {self.abstained}; "
            f"judge verdicts per 1,000 items {self.judge_items_per_1000:.0f} (judge only 1000)"
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written to ``cascade.json`` (no labels)."""
        cost = self.cost_per_1000
        return {
            "source": self.source,
            "target": self.target,
            "delta": self.delta,
            "guaranteed": self.guaranteed,
            "note": self.note,
            "threshold": self.stages[0].threshold,
            "calibration_n": self.stages[0].calibration_n,
            "calibration_agreement": self.stages[0].calibration_agreement.to_dict(),
            "n_items": self.n_items,
            "n_calibration": self.n_calibration,
            "share_kept": {s.decided_by: s.to_dict()["share_kept"] for s in self.stages},
            "stages": [s.to_dict() for s in self.stages],
            "escalated": self.escalated,
            "left_to_people": self.abstained,
            "judge_calls": self.judge_calls,
            "judge_items": self.judge_items,
            "calibration_judge_items": self.calibration_judge_items,
            "judge_items_per_1000": self.judge_items_per_1000 if self.n_items else None,
            "judge_only_items_per_1000": 1000.0,
            "cost_per_1000": None if cost is None else cost[0],
            "judge_only_cost_per_1000": None if cost is None else cost[1],
            "judge": self.judge,
        }
