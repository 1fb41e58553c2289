"""Chat-completion bodies for the local server, with top logprobs following a distribution."""

from __future__ import annotations

import math
import re
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._calls import Reply

__all__ = ["tokenize", "completion_body"]

_TOKEN = re.compile(r"[A-Za-z]{1,4}|\d|\s+|[^A-Za-z\d\s]")


def tokenize(text: str, merge_quote: bool = False) -> list[str]:
    """Split text into short tokens the way a BPE might: letter runs of at most 4.

    With ``merge_quote``, an opening double quote joins the next token
    (``"full``), as many real tokenizers do.
    """
    toks = _TOKEN.findall(text)
    if not merge_quote:
        return toks
    out: list[str] = []
    i = 0
    while i < len(toks):
        if toks[i] == '"' and i + 1 < len(toks) and toks[i + 1].isalpha():
            out.append('"' + toks[i + 1])
            i += 2
        else:
            out.append(toks[i])
            i += 1
    return out


def _lp(p: float) -> float:
    return math.log(max(p, 1e-12))


def _label_logprobs(text: str, reply: Reply) -> dict[int, list[dict[str, Any]]]:
    """Top logprobs at each token of the label value, keyed by token index."""
    toks = tokenize(text, reply.merge_quote)
    found = list(re.finditer(r'"(?:label|agent)"\s*:\s*"([^"]*)"', text))
    m = found[-1] if found else None
    if m is None or not reply.probs:
        return {}
    start, chosen = m.start(1), m.group(1)
    # Token index whose span covers the label's first character.
    offset, first = 0, None
    for i, t in enumerate(toks):
        if offset <= start < offset + len(t):
            first = i
            break
        offset += len(t)
    if first is None:
        return {}
    lead = toks[first][: start - offset]

    def label_tokens(lab: str) -> list[str]:
        ts = tokenize(lead + lab + '"', reply.merge_quote)
        return ts[:-1] if ts and ts[-1] == '"' else ts

    mine = label_tokens(chosen)
    seqs = {lab: label_tokens(lab) for lab in reply.probs}
    out: dict[int, list[dict[str, Any]]] = {}
    for j, tok in enumerate(mine):
        group: dict[str, float] = {}
        for lab, seq in seqs.items():
            if seq[:j] == mine[:j] and len(seq) > j:
                group[seq[j]] = group.get(seq[j], 0.0) + reply.probs[lab]
        total = sum(group.values()) or 1.0
        alts = [
            {"token": t, "logprob": _lp(p / total), "bytes": list(t.encode())}
            for t, p in group.items()
        ]
        if tok not in group:
            alts.append({"token": tok, "logprob": _lp(1e-6), "bytes": list(tok.encode())})
        alts.sort(key=lambda a: -float(a["logprob"]))  # type: ignore[arg-type]
        out[first + j] = alts
    return out


def completion_body(
    choices: list[Reply], model: str, logprobs: bool, prompt_tokens: int = 0
) -> dict[str, Any]:
    """A ``chat.completion`` JSON body for the given replies."""
    out_choices = []
    completion_tokens = 0
    for idx, reply in enumerate(choices):
        toks = tokenize(reply.text, reply.merge_quote)
        completion_tokens += len(toks)
        choice: dict[str, Any] = {
            "index": idx,
            "message": {"role": "assistant", "content": reply.text},
            "finish_reason": "stop",
        }
        if logprobs:
            tops = _label_logprobs(reply.text, reply)
            content = []
            for i, t in enumerate(toks):
                alts = tops.get(i) or [{"token": t, "logprob": -0.01, "bytes": list(t.encode())}]
                chosen_lp = next((a["logprob"] for a in alts if a["token"] == t), -0.01)
                content.append(
                    {
                        "token": t,
                        "logprob": chosen_lp,
                        "bytes": list(t.encode()),
                        "top_logprobs": alts,
                    }
                )
            choice["logprobs"] = {"content": content}
        out_choices.append(choice)
    return {
        "id": f"chatcmpl-local-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": out_choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
