"""Labels: what one source says about one item, and how two sources meet."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import model_validator

from tinyjudge.errors import UsageError

from ._items import _Record

__all__ = ["Status", "Hint", "Label", "index_labels", "is_scored", "SourceJoin", "join_sources"]

Status = Literal["ok", "unscored"]


class Hint(_Record):
    """Textual feedback for the agent at a given step of its trajectory."""

    step: int | None = None
    text: str


class Label(_Record):
    """What one source says about one item under one rubric.

    ``status="unscored"`` keeps the raw output and the reason when no label
    could be read; it is never coerced into a class and never dropped.
    For pairwise items, ``orders`` holds the verdict of each presentation order
    (mapped back to the original positions) and ``consistent`` whether they agree.
    ``step`` is the trajectory step a verdict points at (e.g. the first mistake).
    ``decided_by`` names the source that decided a combined source's label (a
    cascade's ``rm:...`` or ``judge:...`` stage); ``None`` for a plain source.
    On an ``ok`` label, ``reason`` (when set) notes a doubt about it, such as a
    judge answer that held a second, different verdict (``ambiguous: ...``).
    """

    item_id: str
    rubric: str
    rubric_hash: str | None = None
    source: str
    status: Status = "ok"
    label: str | None = None
    probs: dict[str, float] | None = None
    score: float | None = None
    step: int | None = None
    rationale: str | None = None
    hint: Hint | None = None
    orders: dict[str, str | None] | None = None
    consistent: bool | None = None
    raw: Any = None
    reason: str | None = None
    usage: dict[str, Any] | None = None
    decided_by: str | None = None

    @model_validator(mode="after")
    def _check_status(self) -> Label:
        if not self.source:
            raise ValueError('"source" must not be empty')
        if self.status == "ok" and self.label is None and self.score is None:
            raise ValueError('an "ok" label needs "label" or "score"')
        if self.status == "unscored":
            if self.label is not None:
                raise ValueError('an "unscored" label must not carry "label"')
            if not self.reason:
                raise ValueError('an "unscored" label needs a "reason"')
        if self.probs is not None:
            # a sum of 1 alone lets {"a": 1.5, "b": -0.5} through, and NaN compares false;
            # the slack is for float32 models whose renormalised top class reads 1.0000001
            for name, p in self.probs.items():
                if not -1e-6 <= p <= 1.0 + 1e-6:
                    raise ValueError(f'"probs["{name}"]" is {p}, not in [0, 1]')
            total = sum(self.probs.values())
            if self.probs and abs(total - 1.0) > 1e-3:
                raise ValueError(f'"probs" must sum to 1, got {total:.4f}')
        return self


def index_labels(labels: Iterable[Label], rubric: str | None = None) -> dict[str, dict[str, Label]]:
    """``{source: {item_id: label}}``; a later label for the same item and source wins.

    Raises:
        TinyjudgeError: the labels mix rubrics and no ``rubric`` was chosen, since
            a source's verdicts under two rubrics are not one rater's ratings.
    """
    out: dict[str, dict[str, Label]] = {}
    rubrics: dict[str, set[str]] = {}
    for lab in labels:
        if rubric is not None and lab.rubric != rubric:
            continue
        rubrics.setdefault(lab.source, set()).add(lab.rubric)
        out.setdefault(lab.source, {})[lab.item_id] = lab
    mixed = {s: sorted(r) for s, r in rubrics.items() if len(r) > 1}
    if mixed:
        source, names = next(iter(mixed.items()))
        raise UsageError(
            f"source {source!r} has labels under several rubrics {names}; "
            "choose one with rubric=...",
            param="rubric",
        )
    return out


def is_scored(label: Label) -> bool:
    """Whether a label is ``ok`` (the default test of :func:`join_sources`)."""
    return label.status == "ok"


@dataclass(frozen=True)
class SourceJoin:
    """Two sources' labels lined up by item, with what was left out and why.

    "Scored" means the join's ``usable`` test passed (by default: ``ok``); the
    others are counted here, never turned into a class and never dropped unseen.

    Attributes:
        a: the first source, e.g. ``human:final``.
        b: the second source, e.g. ``judge:gpt-4``.
        pairs: ``(a's label, b's label)`` on the items both scored, in a's order.
        scored_a: a's scored labels by item, on every item (b's or not), in a's order.
        scored_b: the same for b, in b's order.
        n_a: items a labelled, scored or not.
        n_b: items b labelled, scored or not.
        unscored_a: items both labelled where a's label is not scored.
        unscored_b: the same for b (an item unscored by both counts in both).
        n_unscored: items both labelled where at least one label is not scored.
        only_a: items a labelled (scored or not) that b did not label at all.
        only_b: items b labelled that a did not.
    """

    a: str
    b: str
    pairs: list[tuple[Label, Label]]
    scored_a: dict[str, Label]
    scored_b: dict[str, Label]
    n_a: int
    n_b: int
    unscored_a: int
    unscored_b: int
    n_unscored: int
    only_a: int
    only_b: int

    @property
    def item_ids(self) -> list[str]:
        """The items both sources scored, in a's order."""
        return [x.item_id for x, _ in self.pairs]

    @property
    def n(self) -> int:
        """Items both sources scored."""
        return len(self.pairs)

    @property
    def left_out_a(self) -> int:
        """a's labels that are not scored, on any item."""
        return self.n_a - len(self.scored_a)

    @property
    def left_out_b(self) -> int:
        """b's labels that are not scored, on any item."""
        return self.n_b - len(self.scored_b)


def join_sources(
    labels: Iterable[Label] | dict[str, dict[str, Label]],
    a: str,
    b: str,
    *,
    rubric: str | None = None,
    usable: Callable[[Label], bool] = is_scored,
) -> SourceJoin:
    """Join two label sources by item, counting what is unscored or missing on each side.

    Args:
        labels: Label records (any mix of sources), or the output of :func:`index_labels`.
        a: the first source.
        b: the second source.
        rubric: keep only labels under this rubric (when ``labels`` are records).
        usable: whether a label counts as scored for this join, e.g. one that
            has a ``score`` when scores are compared (default: :func:`is_scored`).

    Raises:
        TinyjudgeError: a source has no labels at all (the message lists the
            sources present), or the labels mix rubrics and none was chosen.

    >>> labs = [Label(item_id="1", rubric="r", source=s, label="x") for s in ("p", "q")]
    >>> join_sources(labs, "p", "q").n
    1
    """
    by_source = labels if isinstance(labels, dict) else index_labels(labels, rubric)
    missing = [s for s in (a, b) if s not in by_source]
    if missing:
        raise UsageError(
            f"no labels from source {missing[0]!r}; sources present: {sorted(by_source)}",
            param="labels",
        )
    la, lb = by_source[a], by_source[b]
    scored_a = {i: lab for i, lab in la.items() if usable(lab)}
    scored_b = {i: lab for i, lab in lb.items() if usable(lab)}
    pairs: list[tuple[Label, Label]] = []
    un_a = un_b = un_any = 0
    for item_id, x in la.items():
        y = lb.get(item_id)
        if y is None:
            continue
        ok_a, ok_b = item_id in scored_a, item_id in scored_b
        un_a += not ok_a
        un_b += not ok_b
        if ok_a and ok_b:
            pairs.append((x, y))
        else:
            un_any += 1
    only_a = sum(1 for i in la if i not in lb)
    only_b = sum(1 for i in lb if i not in la)
    return SourceJoin(
        a, b, pairs, scored_a, scored_b, len(la), len(lb), un_a, un_b, un_any, only_a, only_b
    )
