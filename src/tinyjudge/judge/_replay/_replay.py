"""The replay backend: recorded judgments answered through the same OpenAI-compatible path.

A responder for :class:`~tinyjudge.testing.LocalServer` that answers each
request from a recorded label of the item its prompt shows (the server is given
the items and rubric and recognises each item by its prompt's fence nonce; no
item id travels over the wire), so the whole judge (prompt, HTTP, parsing, logprobs, cache,
pairwise orders) runs on, e.g., XSTest's GPT-4 labels without a key. Recorded
unscored labels are replayed as their raw text, so they come out unscored again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from .._verdicts import SWAP
from ._calls import Fault, Reply, Request, Responder
from .server import LocalServer

__all__ = ["replay_responder", "replay_server", "load_replay_labels"]


def load_replay_labels(path: str | os.PathLike[str], source: str) -> list[Label]:
    """The labels of ``source`` in a labels JSONL file.

    Raises:
        TinyjudgeError: the file holds no label of that source (the message
            lists the sources it does hold).
    """
    from tinyjudge.datasets.jsonl import read_labels

    labels = read_labels(path)
    mine = [lab for lab in labels if lab.source == source]
    if not mine:
        sources = sorted({lab.source for lab in labels})
        raise DataError(str(path), None, f"no labels from source {source!r}; it holds {sources}")
    return mine


def _verdict(label: Label, order: str) -> Reply:
    if label.status != "ok" or label.label is None:
        raw = label.raw
        text = raw if isinstance(raw, str) else json.dumps(raw) if raw is not None else ""
        return Reply(text)
    value = label.label
    probs = dict(label.probs) if label.probs else {value: 1.0}
    if order == "ba":
        # The recorded order-specific verdict if there is one, shown in swapped positions.
        recorded = (label.orders or {}).get("ba", value) or value
        value = SWAP.get(recorded, recorded)
        probs = {SWAP.get(k, k): v for k, v in probs.items()}
    elif label.orders and (recorded_ab := label.orders.get("ab")):
        value = recorded_ab
    verdict: dict[str, Any] = {
        "rationale": label.rationale or f"recorded verdict of {label.source}",
        "label": value,
    }
    if label.step is not None:
        verdict["step"] = label.step
    if label.hint is not None:
        verdict["hint"] = {"step": label.hint.step, "text": label.hint.text}
    return Reply(json.dumps(verdict, ensure_ascii=False), probs=probs)


def replay_responder(labels: Iterable[Label], source: str | None = None) -> Responder:
    """A responder answering each request from the recorded label of its item.

    Args:
        labels: recorded labels; only those of ``source`` when it is given.
        source: e.g. ``judge:gpt-4``.

    Returns:
        A function of a :class:`Request`: a JSON verdict (with the recorded
        distribution as logprobs), the raw text of a recorded unscored label,
        or HTTP 422 for an item with no recorded label (or one the server
        was not given).
    """
    by_item = {lab.item_id: lab for lab in labels if source is None or lab.source == source}

    def respond(req: Request) -> Reply | Fault:
        if req.item_id is None:
            return Fault("status", 422, message="the prompt shows none of the replayed items")
        label = by_item.get(req.item_id)
        if label is None:
            return Fault("status", 422, message=f"no recorded label for item {req.item_id!r}")
        return _verdict(label, req.order)

    return respond


@contextmanager
def replay_server(
    labels: Iterable[Label] | str | os.PathLike[str],
    source: str,
    *,
    items: Iterable[Item],
    rubric: Rubric | str | os.PathLike[str],
    latency: float = 0.0,
) -> Iterator[LocalServer]:
    """Serve recorded labels on 127.0.0.1; yields the running server (``.base_url``).

    Args:
        labels: recorded labels, or a labels JSONL file.
        source: the recorded source to answer with, e.g. ``judge:gpt-4``.
        items: the items that will be judged (each request is matched to one by its prompt).
        rubric: the rubric they will be judged under.
        latency: seconds each call waits before answering.

    Example:
        >>> with replay_server("labels.jsonl", "judge:gpt-4", items=items,
        ...                    rubric="compliance") as srv:  # doctest: +SKIP
        ...     labels = Judge("compliance", "replay-gpt-4", base_url=srv.base_url).run(items)
    """
    if isinstance(labels, (str, os.PathLike)):
        labels = load_replay_labels(labels, source)
    server = LocalServer(
        replay_responder(labels, source),
        latency=latency,
        items=list(items),
        rubric=load_rubric(rubric),
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
