"""The audit stage's config: ``tinyjudge audit``'s flags, one per field."""

from __future__ import annotations

from dataclasses import dataclass

from tinyjudge._stats import check_n_boot
from tinyjudge.calibrate import check_calibration_method
from tinyjudge.config import Config, option

__all__ = ["AuditConfig"]


@dataclass
class AuditConfig(Config):
    """Options of an audit of label sources against a reference (``tinyjudge audit``'s
    flags, one per field).

    >>> AuditConfig(reference="human:final", order=["no,partial", "yes"]).order
    ['no', 'partial', 'yes']
    """

    reference: str = option(help="the source taken as truth, e.g. human:final")
    group_by: str | None = option(
        None, "resample these groups in every interval: an item key, e.g. metadata.prompt_id"
    )
    slice_by: list[str] = option(
        default_factory=list, help="break agreement down by this item key (repeatable)"
    )
    order: list[str] | None = option(
        None, "the label scale in order, comma-separated: adds weighted kappa, ordinal alpha"
    )
    n_boot: int = option(1000, "bootstrap resamples per interval")
    level: float = option(0.95, "coverage of the intervals", low=0.0, high=1.0)
    seed: int = option(0, "bootstrap seed; the same inputs give the same report")
    calibration_method: str = option(
        "temperature", "the calibrator cross-fitted in the calibration section"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_n_boot(self.n_boot)  # 10^9 resamples would not fit in memory
        if self.order is not None:
            scale = [s.strip() for entry in self.order for s in entry.split(",") if s.strip()]
            self.order = scale or None
        check_calibration_method(self.calibration_method, "calibration_method")
