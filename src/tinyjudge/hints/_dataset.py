"""Hinted labels as rows for TRL's self-distillation trainers (``SDPOTrainer``, ``SDFTTrainer``).

One row per hinted label: ``prompt`` (the conversation before the answer the hint
targets, ending on a user turn), ``privileged_context`` (the hint), ``completion``
(the answer that was given), ``item_id``, ``step``, ``source``, ``rubric``; with
``format="messages"`` also ``hinted_prompt``, the prompt with the hint as its own
user message just before the answer.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tinyjudge._template_tokens import neutralise
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from ._checks import copied_target, leak_targets
from ._config import HintsConfig
from ._export import hint_of
from ._rows import Refused, Target, find_target, fold_prompt, message_dict

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "HintRows",
    "Leak",
    "Escaped",
    "hint_rows",
    "trl_dataset",
    "derangement",
    "shuffle_hints",
    "hint_message",
]


@dataclass(frozen=True)
class Leak:
    """A hint that copies what the item expects."""

    item_id: str
    step: int | None
    target: str

    def __str__(self) -> str:
        return f"{self.item_id}: the hint at step {self.step} copies {self.target}"


@dataclass(frozen=True)
class Escaped:
    """A row whose text held chat-template control tokens, escaped before it was written."""

    item_id: str
    step: int | None
    tokens: tuple[str, ...]

    def __str__(self) -> str:
        shown = ", ".join(dict.fromkeys(self.tokens))
        return f"{self.item_id}: step {self.step}: chat-template tokens escaped: {shown}"


@dataclass
class HintRows:
    """The rows written and what was refused or flagged.

    Attributes:
        rows: one dict per hinted label (``prompt``, ``privileged_context``, ...).
        refused: the hinted labels that gave no row, each with its reason.
        leaks: rows whose hint copies a reference or a metadata target.
        escaped: rows whose hint, prompt or answer held chat-template control
            tokens (``<|im_end|>``, ``[INST]`` ...), written escaped (``<\\|im_end|>``)
            so that no template reads them as a turn.
        labels: the labels read.
        without_hint: scored labels with no hint text (not counted as refused).
        unscored: unscored labels.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)
    escaped: list[Escaped] = field(default_factory=list)
    labels: int = 0
    without_hint: int = 0
    unscored: int = 0

    @property
    def refused_by_kind(self) -> dict[str, int]:
        """How many were refused, by reason (``step_outside``, ``no_answer``, ...)."""
        return dict(Counter(r.kind for r in self.refused))

    def summary(self) -> str:
        """One line: rows, labels, what was passed over, refused and flagged."""
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.refused_by_kind.items())) or "none"
        return (
            f"{len(self.rows)} rows from {self.labels} labels ({self.without_hint} without a hint, "
            f"{self.unscored} unscored); refused: {kinds}; leaks flagged: {len(self.leaks)}; "
            f"rows with chat-template tokens escaped: {len(self.escaped)}"
        )

    def dataset(self) -> Dataset:
        """The rows as a ``datasets.Dataset`` (what TRL's trainers take)."""
        from datasets import Dataset

        return Dataset.from_list(self.rows)


def hint_message(hint: str) -> dict[str, Any]:
    """The hint as its own message in ``hinted_prompt``."""
    return {"role": "user", "content": hint}


def derangement(n: int, seed: int = 0) -> list[int]:
    """A permutation of ``range(n)`` that moves every index (Sattolo's cycle), for n >= 2.

    >>> p = derangement(5, seed=1)
    >>> sorted(p) == list(range(5)) and all(p[i] != i for i in range(5))
    True
    """
    order = list(range(n))
    rng = random.Random(seed)
    for i in range(n - 1, 0, -1):
        j = rng.randrange(i)  # j < i: one cycle through every index
        order[i], order[j] = order[j], order[i]
    return order


def _rubric(name: str, cache: dict[str, Rubric | None]) -> Rubric | None:
    if name not in cache:
        try:
            cache[name] = load_rubric(name)
        except TinyjudgeError:  # a custom rubric not at hand: its references are not checked
            cache[name] = None
    return cache[name]


def hint_rows(
    items: Iterable[Item],
    labels: Iterable[Label],
    config: HintsConfig | None = None,
    **options: Any,
) -> HintRows:
    """Turn hinted labels into trainer rows, checking each against its item.

    Args:
        items: the items the labels are about (by id).
        labels: labels; those with a hint (or, with ``hint_from="rationale"``, a
            rationale) give a row each.
        config: the options; keyword ``options`` over it (see :class:`HintsConfig`).

    Returns:
        :class:`HintRows`: the rows, what was refused and why, the leaks.
    """
    config = HintsConfig.from_options(config, **options)
    by_id = {it.id: it for it in items}
    out = HintRows()
    rubrics: dict[str, Rubric | None] = {}
    for lab in labels:
        out.labels += 1
        if lab.status != "ok":
            out.unscored += 1
            continue
        text, step = hint_of(lab, config.hint_from)
        if text is None:
            out.without_hint += 1
            continue
        row = _row(lab, text, step, by_id.get(lab.item_id), config, out, rubrics)
        if row is not None:
            out.rows.append(row)
    if config.control == "shuffled":
        out.rows = shuffle_hints(out.rows, config.seed)
    return out


def _row(
    lab: Label,
    text: str,
    step: int | None,
    item: Item | None,
    config: HintsConfig,
    out: HintRows,
    rubrics: dict[str, Rubric | None],
) -> dict[str, Any] | None:
    def refuse(kind: str, message: str) -> dict[str, Any] | None:
        out.refused.append(Refused(lab.item_id, step, kind, message))
        return None

    if not text.strip():
        return refuse("empty_hint", f"{lab.item_id}: the hint is empty")
    if len(text) > config.max_hint_chars:
        return refuse(
            "long_hint",
            f"{lab.item_id}: the hint has {len(text)} characters "
            f"(max_hint_chars={config.max_hint_chars})",
        )
    if item is None:
        return refuse("no_item", f"{lab.item_id}: no item with this id among the items")
    if item.is_pairwise:
        return refuse("no_step", f"{lab.item_id}: a pairwise item has no steps")
    if step is None:
        return refuse("no_step", f"{lab.item_id}: the label names no step")
    target = find_target(item, step, lab.label)
    if isinstance(target, Refused):
        out.refused.append(target)
        return None
    prompt = fold_prompt(item, target)
    if isinstance(prompt, Refused):
        out.refused.append(prompt)
        return None
    answer = _completion(item, target)
    if answer is None:
        return refuse("no_answer", f"{lab.item_id}: the answer at step {target.index} is empty")
    copied = copied_target(
        text, leak_targets(item, _rubric(lab.rubric, rubrics)), config.leak_ngram
    )
    if copied is not None:
        out.leaks.append(Leak(lab.item_id, step, copied))
        if config.leaks == "drop":
            return refuse("leak", f"{lab.item_id}: the hint at step {step} copies {copied}")
    text, found = neutralise(text)
    for message in [*prompt, answer]:
        message["content"], more = neutralise(message["content"])
        found += more
    if found:
        out.escaped.append(Escaped(lab.item_id, step, tuple(found)))
    row: dict[str, Any] = {
        "prompt": prompt,
        "privileged_context": text,
        "completion": [answer],
        "item_id": lab.item_id,
        "step": step,
        "answer_step": target.index,
        "source": lab.source,
        "rubric": lab.rubric,
    }
    if config.format == "messages":
        row["hinted_prompt"] = [*prompt, hint_message(text)]
    return row


def _completion(item: Item, target: Target) -> dict[str, Any] | None:
    answer = message_dict(item.messages[target.index])
    if not answer["content"].strip() and not answer.get("tool_calls"):
        return None
    answer["role"] = "assistant"  # the policy speaks it, whatever role the log gave it
    answer.pop("name", None)
    return answer


def shuffle_hints(rows: list[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """The rows with their hints permuted across rows, for the control run.

    Every row gets another row's hint (a derangement, for 2 or more rows), so a gain
    that survives the shuffle comes from having any extra context, not from the hint.
    ``hint_item_id`` and ``hint_step`` say where each hint was written; ``hinted_prompt``
    is rebuilt with the moved hint.
    """
    order = derangement(len(rows), seed) if len(rows) >= 2 else list(range(len(rows)))
    out = []
    for row, j in zip(rows, order, strict=True):
        moved = {**row, "privileged_context": rows[j]["privileged_context"]}
        moved["hint_item_id"], moved["hint_step"] = rows[j]["item_id"], rows[j]["step"]
        if "hinted_prompt" in row:
            moved["hinted_prompt"] = [*row["prompt"], hint_message(moved["privileged_context"])]
        out.append(moved)
    return out


def trl_dataset(
    items: Iterable[Item],
    labels: Iterable[Label],
    config: HintsConfig | None = None,
    **options: Any,
) -> Dataset:
    """The rows of :func:`hint_rows` as a ``datasets.Dataset`` for ``SDPOTrainer``/``SDFTTrainer``.

    >>> from trl.experimental.sdpo import SDPOConfig, SDPOTrainer  # doctest: +SKIP
    >>> data = trl_dataset(items, labels)  # doctest: +SKIP
    >>> SDPOTrainer(model, reward_funcs=[reward_func("runs/rm")], train_dataset=data,
    ...             args=SDPOConfig(include_environment_feedback=True, ...))  # doctest: +SKIP
    """
    return hint_rows(items, labels, config, **options).dataset()
