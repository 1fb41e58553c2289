"""The judge's label distribution: from the verdict token's top logprobs, or from samples.

A label is often several tokens (``full`` ``_ref`` ``usal``) and labels share
prefixes, so the mass of each alternative token at the label's first token goes
to the labels it can begin; where an alternative is shared by several labels
and is the token the model actually chose, the next position's alternatives
split it further. A shared alternative the model did not choose is split
evenly (the server does not say what would have followed it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["probs_from_logprobs", "probs_from_samples", "mean_probs", "one_hot"]

_QUOTES = " \t\n\"'`"


def one_hot(label: str) -> dict[str, float]:
    return {label: 1.0}


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _token(entry: Any) -> str:
    token = _get(entry, "token")
    return token if isinstance(token, str) else ""


def _logprob(value: Any) -> float | None:
    """A usable log-probability, or None: a server may send ``"x"``, ``1000`` or ``NaN``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    # A logprob is at most 0; a little above is float noise, far above is garbage.
    return min(value, 0.0) if math.isfinite(value) and value <= 1e-6 else None


def _matching(prefix: str, labels: Sequence[str]) -> list[str]:
    p = prefix.lower()
    if not p:
        return []
    out = []
    for lab in labels:
        low = lab.lower()
        # The token may run past the label's end into the closing quote.
        if low.startswith(p) or (p.startswith(low) and not p[len(low) :].strip(_QUOTES + ",}")):
            out.append(lab)
    return out


def _split(
    tokens: list[Any],
    pos: int,
    lead: str,
    prefix: str,
    labels: Sequence[str],
    mass: float,
    acc: dict[str, float],
) -> None:
    if pos >= len(tokens):
        for lab in labels:
            acc[lab] = acc.get(lab, 0.0) + mass / len(labels)
        return
    entry = tokens[pos]
    chosen = _token(entry)
    top = _get(entry, "top_logprobs")
    alts = list(top) if isinstance(top, list) else []
    if not any(_token(a) == chosen for a in alts):
        alts.append({"token": chosen, "logprob": _get(entry, "logprob")})
    weights: list[tuple[str, float]] = []
    for alt in alts:
        lp = _logprob(_get(alt, "logprob"))
        if lp is None:
            continue
        weights.append((_token(alt), math.exp(lp)))
    total = sum(w for _, w in weights) or 1.0
    for tok, w in weights:
        share = mass * w / total
        body = tok[len(lead) :] if lead and tok.startswith(lead) else tok.lstrip(_QUOTES)
        cont = prefix + body
        match = _matching(cont, labels)
        if not match:
            continue
        if len(match) == 1:
            acc[match[0]] = acc.get(match[0], 0.0) + share
        elif tok == chosen:
            _split(tokens, pos + 1, "", cont, match, share, acc)
        else:
            for lab in match:
                acc[lab] = acc.get(lab, 0.0) + share / len(match)


def probs_from_logprobs(
    content: Sequence[Any] | None, span: tuple[int, int] | None, labels: Sequence[str]
) -> dict[str, float] | None:
    """The label distribution from the output tokens' top logprobs.

    Args:
        content: ``choice.logprobs.content``: tokens with ``token``, ``logprob``
            and ``top_logprobs`` (objects or dicts).
        span: the label value's character span in the output text.
        labels: the labels the distribution is over.

    Returns:
        A distribution over ``labels`` that sums to 1 (mass on alternatives that
        are not labels is dropped and the rest renormalized), or None when the
        logprobs are missing or do not line up with the label.
    """
    if not content or span is None:
        return None
    start = span[0]
    offset = 0
    for pos, entry in enumerate(content):
        tok = _token(entry)
        if offset <= start < offset + len(tok):
            acc: dict[str, float] = {}
            _split(list(content), pos, tok[: start - offset], "", labels, 1.0, acc)
            total = sum(acc.values())
            if total <= 0:
                return None
            return {lab: acc.get(lab, 0.0) / total for lab in labels if acc.get(lab, 0.0) > 0}
        offset += len(tok)
    return None


def probs_from_samples(samples: Sequence[str]) -> dict[str, float]:
    """The share of each label among the samples that gave one."""
    counts = Counter(samples)
    n = sum(counts.values())
    return {lab: c / n for lab, c in counts.items()}


def mean_probs(dists: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The average of several distributions (labels missing from one count as 0)."""
    acc: dict[str, float] = {}
    for d in dists:
        for k, v in d.items():
            acc[k] = acc.get(k, 0.0) + v / len(dists)
    total = sum(acc.values())
    return {k: v / total for k, v in acc.items()}
