"""Line up what two label sources said about the same items.

Only items where both sources gave a scored label are compared; items where
either is unscored are counted (never turned into a class, never silently dropped).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

from tinyjudge.errors import UsageError
from tinyjudge.records import Label, SourceJoin, index_labels, join_sources

__all__ = [
    "PairedLabels",
    "source_table",
    "pair_labels",
    "ratings_matrix",
    "label_value",
]

Value = Literal["label", "score"]


class PairedLabels(NamedTuple):
    """Two sources' values on the items both scored, plus what was left out and why.

    Attributes:
        item_ids: the items both sources scored, in the order of the first source's labels.
        a: source a's values on those items.
        b: source b's values on those items.
        join: the join they come from (:class:`~tinyjudge.records.SourceJoin`): what
            was left out, ``join.unscored_a``, ``join.unscored_b``, ``join.n_unscored``
            (either unscored), ``join.only_a`` and ``join.only_b`` (not labelled by the other).
    """

    item_ids: list[str]
    a: list[Any]
    b: list[Any]
    join: SourceJoin

    @property
    def n(self) -> int:
        """Items where both sources gave a scored label."""
        return len(self.item_ids)


def label_value(label: Label, value: Value = "label") -> Any:
    """The compared value of a scored label: its class, or its score."""
    return label.label if value == "label" else label.score


def source_table(
    labels: Iterable[Label] | dict[str, dict[str, Label]],
    sources: Sequence[str],
    rubric: str | None = None,
) -> dict[str, dict[str, Label]]:
    """:func:`index_labels` (unless ``labels`` already is its output), checking ``sources``.

    Raises:
        TinyjudgeError: one of ``sources`` has no labels (the message lists those present).
    """
    by_source = labels if isinstance(labels, dict) else index_labels(labels, rubric)
    missing = [s for s in sources if s not in by_source]
    if missing:
        raise UsageError(
            f"no labels from source {missing[0]!r}; sources present: {sorted(by_source)}"
        )
    return by_source


def _usable(label: Label, value: Value) -> bool:
    return label.status == "ok" and label_value(label, value) is not None


def pair_labels(
    labels: Iterable[Label] | dict[str, dict[str, Label]],
    a: str,
    b: str,
    *,
    rubric: str | None = None,
    value: Value = "label",
) -> PairedLabels:
    """Pair two sources' labels by item (:func:`~tinyjudge.records.join_sources`'s values).

    Args:
        labels: Label records (any mix of sources), or the output of :func:`index_labels`.
        a: the first source, e.g. ``"human:final"``.
        b: the second source, e.g. ``"judge:gpt-4"``.
        rubric: keep only labels under this rubric.
        value: compare the ``label`` (class) or the ``score``. A scored label
            without that field counts as unscored for this comparison.

    Raises:
        TinyjudgeError: a source has no labels at all (the message lists the sources present).
    """
    by_source = source_table(labels, (a, b), rubric)
    j = join_sources(by_source, a, b, usable=lambda lab: _usable(lab, value))
    return PairedLabels(
        j.item_ids,
        [label_value(x, value) for x, _ in j.pairs],
        [label_value(y, value) for _, y in j.pairs],
        j,
    )


def ratings_matrix(
    labels: Iterable[Label] | dict[str, dict[str, Label]],
    sources: Sequence[str],
    *,
    rubric: str | None = None,
    value: Value = "label",
) -> tuple[list[str], list[list[Any]]]:
    """A sources x items matrix for Krippendorff's alpha; None where a source gave no scored label.

    Returns:
        ``(item_ids, rows)`` with one row per source, in the order of ``sources``.
    """
    by_source = source_table(labels, sources, rubric)
    item_ids = list(dict.fromkeys(i for s in sources for i in by_source[s]))
    rows = []
    for s in sources:
        got = by_source[s]
        rows.append(
            [
                label_value(got[i], value) if i in got and _usable(got[i], value) else None
                for i in item_ids
            ]
        )
    return item_ids, rows
