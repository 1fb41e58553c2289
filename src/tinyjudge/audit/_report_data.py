"""The audit report as a typed record: the sections of ``report.json``, and the plots.

:class:`AuditReport` is what :func:`~tinyjudge.audit.report.audit` returns and
what the HTML templates render; :meth:`AuditReport.to_dict` is the JSON written to
``report.json``, section by section in the same order with the same keys. Each
comparison of two sources is a :class:`PairRow`, whose statistics are
:class:`~tinyjudge.results.Interval` values: ``report.pair(a, b).kappa`` prints as
``0.718 [0.548, 0.865]``; in the JSON it is ``"kappa": {"value", "low", "high"}``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from tinyjudge.errors import DataError, UsageError
from tinyjudge.results import Interval, Printed, Result, fields_dict

__all__ = ["AuditReport", "AuditMeta", "SourceSummary", "PairRow", "Confusion", "with_exploit"]

# the counts every row has, in the JSON's order
_COUNTS = ("a", "b", "n", "unscored", "unscored_a", "unscored_b", "only_a", "only_b")
# the statistics written as intervals, in the JSON's order
_STATS = ("accuracy", "kappa", "alpha", "kappa_quadratic", "alpha_ordinal")
# what a row writes only where it has it, after the counts and the first three statistics
_LATER = ("kappa_quadratic", "alpha_ordinal", "n_clusters", "confusion", "spearman", "kendall",
          "n_scores", "reference_without", "reference_of")  # fmt: skip


@dataclass(frozen=True)
class Confusion(Result):
    """Counts of (row source's label, column source's label) over ``labels``, both ways."""

    labels: list[str]
    counts: list[list[int]]


@dataclass(frozen=True)
class PairRow:
    """One comparison of two sources (``a`` against ``b``) on the items both scored.

    Attributes:
        a: the first source (the reference, for a row against it).
        b: the second source.
        n: items both sources gave a scored label.
        unscored: items both labelled where at least one label is unscored.
        unscored_a: of those, the items a left unscored.
        unscored_b: the same for b.
        only_a: items a labelled that b did not label at all.
        only_b: items b labelled that a did not.
        accuracy: share of the ``n`` items with the same label, with its bootstrap interval.
        kappa: Cohen's kappa (nominal), with its interval.
        alpha: Krippendorff's alpha (nominal), with its interval.
        kappa_quadratic: quadratic-weighted kappa, on a scale (an ordered rubric) only.
        alpha_ordinal: ordinal alpha, on a scale only.
        n_clusters: groups the bootstrap resampled (``None`` where ``n`` is 0).
        confusion: the confusion matrix (``None`` where ``n`` is 0).
        spearman: rank correlation of the two sources' scores, where 3 or more items have both.
        kendall: Kendall's tau of the same.
        n_scores: items whose scores were compared (``None``: too few for the correlations).
        reference_without: for a rater that is part of the reference, that rater; the
            reference was then formed without it.
        reference_of: the raters the reference was formed from then.

    A statistic that could not be computed (``n`` is 0) has the value ``nan`` and no bounds.
    """

    a: str
    b: str
    n: int
    unscored: int
    unscored_a: int
    unscored_b: int
    only_a: int
    only_b: int
    accuracy: Interval
    kappa: Interval
    alpha: Interval
    kappa_quadratic: Interval | None = None
    alpha_ordinal: Interval | None = None
    n_clusters: int | None = None
    confusion: Confusion | None = None
    spearman: float | None = None
    kendall: float | None = None
    n_scores: int | None = None
    reference_without: str | None = None
    reference_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row of ``report.json``: each statistic as an interval (``{"value", "low",
        "high"}``), a scale's two only on a scale."""
        out = fields_dict(self, skip=_LATER)
        scale = {name: getattr(self, name) for name in _STATS[3:]}
        out |= {name: got.to_dict() for name, got in scale.items() if got is not None}
        if self.n_clusters is not None:
            out["n_clusters"] = self.n_clusters
        if self.confusion is not None:
            out["confusion"] = self.confusion.to_dict()
        if self.n_scores is not None:
            out |= {"spearman": self.spearman, "kendall": self.kendall, "n_scores": self.n_scores}
        if self.reference_without is not None:
            out |= {"reference_without": self.reference_without, "reference_of": self.reference_of}
        return out

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> PairRow:
        """A saved ``report.json`` row; its intervals in either form (:meth:`Interval.read`)."""
        stats: dict[str, Any] = {s: Interval.read(row, s) for s in _STATS if s in row}
        confusion = Confusion(**row["confusion"]) if "confusion" in row else None
        rest = ("n_clusters", "spearman", "kendall", "n_scores", "reference_without",
                "reference_of")  # fmt: skip
        return cls(
            **{k: row[k] for k in _COUNTS}, **stats, confusion=confusion,
            **{k: row[k] for k in rest if k in row},
        )  # fmt: skip


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


@dataclass(frozen=True, repr=False)
class AuditReport(Printed):
    """Figures for machines (the sections, :meth:`to_dict`) and plots for people (``figures``).

    It prints as :meth:`lines` (the rows against the reference), a table in Jupyter.

    Attributes:
        meta: the reference, sources, rubric(s), label order and bootstrap settings.
        sources: one :class:`SourceSummary` per source, the reference first.
        pairs: every source against the reference, then each other pair; one
            :meth:`pair` finds by its sources.
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

    def pair(self, a: str, b: str) -> PairRow:
        """The row comparing sources ``a`` and ``b``, named in either order.

        Raises:
            UsageError: no row compares the two (the message lists the sources present).
        """
        for row in self.pairs:
            if {row.a, row.b} == {a, b} and a != b:
                return row
        raise UsageError(
            f"no comparison of {a!r} with {b!r} in this report; sources: {self.meta['sources']}",
            param="b" if a in self.meta["sources"] else "a",
        )

    def lines(self) -> list[str]:
        """What was compared, and each source's agreement with the reference."""
        meta = self.meta
        items = "" if meta["n_items"] is None else f"{meta['n_items']} items, "
        out = [
            f"{items}{len(meta['sources'])} sources against {meta['reference']} "
            f"(rubric {', '.join(meta['rubrics'])}); {len(self.pairs)} comparisons"
        ]
        for row in self.pairs:
            if meta["reference"] in (row.a, row.b):
                other = row.b if row.a == meta["reference"] else row.a
                out.append(
                    f"{other}: n {row.n}, accuracy {row.accuracy.shown(bounds=False)}, "
                    f"kappa {row.kappa.shown()}"
                )
        extra = [f"slices by {', '.join(self.slices)}"] if self.slices else []
        extra += [f"calibration of {len(self.calibration)}"] if self.calibration else []
        extra += ["an exploit audit"] if self.exploit is not None else []
        if extra:
            out.append("also: " + ", ".join(extra) + " (report.to_dict() has them all)")
        return out

    def table(self) -> tuple[list[str], list[list[object]]]:
        """Every comparison: the two sources, items, accuracy and kappa with intervals."""
        columns = ["source", "vs", "n", "accuracy", "Cohen's kappa"]
        rows: list[list[object]] = [
            [r.b, r.a, r.n, r.accuracy.shown(bounds=False), r.kappa.shown()] for r in self.pairs
        ]
        return columns, rows

    def to_dict(self) -> dict[str, Any]:
        """The JSON figures (``report.json``): every section but ``figures``, in order."""
        data = fields_dict(self, skip=("figures", "exploit"))
        return data | ({"exploit": self.exploit} if self.exploit is not None else {})

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], figures: dict[str, bytes] | None = None
    ) -> AuditReport:
        """A report from its JSON figures (a saved ``report.json``) and optional plots."""
        rows = PairRow.from_dict
        slices = {
            key: {value: [rows(r) for r in got] for value, got in by_value.items()}
            for key, by_value in data["slices"].items()
        }
        typed = {"pairs": [rows(r) for r in data["pairs"]], "slices": slices}
        return cls(**(data | typed), figures=dict(figures or {}))

    def to_json(self) -> str:
        """``report.json``'s text: indented, non-ASCII kept, NaN refused."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


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
    return replace(report, exploit=_exploit_intervals(exploit))


# an exploit.json written before the one interval form: each rate's bounds beside it, under
# the key's first word and "ci"
_OLD_EXPLOIT = {"flip_to_target": "flip", "mean_shift": "shift"}


def _exploit_intervals(exploit: dict[str, Any]) -> dict[str, Any]:
    """``exploit`` with its edits' and searched phrases' rates as intervals, in whichever
    form its file has them (:meth:`Interval.read`)."""

    def row(r: dict[str, Any]) -> dict[str, Any]:
        old = {k: "_".join((word, "ci")) for k, word in _OLD_EXPLOIT.items()}
        rates = {k: Interval.read(r, k, old[k]).to_dict() for k in old if k in r}
        return {k: v for k, v in r.items() if k not in old.values()} | rates

    out = exploit | {"edits": [row(r) for r in exploit["edits"]]}
    if exploit.get("search"):
        out["search"] = exploit["search"] | {"best": [row(r) for r in exploit["search"]["best"]]}
    return out
