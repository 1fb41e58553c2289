"""One judgment of one item in one order: the calls for its samples, then the parse."""

from __future__ import annotations

from typing import Any

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._client import Caller, CallFailed
from ._parse import bound_text
from ._prompt import build_messages, item_agents, verdict_schema
from ._verdicts import failed_result, result_from_outputs
from ._window import window_messages

__all__ = ["judge_item"]


async def judge_item(
    caller: Caller,
    item: Item,
    order: str,
    rubric: Rubric,
    *,
    rubric_hash: str,
    rendered: str,
    label_first: bool,
    samples: int,
    temperature: float,
    max_tokens: int | None,
) -> dict[str, Any]:
    """One judgment of one item in one order: calls until ``samples`` outputs, then parse."""
    window = window_messages(item, rubric)
    messages = build_messages(
        item,
        rubric,
        order,  # type: ignore[arg-type]
        window,
        rubric_hash=rubric_hash,
        rendered=rendered,
        label_first=label_first,
    )
    agents = item_agents(item) if rubric.type == "step" else None
    labels = agents if agents is not None else rubric.label_names
    schema = verdict_schema(rubric, agents, label_first=label_first)
    texts: list[str | None] = []
    logprobs: list[Any] = []
    usage = {"calls": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}
    # Servers that ignore ``n`` answer with one choice; ask again for the rest.
    while len(texts) < samples and usage["calls"] < samples + 2:
        got = await caller.complete(
            messages,
            schema,
            n=samples - len(texts),
            temperature=temperature,
            max_tokens=max_tokens,
        )
        usage["calls"] += 1
        usage["retries"] += got.retries
        if isinstance(got, CallFailed):
            if not texts:
                return failed_result(got.reason, usage["calls"], usage["retries"])
            break
        texts += got.texts
        logprobs += got.logprobs
        usage["prompt_tokens"] += got.prompt_tokens
        usage["completion_tokens"] += got.completion_tokens
    n_steps = len(item.context or []) if item.is_pairwise else len(item.messages)
    try:
        return result_from_outputs(texts, logprobs, labels, rubric, n_steps, usage)
    except Exception as e:  # a reply nothing above foresaw costs its item, not the run
        raw = [bound_text(t) if isinstance(t, str) else None for t in texts]
        return {
            "status": "unscored",
            "reason": f"could not read the reply ({type(e).__name__})",
            "raw": raw[0] if len(raw) == 1 else raw,
            "usage": usage,
        }
