"""People's labels from a sheet: ``tinyjudge import labels PATH --rubric R --out FILE``.

A sheet is CSV, JSONL or Parquet with one row per (item, rater) judgment (long
form, ``--rater-field``) or one row per item and one column per rater (wide
form, several ``--label-field`` columns). Each judgment becomes a
``human:<rater>`` label, and each item gets a ``human:final`` label: the
majority (a tie is ``unscored`` with its reason), or Dawid-Skene's estimate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from tinyjudge.errors import DataError, RubricError, UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from ._common import SkipBad
from ._rows import read_rows

__all__ = ["LabelImport", "import_labels", "label_text", "match_label", "final_labels"]

Method = Literal["majority", "dawid-skene"]
FINAL = "human:final"


class _FinalFields(TypedDict):
    """The fields every ``human:final`` label of one item shares."""

    item_id: str
    rubric: str
    rubric_hash: str
    source: str


@dataclass
class LabelImport:
    """What :func:`import_labels` read.

    Attributes:
        labels: the raters' labels, then one ``human:final`` label per item.
        raters: labels per rater source.
        bad: rows skipped (with ``skip_bad``).
        empty: rows with no label in them (skipped; not an error).
        unmatched: item ids that match no item of ``items`` (when given).
        ties: items whose ``human:final`` is unscored for a tie.
    """

    labels: list[Label] = field(default_factory=list)
    raters: dict[str, int] = field(default_factory=dict)
    bad: list[DataError] = field(default_factory=list)
    empty: int = 0
    unmatched: list[str] = field(default_factory=list)
    ties: int = 0


def label_text(value: Any) -> str | None:
    """A cell as label text: None for an empty cell; ``1.0`` read as ``1``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def match_label(text: str, rubric: Rubric) -> str:
    """The rubric's label that ``text`` spells (case, spaces and hyphens aside), else ``text``."""
    names = rubric.label_names
    if text in names or rubric.type == "step":
        return text
    key = re.sub(r"[\s\-]+", "_", text.strip().lower())
    return key if key in names else text


def import_labels(
    path: Path,
    rubric: str | Path | Rubric,
    item_field: str,
    label_fields: list[str],
    rater_field: str | None = None,
    items: Iterable[Item] | None = None,
    aggregate: Method = "majority",
    skip_bad: bool = False,
) -> LabelImport:
    """Read a sheet of people's labels into ``human:<rater>`` and ``human:final`` labels.

    Args:
        path: a CSV, TSV, JSONL, JSON or Parquet file (see :func:`read_rows`).
        rubric: the rubric the labels are of (name, path or object).
        item_field: the column with the item id.
        label_fields: the column with the label (long form), or one column
            per rater (wide form: the column name is the rater).
        rater_field: the column naming the rater (long form). Without it and
            with one label column, an item's rows are raters ``1``, ``2``, ...
            in the order they come.
        items: when given, item ids that match none of them are counted in
            ``unmatched`` (their labels are still written).
        aggregate: ``majority`` (ties are unscored) or ``dawid-skene``.
        skip_bad: keep going past bad rows; they are listed in ``bad``.

    Raises:
        DataError: a bad row (``file:line``: a missing column, a label that is
            not the rubric's, naming the allowed ones) when not ``skip_bad``,
            and always the same rater labelling one item twice.
        TinyjudgeError: a bad option (two label columns with a rater column).
    """
    rub = load_rubric(rubric)
    if not label_fields:
        raise UsageError("label_fields names no column", param="label_fields")
    if rater_field is not None and len(label_fields) > 1:
        raise UsageError(
            "label_fields names one column with rater_field (long form), or several without it",
            param="label_fields",
        )
    out = LabelImport()
    seen: dict[tuple[str, str], str] = {}  # (item, source) -> where
    per_item: dict[str, int] = {}

    bad = SkipBad(skip_bad, out.bad)
    for row in read_rows(path, on_error=bad):
        data = row.data
        missing = [c for c in [item_field, *label_fields, rater_field] if c and c not in data]
        item_id = label_text(data.get(item_field))
        if missing or item_id is None:
            what = f"missing column {missing}" if missing else f'empty "{item_field}"'
            bad(DataError(row.where, row.line, f"{what}; found {sorted(data)}"))
            continue
        pending: list[Label] = []
        problem = None
        for column in label_fields:
            text = label_text(data.get(column))
            if text is None:
                continue
            if rater_field is not None:
                rater = label_text(data.get(rater_field))
                if rater is None:
                    problem = f'empty "{rater_field}"'
                    break
            elif len(label_fields) > 1:
                rater = column
            else:
                per_item[item_id] = per_item.get(item_id, 0) + 1
                rater = str(per_item[item_id])
            lab = Label(
                item_id=item_id,
                rubric=rub.id,
                rubric_hash=rub.hash,
                source=f"human:{rater}",
                label=match_label(text, rub),
            )
            if problem := rub.label_problem(lab):
                problem = f"{column}: {problem}"
                break
            pending.append(lab)
        if problem:
            bad(DataError(row.where, row.line, problem))
            continue
        if not pending:
            out.empty += 1
        for lab in pending:
            key = (lab.item_id, lab.source)
            if key in seen:
                raise DataError(
                    row.where,
                    row.line,
                    f'{lab.source} labels item "{lab.item_id}" again, first at {seen[key]}',
                )
            seen[key] = f"{row.where}:{row.line}"
            out.raters[lab.source] = out.raters.get(lab.source, 0) + 1
            out.labels.append(lab)
    finals = final_labels(out.labels, rub, aggregate)
    out.ties = sum(lab.status == "unscored" for lab in finals)
    out.labels += finals
    if items is not None:
        known = {it.id for it in items}
        out.unmatched = sorted({lab.item_id for lab in finals} - known)
    return out


def final_labels(labels: list[Label], rubric: Rubric, method: Method = "majority") -> list[Label]:
    """One ``human:final`` label per item from several raters' labels.

    With ``majority``, ``probs`` holds the vote shares and a tie for the top
    is ``unscored`` (reason: the tied labels and their votes). With
    ``dawid-skene``, ``probs`` is the posterior of the true label.
    """
    from tinyjudge._aggregate import dawid_skene, majority, vote_counts

    if rubric.type == "step":
        raise RubricError(f"rubric {rubric.id} has open step labels; a sheet cannot vote on them")
    names = rubric.label_names
    item_ids = list(dict.fromkeys(lab.item_id for lab in labels if lab.status == "ok"))
    raters = list(dict.fromkeys(lab.source for lab in labels if lab.status == "ok"))
    if not item_ids:
        return []
    said = [(lab.item_id, lab.source, lab.label) for lab in labels if lab.status == "ok"]
    votes = vote_counts([(i, r, k) for i, r, k in said if k], item_ids, raters, names)
    agg = majority(votes) if method == "majority" else dawid_skene(votes)
    source_note = "majority of" if method == "majority" else "Dawid-Skene over"
    out = []
    for item_id, probs, counts in zip(item_ids, agg.probs, votes.sum(axis=1), strict=True):
        dist = {name: float(p) for name, p in zip(names, probs, strict=True)}
        top = [n for n, p in dist.items() if p >= max(dist.values()) - 1e-9]
        n_raters = int(counts.sum())
        base: _FinalFields = {
            "item_id": item_id,
            "rubric": rubric.id,
            "rubric_hash": rubric.hash,
            "source": FINAL,
        }
        if len(top) > 1:
            tally = ", ".join(f"{n} {int(counts[names.index(n)])}" for n in top)
            out.append(Label(**base, status="unscored", probs=dist, reason=f"tie: {tally}"))
            continue
        out.append(
            Label(
                **base,
                label=top[0],
                probs=dist,
                score=rubric.score(dist),
                rationale=f"{source_note} {n_raters} rater{'s' * (n_raters != 1)}",
            )
        )
    return out
