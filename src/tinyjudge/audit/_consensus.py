"""A rater against the final label of the *other* raters (leave one rater out).

``human:final`` is the people's consensus. Compared with it as it stands, a rater
meets a label that holds their own vote, and looks better than they are (on XSTest
the two raters showed 0.84-0.89 against the final label and 0.64-0.69 against each
other). So a row "rater vs ``human:final``" reads a final label made again without
that rater: the majority vote of every other ``human:`` source on each item (a tie
is unscored, as in ``import labels``). With a single other rater it is that rater;
with none, the row has no items.
"""

from __future__ import annotations

import numpy as np

from tinyjudge.datasets.importers._aggregate import majority
from tinyjudge.datasets.importers.label_sheet import FINAL
from tinyjudge.records import Label

__all__ = ["FINAL", "rater_of_final", "other_raters", "final_without"]

Table = dict[str, dict[str, Label]]


def rater_of_final(reference: str, source: str) -> bool:
    """Whether ``source`` is one of the people whose votes ``reference`` holds."""
    return reference == FINAL and source.startswith("human:") and source != FINAL


def other_raters(table: Table, rater: str) -> list[str]:
    """The human rater sources in ``table`` other than ``rater`` (``human:final`` aside)."""
    return sorted(s for s in table if rater_of_final(FINAL, s) and s != rater)


def final_without(table: Table, rater: str, order: list[str]) -> dict[str, Label]:
    """``human:final`` by the majority of every rater but ``rater``, by item.

    Args:
        table: ``{source: {item_id: label}}``.
        rater: the rater left out.
        order: the label names (every label the raters use is among them).
    """
    others = other_raters(table, rater)
    item_ids = sorted({i for s in others for i, lab in table[s].items() if lab.status == "ok"})
    if not item_ids:
        return {}
    row = {i: n for n, i in enumerate(item_ids)}
    votes = np.zeros((len(item_ids), len(others), len(order)))
    for j, source in enumerate(others):
        for i, lab in table[source].items():
            if lab.status == "ok" and lab.label in order:
                votes[row[i], j, order.index(lab.label)] += 1
    shares = majority(votes).probs
    out: dict[str, Label] = {}
    note = f"majority of {', '.join(others)} ({rater} left out)"
    for i, p in zip(item_ids, shares, strict=True):
        top = np.flatnonzero(p >= p.max() - 1e-9)
        rubric = next(table[s][i].rubric for s in others if i in table[s])
        if len(top) > 1:
            tied = ", ".join(order[k] for k in top)
            out[i] = Label(
                item_id=i, rubric=rubric, source=FINAL, status="unscored", reason=f"tie: {tied}"
            )
        else:
            out[i] = Label(
                item_id=i, rubric=rubric, source=FINAL, label=order[int(top[0])], rationale=note
            )
    return out
