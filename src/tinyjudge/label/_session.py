"""One reviewer's labelling session: the items, the rubric, the store, the next item.

:func:`open_session` loads and checks everything at start, so a user's mistake is
refused before the server binds a port.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tinyjudge._people_methods import READS_JUDGE
from tinyjudge.datasets.jsonl import read_items, read_labels
from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from ._progress import agreement, rate_estimate
from .select import SelectMode, Selector, cheap_scores, teach_values
from .store import LabelStore, check_reviewer

__all__ = ["LabelSession", "open_session"]


@dataclass
class LabelSession:
    """Everything one reviewer's server needs: items, rubric, store, selector, labels."""

    items: dict[str, Item]
    item_ids: list[str]
    rubric: Rubric
    reviewer: str
    store: LabelStore
    selector: Selector
    labels: list[Label]
    cheap_source: str | None
    budget: int | None = None
    note: str | None = None  # how the order was made, when it differs from the usual
    by_item: dict[str, list[Label]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Indexed once, so a page costs the same with a million machine labels.
        for lab in self.labels:
            self.by_item.setdefault(lab.item_id, []).append(lab)

    def machine_labels(self, item_ids: Iterable[str]) -> list[Label]:
        """What the judges, reward models and classifiers said about these items."""
        return [lab for i in item_ids for lab in self.by_item.get(i, [])]

    # -- state -----------------------------------------------------------------------------
    def my_answers(self) -> dict[str, str]:
        """item id -> label, of this reviewer's live labels (skips excluded)."""
        return {
            a.item_id: a.label
            for a in self.store.answers(self.reviewer)
            if a.kind == "label" and a.label is not None
        }

    def done(self) -> bool:
        return self.budget is not None and len(self.my_answers()) >= self.budget

    def current(self) -> str | None:
        """The item to show: the assigned one, or the selector's next (then assigned)."""

        def choose(finished: set[str]) -> tuple[str, str | None] | None:
            return None if self.done() else self.selector.next_item(finished)

        return self.store.current_or_next(self.reviewer, choose, self.items.__contains__)

    def progress(self) -> dict[str, Any]:
        answers = self.store.answers(self.reviewer)
        mine = self.my_answers()
        cheap = self.selector.cheap
        # active selection samples cheap-score bins unevenly: only the stratified
        # estimate stays unbiased then
        method: Literal["ppi++", "stratified"] = (
            "stratified" if self.selector.mode == "active" else "ppi++"
        )
        # teach order is chosen for the model, not sampled: no rate estimate holds
        est = (
            None
            if self.selector.mode == "teach"
            else rate_estimate(self.rubric, self.item_ids, mine, cheap, method)
        )
        return {
            "labelled": len(mine),
            "skipped": sum(a.kind == "skip" for a in answers),
            "budget": self.budget,
            "total": len(self.item_ids),
            "select": self.selector.mode,
            "cheap_source": self.cheap_source,
            "note": self.note,
            "positive": self.rubric.positive,
            "rate": est.to_dict() if est else None,
            "agreement": [
                a._asdict() for a in agreement(self.machine_labels(mine), self.rubric, mine)
            ],
        }


def open_session(
    items: str | os.PathLike[str],
    rubric: str | Rubric,
    labels: str | os.PathLike[str],
    reviewer: str,
    select: SelectMode | None = None,
    budget: int | None = None,
    cheap: str | None = None,
) -> LabelSession:
    """Load items, rubric and labels, open the store and check everything fits.

    Args:
        items: the items JSONL file.
        rubric: a built-in rubric name, a YAML path or a :class:`Rubric`.
        labels: the labels JSONL file (created when absent); answers are exported to it.
        reviewer: the reviewer's name; answers get the source ``human:<reviewer>``.
        select: ``active``, ``random``, ``sequential`` or ``teach`` (the item where people
            would most likely overturn the judge, from an ``rm:`` source's probs, ``cheap``
            names it, and the judge's confusion against the ``human:`` labels in the file
            when the page opens); by default ``active`` when a cheap source exists, else
            ``random``.
        budget: stop after this many labels by this reviewer.
        cheap: the judge or reward-model source that drives active selection.

    Raises:
        TinyjudgeError: a bad file, name, option, or an item the rubric cannot label.
    """
    check_reviewer(reviewer)
    rub = load_rubric(rubric)
    if rub.type == "step":
        raise UsageError(
            f"rubric {rub.id!r} is a step rubric (a verdict names a step and an agent); the "
            "labelling page supports nominal, ordinal and pairwise rubrics",
        )
    if budget is not None and budget < 1:
        raise UsageError(f"budget must be at least 1, got {budget}", param="budget")
    all_items = read_items(items)
    if not all_items:
        raise DataError(str(items), None, "no items")
    by_id: dict[str, Item] = {}
    for it in all_items:
        if it.id in by_id:
            raise DataError(
                str(items), None, f"item id {it.id!r} appears twice; ids must be unique"
            )
        if it.is_pairwise != (rub.type == "pairwise"):
            kind = "pairwise" if it.is_pairwise else "single"
            raise DataError(
                str(items),
                None,
                f"item {it.id!r} is a {kind} item but rubric {rub.id!r} is {rub.type}",
            )
        by_id[it.id] = it
    labels_path = Path(labels)
    store = LabelStore(labels_path, rub)
    try:
        # A torn last line (a crash or a full disk mid-write) is cut off before it is read:
        # the store holds every answer, and the export below writes them back.
        store.mend()
        session = _session(by_id, rub, reviewer, store, labels_path, select, budget, cheap)
    except BaseException:
        store.close()
        raise
    store.export()  # repairs a file that disagrees with the store (a crash, a hand edit)
    return session


def _session(
    by_id: dict[str, Item],
    rub: Rubric,
    reviewer: str,
    store: LabelStore,
    labels_path: Path,
    select: SelectMode | None,
    budget: int | None,
    cheap: str | None,
) -> LabelSession:
    # Labels of this rubric, the latest per source and item as in `tinyjudge audit`; the
    # machine's are shown and order the items, people's only teach where the judge errs.
    latest: dict[tuple[str, str], Label] = {}
    for lab in read_labels(labels_path) if labels_path.exists() else []:
        if lab.rubric == rub.id:
            latest.pop((lab.source, lab.item_id), None)
            latest[(lab.source, lab.item_id)] = lab
    machine = [lab for lab in latest.values() if not lab.source.startswith("human:")]
    ids = list(by_id)
    source: str | None  # the machine source that orders the items (teach always has one)
    note = None
    if select == "teach":
        source, judge, values = teach_values(list(latest.values()), rub, ids, cheap)
        method = _people_method(labels_path, source)
        if method in READS_JUDGE and judge is not None:
            note = (
                f"{source}'s head read the judge's outputs (people method {method}): "
                f"teach orders by its doubt of {judge} alone, without the judge's confusion "
                "against people"
            )
            values = teach_values(list(latest.values()), rub, ids, source, reads_judge=True)[2]
        selector = Selector(ids, "teach", teach=values)
    else:
        source, scores = cheap_scores(machine, rub, ids, cheap)
        mode: SelectMode = select or ("active" if source else "random")
        selector = Selector(ids, mode, scores if source else None)
    foreign = store.foreign_labels(reviewer)
    if foreign:
        raise UsageError(
            f"{labels_path} already holds {foreign} labels from human:{reviewer} for rubric "
            f"{rub.id!r} that were not made on this page; choose another reviewer name",
            param="reviewer",
        )
    store.register(reviewer)
    return LabelSession(
        by_id, ids, rub, reviewer, store, selector, machine, source, budget, note
    )  # fmt: skip


def _people_method(labels_path: Path, source: str) -> str | None:
    """The people method of the model that wrote ``source``'s labels, from the file ``score``
    wrote beside the labels file (None without one, or for another source)."""
    from tinyjudge._people_items import read_sidecars

    found = [lf for lf in read_sidecars([labels_path]) if lf.source == source]
    return found[0].people_method if found else None
