"""The audit report as a typed record: the sections of ``report.json``, and the plots.

:class:`AuditReport` is what :func:`~tinyjudge.audit.report.build_report` returns and
what the HTML templates render; :attr:`AuditReport.data` is the JSON written to
``report.json``, section by section in the same order with the same keys.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from tinyjudge.errors import DataError

__all__ = ["AuditReport", "AuditMeta", "SourceSummary", "PairRow", "with_exploit"]

# One comparison of two sources (``a`` against ``b``): ``n``, the unscored and
# one-sided counts, and each statistic with its ``<name>_ci``; JSON-ready.
PairRow = dict[str, Any]


class AuditMeta(TypedDict):
    """What was compared and how: the ``meta`` section."""

    reference: str
    sources: list[str]
    rubrics: list[str]
    labels: list[str]
    ordinal: bool
    group_by: str | None
    slice_by: list[str]
    n_items: int | None
    n_boot: int
    level: float
    seed: int
    created: str


class SourceSummary(TypedDict):
    """One source's labels at a glance: an entry of the ``sources`` section."""

    source: str
    labels: int
    scored: int
    unscored: int
    unscored_reasons: dict[str, int]
    distribution: dict[str, int]
    has_probs: bool
    has_scores: bool


@dataclass(frozen=True)
class AuditReport:
    """Figures for machines (the sections, :attr:`data`) and plots for people (``figures``).

    Attributes:
        meta: the reference, sources, rubric(s), label order and bootstrap settings.
        sources: one :class:`SourceSummary` per source, the reference first.
        pairs: every source against the reference, then each other pair.
        raters: Krippendorff's alpha over groups of several sources.
        slices: ``{key: {value: [pair rows against the reference]}}``.
        calibration: per source with probabilities, its calibration against the reference.
        calibration_notes: why a source's calibration was not measured.
        bias: the bias probes' section.
        estimates: the behaviour rates from each cheap source (``tinyjudge.estimate``).
        figures: PNG bytes by name (``reliability:<source>``), inlined in the HTML page.
        exploit: an exploit audit of a reward model (``tinyjudge exploit``'s
            ``exploit.json``), shown beside the agreement; see :func:`with_exploit`.
    """

    meta: AuditMeta
    sources: list[SourceSummary]
    pairs: list[PairRow]
    raters: list[dict[str, Any]]
    slices: dict[str, dict[str, list[PairRow]]]
    calibration: dict[str, dict[str, Any]]
    calibration_notes: list[str]
    bias: dict[str, Any]
    estimates: dict[str, Any]
    figures: dict[str, bytes] = field(default_factory=dict)
    exploit: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The JSON figures (``report.json``): every section but ``figures``, in order."""
        return {
            "meta": self.meta,
            "sources": self.sources,
            "pairs": self.pairs,
            "raters": self.raters,
            "slices": self.slices,
            "calibration": self.calibration,
            "calibration_notes": self.calibration_notes,
            "bias": self.bias,
            "estimates": self.estimates,
        } | ({"exploit": self.exploit} if self.exploit is not None else {})

    @classmethod
    def from_data(
        cls, data: dict[str, Any], figures: dict[str, bytes] | None = None
    ) -> AuditReport:
        """A report from its JSON figures (a saved ``report.json``) and optional plots."""
        return cls(**data, figures=dict(figures or {}))

    def to_json(self) -> str:
        """``report.json``'s text: indented, non-ASCII kept, NaN refused."""
        return json.dumps(self.data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# what an exploit.json holds at least (tinyjudge.exploit's ExploitReport.to_dict)
_EXPLOIT_KEYS = ("model", "rubric", "target", "n_items", "n_elsewhere", "summary", "edits")


def with_exploit(
    report: AuditReport, exploit: dict[str, Any] | str | os.PathLike[str]
) -> AuditReport:
    """The report with an exploit audit's section (the dict, or an ``exploit.json`` path).

    Raises:
        DataError: the file cannot be read, is not JSON, or lacks an exploit audit's keys.
    """
    where = "exploit"
    if not isinstance(exploit, dict):
        where = str(exploit)
        try:
            exploit = json.loads(Path(exploit).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(where, None, f"cannot read the exploit report ({e})") from None
        except json.JSONDecodeError as e:
            raise DataError(where, e.lineno, f"not JSON ({e.msg})") from None
    if not isinstance(exploit, dict):
        raise DataError(where, None, "an exploit report is a JSON object from `tinyjudge exploit`")
    missing = [k for k in _EXPLOIT_KEYS if k not in exploit]
    if missing:
        raise DataError(
            where, None, f"not an exploit report from `tinyjudge exploit`: no {missing[0]!r}"
        )
    return replace(report, exploit=exploit)
