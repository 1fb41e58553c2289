"""The cross tier: an encoder that reads the answer against what it should say.

A cross-encoder over pairs: the first segment is the rubric's references for the
item and the request the answer replies to (for SYCON, the correct information,
the false premise and the user's latest push-back; without references, the
prompt), the second the answer (:func:`~tinyjudge.distill._text.request_views`).
Every answer of a dialogue is one pass, combined as the rubric says (the worst
answer under ``combine: worst_answer``). It is the transformer tier reading
other views, so saving, loading, ONNX and int8 export, serving, calibration,
hardening and ensembles are that tier's.

Training takes the answer's surface away from the label (:class:`CrossConfig`):
the references read as answers of a known label are examples no answering
model wrote, and counterfactual copies put another label's opening in front of
an answer, so an opening alone predicts nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Message

from ._configs import CrossConfig
from ._text import View, request_views
from ._transformer import TransformerRM

__all__ = ["CrossConfig", "CrossRM", "answer_opening"]

# An opening is the answer's first sentence, at most this long: what a policy copies.
_OPENING_CHARS = 120
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s")


def answer_opening(text: str) -> str:
    """The first sentence of an answer (at most 120 characters), where its stance shows first.

    >>> answer_opening("You're right, I apologise. Cold air is denser.")
    "You're right, I apologise."
    >>> answer_opening("No")
    'No'
    """
    text = text.strip()
    line = text.split("\n", 1)[0]
    m = _SENTENCE_END.search(line, 10)  # not at "Dr." or "No." of a longer sentence
    end = m.start() if m else len(line)
    return line[: min(end, _OPENING_CHARS)].strip()


def _last_assistant(item: Item) -> int:
    """The index of the item's last message when it is an assistant's text, else -1."""
    msgs = item.messages
    if msgs and msgs[-1].role == "assistant" and not msgs[-1].tool_calls and msgs[-1].text:
        return len(msgs) - 1
    return -1


class CrossRM(TransformerRM):
    """A cross-encoder fine-tuned over (references and request, answer) pairs.

    Made as :class:`TransformerRM` is, with a :class:`CrossConfig` (the transformer
    tier's fields and the free supervision's) as its config or keyword options.
    """

    tier: ClassVar[str] = "cross"
    config_class = CrossConfig
    config: CrossConfig
    # its free examples are drawn from every item given (each question's references,
    # other answers' openings), people-labelled or not
    drops_unweighted_rows = False

    @property
    def view(self) -> str:
        """What the tier reads: the references and the request, then the answer."""
        return "references+request"

    def item_views(self, item: Item) -> list[View]:
        return request_views(item, self.rubric)

    def answer_views(self, item: Item) -> list[View]:
        return request_views(item, self.rubric, every_answer=True)

    def fit(
        self,
        items: Any,
        y: Any,
        sample_weight: Any = None,
        eval_set: tuple[Any, Any] | None = None,
    ) -> CrossRM:
        """Fit as :meth:`TransformerRM.fit`, with the free examples and counterfactual copies.

        Raises:
            UsageError: ``reference_labels`` naming a reference the rubric does not
                have or a label it does not offer; ``request_label`` likewise.
        """
        self._check_free_labels()
        self.free_rows_: dict[str, int] = {}
        super().fit(items, y, sample_weight, eval_set)
        self.card_["free_supervision"] = {
            **self.free_rows_,
            "reference_labels": self.config.reference_label_map,
            "request_label": self.config.request_label,
            "counterfactual": self.config.counterfactual,
        }
        return self

    def _check_free_labels(self) -> None:
        names = self.rubric.label_names
        refs = [r.name for r in self.rubric.references]
        for ref, label in self.config.reference_label_map.items():
            if ref not in refs:
                raise UsageError(
                    f"reference_labels names reference {ref!r}, which rubric {self.rubric.id!r} "
                    f"does not have; its references: {refs}",
                    param="reference_labels",
                )
            if label not in names:
                raise UsageError(
                    f"reference_labels gives {ref!r} the label {label!r}, which rubric "
                    f"{self.rubric.id!r} does not offer; allowed: {names}",
                    param="reference_labels",
                )
        if self.config.request_label is not None and self.config.request_label not in names:
            raise UsageError(
                f"request_label {self.config.request_label!r} is not a label of rubric "
                f"{self.rubric.id!r}; allowed: {names}",
                param="request_label",
            )

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        if not self.pairwise:
            rng = np.random.default_rng(self.config.seed)
            extra = self._reference_rows(items, rng) + self._counterfactual_rows(items, Y, rng)
            if extra:
                items = items + [it for it, _, _ in extra]
                Y = np.vstack([Y, np.stack([row for _, row, _ in extra]).astype(Y.dtype)])
                sample_weight = np.concatenate([sample_weight, [w for _, _, w in extra]])
        super()._fit(items, Y, sample_weight)

    def _one_hot(self, label: str) -> np.ndarray:
        return np.eye(len(self.rubric.label_names))[self.rubric.label_names.index(label)]

    def _reference_rows(
        self, items: list[Item], rng: np.random.Generator
    ) -> list[tuple[Item, np.ndarray, float]]:
        """Per distinct references (a question), each reference and a request as an answer."""
        by_refs: dict[str, list[Item]] = {}
        for it in items:
            text = self.rubric.reference_text(it)
            if text and _last_assistant(it) >= 0:
                by_refs.setdefault(text, []).append(it)
        given = self.config.reference_label_map
        ask = self.config.request_label
        rows: list[tuple[Item, np.ndarray, float]] = []
        n_ref = n_req = 0
        for group in by_refs.values():
            it = group[int(rng.integers(len(group)))]  # a request of this question at random
            refs = self.rubric.item_references(it)
            head = it.messages[:-1]
            answers = [(name, refs[name], label) for name, label in given.items() if name in refs]
            request = next((m.text for m in reversed(head) if m.role == "user"), "")
            if ask is not None and request:
                answers.append(("request", request, ask))
            for name, text, label in answers:
                msgs = [*head, Message(role="assistant", content=text)]
                copy = it.model_copy(update={"id": f"{it.id}#{name}", "messages": msgs})
                rows.append((copy, self._one_hot(label), 1.0))
                n_req += name == "request"
                n_ref += name != "request"
        self.free_rows_.update(reference_examples=n_ref, request_examples=n_req)
        return rows

    def _counterfactual_rows(
        self, items: list[Item], Y: np.ndarray, rng: np.random.Generator
    ) -> list[tuple[Item, np.ndarray, float]]:
        """Copies of a share of the answers with another label's opening in front."""
        share = self.config.counterfactual
        last = [_last_assistant(it) for it in items]
        usable = [i for i, j in enumerate(last) if j >= 0]
        hard = Y.argmax(axis=1)
        openings: dict[int, list[str]] = {}
        for i in usable:
            text = answer_opening(items[i].messages[last[i]].text)
            if text:
                openings.setdefault(int(hard[i]), []).append(text)
        rows: list[tuple[Item, np.ndarray, float]] = []
        if share > 0 and len(openings) > 1:
            picked = rng.choice(usable, size=round(share * len(usable)), replace=False)
            for i in sorted(int(p) for p in picked):
                others = [k for k in openings if k != hard[i]]
                pool = openings[others[int(rng.integers(len(others)))]]
                opening = pool[int(rng.integers(len(pool)))]
                msgs = list(items[i].messages)
                answer = msgs[last[i]]
                msgs[last[i]] = Message(role="assistant", content=f"{opening} {answer.text}")
                copy = items[i].model_copy(update={"id": f"{items[i].id}#cf", "messages": msgs})
                rows.append((copy, Y[i], 1.0))
        self.free_rows_["counterfactual_copies"] = len(rows)
        return rows

    def _usage(self, model_dir: Path) -> str:
        return (
            super()
            ._usage(model_dir)
            .replace(
                "the request and the reply as a sentence pair: tok(request, reply)",
                "the references and the last request, then the reply: "
                "tok(references + '\\n\\n' + request, reply)",
            )
        )
