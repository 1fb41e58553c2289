"""The ways distill joins people's labels to a judge's: one table, read by every layer.

``distill``'s ``people_targets`` checks a method against it, the model card
describes the method from it and the CLI lists it. It imports nothing, so
the command table stays light.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "PeopleMethod", "PEOPLE_METHODS", "DEFAULT_PEOPLE_METHOD", "AUTO_MIN_PEOPLE", "READS_JUDGE",
    "even_weight",
]  # fmt: skip

AUTO_MIN_PEOPLE = 100  # person-labelled items from which ``auto`` is ``people``


class PeopleMethod(NamedTuple):
    """How one method joins people's labels to the judge's, in words.

    Attributes:
        brief: a few words for a list of choices (the CLI's help).
        card: the model card's sentence; ``{weight}`` is a person's row in judge rows.
    """

    brief: str
    card: str


# ``auto`` resolves before training, so a card names the method it resolved to.
PEOPLE_METHODS: dict[str, PeopleMethod] = {
    "auto": PeopleMethod(
        "chosen by grouped CV on people's rows (linear, probe)",
        "people's labels the target, the judge's a proxy: judge, people, stacked or "
        "weighted head, chosen by grouped cross-validation on people's rows and "
        "calibrated out of fold (a tier without a linear head: people from "
        f"{AUTO_MIN_PEOPLE} human labels, else weighted)",
    ),
    "people": PeopleMethod(
        "people's labels only",
        "the head learns from people's labels only, the text features from every item",
    ),
    "weighted": PeopleMethod(
        "a person's label where there is one, weighted",
        "a person's label where there is one, else the judge's; each person's "
        "row weighs {weight:.3g} judge rows",
    ),
    "posterior": PeopleMethod(
        "P(person | judge) where people gave none",
        "a person's label where there is one; elsewhere P(person | judge's "
        "label) from the judge's confusion matrix against people",
    ),
    "forward": PeopleMethod(
        "forward loss correction",
        "forward loss correction by the judge's confusion matrix against people "
        "(EM on soft targets)",
    ),
    "dawid-skene": PeopleMethod(
        "Dawid-Skene over the judge and the raters",
        "Dawid-Skene soft targets over the judge and the raters",
    ),
}
DEFAULT_PEOPLE_METHOD = "auto"

# ``auto``'s candidates whose head already reads the judge's outputs as features (``stack``:
# the judge head's logits): the model's probabilities already hold the judge's errors, so
# ``label --select teach`` takes its doubt alone instead of adding the judge's confusion.
READS_JUDGE = frozenset({"stack"})


def even_weight(n_judge_only: int, n_people: int) -> float:
    """The ``weighted`` method's default weight of a person's row, in judge rows: people's
    rows weigh as much as the judge-only rows together, and a person's row never less than
    one judge row. ``people_targets`` and ``auto``'s weighted candidate both use it.

    >>> even_weight(400, 100), even_weight(20, 100)
    (4.0, 1.0)
    """
    return max(1.0, n_judge_only / n_people)
