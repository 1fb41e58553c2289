"""What a judge run did, for the terminal and the ``--summary`` JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Summary"]


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
        d = {k: v for k, v in self.__dict__.items()}
        d["flip_rate"] = self.flip_rate
        return d

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
