"""RL rollouts as items, and the reward of a label: what the server and the RL adapters share.

Nothing here needs FastAPI, so ``tinyjudge.integrations`` computes the same
rewards as the server in-process.
"""

from __future__ import annotations

from typing import Any, Protocol

from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import (
    Item,
    Label,
    Message,
    Unread,
    canonical,
    read_messages,
    read_transcript,
)

from ._templates import parse_chat_text

__all__ = [
    "Scorer",
    "query_to_item",
    "rollout_to_item",
    "read_rollout",
    "read_item",
    "Rollout",
    "reward_labels_for",
    "reward_of",
    "describe_reward",
    "refuse_blind",
    "metadata_of",
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


# A rollout: template text, a list of messages of any shape the reader knows, or a
# transcript object (an Anthropic request with ``system``, a Responses ``input`` + ``output``).
Rollout = str | list[dict[str, Any]] | dict[str, Any]


def read_rollout(
    query: Rollout,
    prompt: Rollout | None,
    index: int,
    chat_template: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[Item, Unread]:
    """An RL rollout as an item, and what in it no reader knew.

    Messages and transcript objects are read as ``import chat`` reads a row
    (:func:`tinyjudge.records.read_transcript`, then
    :func:`tinyjudge.records.canonical`). Text in a known chat template (or
    ``chat_template``) is turned back into its messages; other text falls back
    to :func:`query_to_item`.

    ``metadata`` becomes the item's metadata: where a rubric's references are read
    (``metadata.presupposition``).

    Raises:
        ValueError: a rollout that holds no messages, or messages that are not
            messages (a pydantic ``ValidationError``).
    """
    meta = dict(metadata or {})
    if isinstance(query, list | dict):
        transcript = read_transcript(query if isinstance(query, dict) else {"messages": query})
        item = Item.model_validate(
            {"id": f"query:{index}", "messages": canonical(transcript.messages), "metadata": meta}
        )
        return item, transcript.unread
    from_text = parse_chat_text(query, chat_template)
    if from_text:
        got = Item.model_validate({"id": f"query:{index}", "messages": from_text, "metadata": meta})
        return got, Unread()
    item = query_to_item(query, prompt if isinstance(prompt, str) else None, index)
    item.metadata = meta
    return item, Unread()


def rollout_to_item(
    query: Rollout,
    prompt: Rollout | None,
    index: int,
    chat_template: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Item:
    """An RL rollout as an item, the same whether it came as messages or as template text
    (:func:`read_rollout` without its tally)."""
    return read_rollout(query, prompt, index, chat_template, metadata)[0]


def metadata_of(value: Any) -> dict[str, Any] | None:
    """A rollout's metadata given as an object, or as the JSON text of one (OpenRLHF sends
    a row's ``label`` column as text); anything else is no metadata (None)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        import json

        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def refuse_blind(model: Scorer, items: list[Item], fix: str) -> None:
    """Refuse rollouts that lack a reference the model reads: a reward is never given blind.

    Args:
        model: the reward model (one whose rubric reads no references passes anything).
        items: the rollouts read as items.
        fix: how this caller passes metadata, for the message.

    Raises:
        DataError: naming the first rollout, the missing reference and its field.
    """
    note = getattr(model, "blind_note", None)
    if note is None:
        return
    for i, item in enumerate(items):
        if missing := note(item):
            raise DataError(
                f"rollout {i}",
                None,
                f"missing reference {missing} that {model.name} reads; a reward without it "
                f"would be blind: {fix}",
            )


def read_item(record: Any, unread: Unread) -> Any:
    """An item as ``/score`` receives it, its messages read as ``import chat`` reads them.

    A single item's transcript may be in any shape :func:`read_transcript` knows
    (an Anthropic ``system`` beside its ``messages``, Responses ``input`` +
    ``output``); a pair's ``context`` and responses are lists of messages. The
    item's other fields are left for :class:`Item` to check.
    """
    if not isinstance(record, dict):
        return record
    pair = {
        k: record[k]
        for k in ("context", "response_a", "response_b")
        if isinstance(record.get(k), list)
    }
    if pair:
        read = {k: canonical(read_messages(v, unread)) for k, v in pair.items()}
        return {**record, **read}
    rest = {k: v for k, v in record.items() if k not in ("id", "metadata")}
    try:
        transcript = read_transcript(rest)
    except ValueError:
        return record  # Item says what is missing
    unread.update(transcript.unread)
    kept = {k: v for k, v in record.items() if k not in transcript.used}
    return {**kept, "messages": canonical(transcript.messages)}


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
            raise UsageError(
                f"reward labels {labels}: model {model.name} has no rubric", param="labels"
            )
        return None
    if not labels:
        return list(rubric.positive) or None
    named = [match_label(lab, rubric) for lab in labels]
    unknown = [lab for lab in named if lab not in rubric.label_names]
    if unknown:
        raise UsageError(
            f"reward labels {unknown} not among the labels of rubric "
            f"{rubric.id}: {rubric.label_names}",
            param="labels",
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
    else the probability of its label.

    An ensemble's label (``raw`` with ``spread`` and ``of``, the labels its score
    sums) gives its conservative score when ``labels`` are those.
    """
    raw = label.raw
    if (
        labels
        and isinstance(raw, dict)
        and raw.get("of") == list(labels)
        and label.score is not None
    ):
        return float(label.score)
    if labels and label.probs is not None:
        return float(sum(label.probs.get(name, 0.0) for name in labels))
    if label.score is not None:
        return float(label.score)
    if label.probs and label.label is not None:
        return float(label.probs[label.label])
    return float("nan")
