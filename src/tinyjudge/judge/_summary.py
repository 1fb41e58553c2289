"""What a judge run returns: its labels, and what it did (for the terminal and ``--summary``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from tinyjudge.records import Label
from tinyjudge.results import Printed, fields_dict

__all__ = ["Summary", "Judgment"]


@dataclass
class Summary:
    """What a run did: calls, cache hits, retries, unscored items, tokens, cost, flip rate."""

    items: int = 0
    ok: int = 0
    unscored: int = 0
    failed: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None
    pairs: int = 0
    flips: int = 0
    ambiguous: int = 0
    seconds: float = 0.0
    fallbacks: list[str] = field(default_factory=list)
    response_format: str | None = None

    @property
    def flip_rate(self) -> float | None:
        """Share of pairs, judged in both orders, whose verdict changed with the order."""
        return self.flips / self.pairs if self.pairs else None

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON: the fields and ``flip_rate``."""
        return fields_dict(self) | {"flip_rate": self.flip_rate}

    def lines(self) -> list[str]:
        """The summary as short lines for a terminal."""
        out = [
            f"{self.items} items: {self.ok} labelled, {self.unscored} unscored"
            + (f" ({self.failed} after failed calls: re-run to retry them)" if self.failed else ""),
            f"{self.calls} calls, {self.cache_hits} cache hits, {self.retries} retries, "
            f"{self.seconds:.1f}s",
            f"tokens: {self.tokens_in} in, {self.tokens_out} out"
            + (f"; cost ${self.cost:.4f}" if self.cost is not None else ""),
        ]
        if self.pairs:
            out.append(f"pairs judged in both orders: {self.pairs}, flip rate {self.flip_rate:.3f}")
        if self.ambiguous:
            out.append(
                f"{self.ambiguous} ambiguous: the answer held a second, different verdict "
                "after the first, which stands (see each label's reason)"
            )
        if self.response_format is not None and self.calls:
            out.append(f"response format: {self.response_format}")
        out += [f"fallback: {f}" for f in self.fallbacks]
        return out


@dataclass(frozen=True, eq=False, repr=False)
class Judgment(Printed, Sequence[Label]):
    """What :meth:`Judge.run <tinyjudge.judge.Judge.run>` returns: a label per item, and the run.

    It prints as its summary (:meth:`lines`), never every label.

    It is a sequence of the labels (one per item, in input order), so
    ``[label] = judge.run([item])`` and ``write_jsonl(path, judgment)`` read it
    as a list; the run's figures are typed attributes beside them.

    Attributes:
        labels: one Label per item, in input order (unscored ones included).
        source: the labels' source, ``judge:<model>``.
        rubric: the rubric's id.
        rubric_hash: the rubric's content hash, as in each label.
        summary: counts, calls, tokens, cost, flip rate, and the response format
            the run stepped down to (``summary.response_format``, ``summary.fallbacks``).
    """

    labels: list[Label]
    source: str
    rubric: str
    rubric_hash: str
    summary: Summary

    @overload
    def __getitem__(self, index: int) -> Label: ...
    @overload
    def __getitem__(self, index: slice) -> list[Label]: ...
    def __getitem__(self, index: int | slice) -> Label | list[Label]:
        return self.labels[index]

    def __len__(self) -> int:
        return len(self.labels)

    def __iter__(self) -> Iterator[Label]:
        return iter(self.labels)

    @property
    def unscored_reasons(self) -> dict[str, int]:
        """How many labels came back unscored for each reason, most frequent first."""
        got = Counter(lab.reason or "" for lab in self.labels if lab.status != "ok")
        return dict(got.most_common())

    def lines(self) -> list[str]:
        """The source and rubric, then the run's summary."""
        head = f"{len(self.labels)} labels from {self.source}, rubric {self.rubric}"
        return [head, *self.summary.lines()]

    def as_dict(self) -> dict[str, Any]:
        """The ``--summary`` JSON: the summary's figures, the source, rubric and reasons."""
        run = fields_dict(self, skip=("labels", "summary"))  # source, rubric, rubric_hash
        return {**self.summary.as_dict(), **run, "unscored_reasons": self.unscored_reasons}
