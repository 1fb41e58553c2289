"""RL rollouts as items, and the reward of a label: what the server and the RL adapters share.

Nothing here needs FastAPI, so ``tinyjudge.integrations`` computes the same
rewards as the server in-process.
"""

from __future__ import annotations

from typing import Any, Protocol

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label, Message

from ._templates import canonical, parse_chat_text

__all__ = [
    "Scorer",
    "query_to_item",
    "rollout_to_item",
    "reward_labels_for",
    "reward_of",
    "describe_reward",
]


class Scorer(Protocol):
    """What the server needs of a reward model (any distilled tier qualifies)."""

    name: str

    def score_items(self, items: list[Item]) -> list[Label]: ...


def query_to_item(query: str, prompt: str | None, index: int) -> Item:
    """Turn an RL rollout's text into an item: the prompt as user turn when it is known."""
    if prompt and query.startswith(prompt):
        messages = [
            Message(role="user", content=prompt),
            Message(role="assistant", content=query[len(prompt) :]),
        ]
    else:
        messages = [Message(role="assistant", content=query)]
    return Item(id=f"query:{index}", messages=messages)


def rollout_to_item(
    query: str | list[dict[str, Any]],
    prompt: str | list[dict[str, Any]] | None,
    index: int,
    chat_template: str | None = None,
) -> Item:
    """An RL rollout as an item, the same whether it came as messages or as template text.

    Messages are read as the importer reads them. Text in a known chat
    template (or ``chat_template``) is turned back into its messages; other
    text falls back to :func:`query_to_item`.

    Raises:
        pydantic.ValidationError: messages that are not messages.
    """
    if isinstance(query, list):
        return Item.model_validate({"id": f"query:{index}", "messages": canonical(query)})
    messages = parse_chat_text(query, chat_template)
    if messages:
        return Item.model_validate({"id": f"query:{index}", "messages": messages})
    return query_to_item(query, prompt if isinstance(prompt, str) else None, index)


def reward_labels_for(model: Scorer, labels: list[str] | None = None) -> list[str] | None:
    """The labels whose summed probability is the reward (default: the rubric's ``positive``).

    A label may be spelled as people write it (``"pushes back"``, ``"Pushes-Back"``),
    read as ``import labels`` reads a sheet's labels.

    Returns None when the model has no rubric to say (the reward is then each
    label's ``score``, else the probability of its label).

    Raises:
        TinyjudgeError: a label the model's rubric does not have, naming those it has.
    """
    from tinyjudge.datasets.importers.label_sheet import match_label

    rubric = getattr(model, "rubric", None)
    if rubric is None:
        if labels:
            raise TinyjudgeError(f"reward labels {labels}: model {model.name} has no rubric")
        return None
    if not labels:
        return list(rubric.positive) or None
    named = [match_label(lab, rubric) for lab in labels]
    unknown = [lab for lab in named if lab not in rubric.label_names]
    if unknown:
        raise TinyjudgeError(
            f"reward labels {unknown} not among the labels of rubric "
            f"{rubric.id}: {rubric.label_names}"
        )
    return named


def describe_reward(model: Scorer, labels: list[str] | None) -> str:
    """One line saying what the reward is, for the server's start and the README."""
    rubric = getattr(model, "rubric", None)
    if not labels or rubric is None:
        return f"reward: each label's score from {model.name}"
    which = " + ".join(f"P({name})" for name in labels)
    default = " (the rubric's positive labels)" if labels == list(rubric.positive) else ""
    return f"reward: {which} under rubric {rubric.id}{default}, in [0, 1]"


def reward_of(label: Label, labels: list[str] | None = None) -> float:
    """The scalar reward of a label: the probability of ``labels``, else its score,
    else the probability of its label."""
    if labels and label.probs is not None:
        return float(sum(label.probs.get(name, 0.0) for name in labels))
    if label.score is not None:
        return float(label.score)
    if label.probs and label.label is not None:
        return float(label.probs[label.label])
    return float("nan")
