"""From model outputs to judgment results, and from results to Labels.

A *result* is the JSON-able record of one judgment of one item in one
presentation order (what the store keeps). Results of the ``ba`` order are
mapped back to the original positions before they are stored.
"""

from __future__ import annotations

from typing import Any

from tinyjudge.records import Hint, Item, Label
from tinyjudge.rubric import Rubric

from ._parse import ParseFailure, Verdict, bound_text, parse_verdict
from ._probs import mean_probs, one_hot, probs_from_logprobs

__all__ = [
    "result_from_outputs",
    "failed_result",
    "swap_result",
    "make_label",
    "blind_label",
    "SWAP",
]

SWAP = {"a": "b", "b": "a"}


def failed_result(reason: str, calls: int, retries: int) -> dict[str, Any]:
    """A judgment that could not be made because the calls failed (not stored: retried next run)."""
    return {
        "status": "unscored",
        "reason": reason,
        "transient": True,
        "usage": {"calls": calls, "retries": retries, "prompt_tokens": 0, "completion_tokens": 0},
    }


def result_from_outputs(
    texts: list[str | None],
    logprobs: list[list[Any] | None],
    labels: list[str],
    rubric: Rubric,
    n_steps: int,
    usage: dict[str, Any],
) -> dict[str, Any]:
    """Parse every sample and combine them into one result.

    One sample: its label, with the distribution from its logprobs (else
    one-hot). Several: the majority label (ties broken by the mean
    distribution), the distribution being the mean of the samples'.
    """
    parsed: list[tuple[Verdict, dict[str, float]]] = []
    failures: list[str] = []
    for text, lps in zip(texts, logprobs, strict=True):
        v = parse_verdict(
            text,
            labels,
            step=rubric.step,
            step_required=rubric.type == "step",
            n_steps=n_steps,
            hint=rubric.hint,
        )
        if isinstance(v, ParseFailure):
            failures.append(v.reason)
            continue
        dist = probs_from_logprobs(lps, v.label_span, labels) if text == _clean(text) else None
        parsed.append((v, dist or one_hot(v.label)))
    # What is kept of the raw output is bounded (and says so): a runaway 60 MB
    # completion must not be copied into the cache and the labels.
    kept = [bound_text(t) if isinstance(t, str) else None for t in texts]
    raw: Any = kept[0] if len(kept) == 1 else kept
    if not parsed:
        reason = failures[0] if len(failures) == 1 else f"no sample parsed: {failures[0]}"
        return {"status": "unscored", "reason": reason, "raw": raw, "usage": usage}
    probs = mean_probs([d for _, d in parsed])
    if len(parsed) == 1:
        chosen = parsed[0][0]
    else:
        votes: dict[str, int] = {}
        for v, _ in parsed:
            votes[v.label] = votes.get(v.label, 0) + 1
        best = max(votes, key=lambda k: (votes[k], probs.get(k, 0.0)))
        chosen = next(v for v, _ in parsed if v.label == best)
    if failures:
        usage = {**usage, "unparsed_samples": len(failures)}
    result: dict[str, Any] = {
        "status": "ok",
        "label": chosen.label,
        "probs": probs,
        "rationale": chosen.rationale,
        "raw": raw,
        "usage": usage,
    }
    ambiguous = [v.ambiguous for v, _ in parsed if v.ambiguous]
    if ambiguous:
        result["ambiguous"] = ambiguous[0]
    if chosen.step is not None:
        result["step"] = chosen.step
    if chosen.hint_text:
        hint_step = chosen.hint_step if chosen.hint_step is not None else chosen.step
        result["hint"] = {"step": hint_step, "text": chosen.hint_text}
    return result


def _clean(text: str | None) -> str | None:
    from ._parse import clean_text

    return clean_text(text) if text is not None else None


def swap_result(result: dict[str, Any]) -> dict[str, Any]:
    """A ``ba``-order result with ``a`` and ``b`` swapped back to the original positions."""
    out = dict(result)
    if out.get("label") is not None:
        out["label"] = SWAP.get(out["label"], out["label"])
    if out.get("probs"):
        out["probs"] = {SWAP.get(k, k): v for k, v in out["probs"].items()}
    return out


def _usage(results: list[dict[str, Any]], cached: bool) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for r in results:
        for k, v in (r.get("usage") or {}).items():
            total[k] = total.get(k, 0) + v
    total["cached"] = cached
    return total


def blind_label(item: Item, rubric: Rubric, source: str, rubric_hash: str) -> Label | None:
    """The unscored label of an item lacking a required reference (never judged blind), or None."""
    named = rubric.missing_reference_note(item)
    if named is None:
        return None
    return Label(
        item_id=item.id,
        rubric=rubric.id,
        rubric_hash=rubric_hash,
        source=source,
        status="unscored",
        reason=f"missing reference {named}: not judged without it",
    )


def make_label(
    item: Item,
    rubric: Rubric,
    source: str,
    results: dict[str, dict[str, Any]],
    cached: bool,
    rubric_hash: str | None = None,
) -> Label:
    """The Label of an item from its result (or both orders' results, for a pair).

    A pair whose two orders disagree gets ``tie`` when the rubric offers it
    (a position-dependent preference is no preference), else is unscored; a
    pair with an unscored order is unscored. ``probs`` is the mean of the two
    orders' distributions either way.
    """
    base: dict[str, Any] = {
        "item_id": item.id,
        "rubric": rubric.id,
        "rubric_hash": rubric_hash or rubric.hash,
        "source": source,
        "usage": _usage(list(results.values()), cached),
    }
    if not item.is_pairwise:
        r = results["ab"]
        if r["status"] != "ok":
            return Label(**base, status="unscored", raw=r.get("raw"), reason=r["reason"])
        hint = Hint(**r["hint"]) if r.get("hint") else None
        return Label(
            **base,
            label=r["label"],
            probs=r["probs"],
            score=rubric.score(r["probs"]),
            step=r.get("step"),
            rationale=r.get("rationale"),
            hint=hint,
            raw=r.get("raw"),
            reason=_ambiguous_reason(results),
        )
    ab, ba = results["ab"], results["ba"]
    orders = {"ab": ab.get("label"), "ba": ba.get("label")}
    raw = {"ab": ab.get("raw"), "ba": ba.get("raw")}
    bad = [(o, r) for o, r in (("ab", ab), ("ba", ba)) if r["status"] != "ok"]
    if bad:
        reason = "; ".join(f"order {o}: {r['reason']}" for o, r in bad)
        return Label(**base, status="unscored", orders=orders, raw=raw, reason=reason)
    probs = mean_probs([ab["probs"], ba["probs"]])
    consistent = ab["label"] == ba["label"]
    rationale = ab.get("rationale")
    if consistent:
        label = ab["label"]
    elif "tie" in rubric.label_names:
        label = "tie"
        rationale = f"the two orders disagree ({orders['ab']} vs {orders['ba']}): {rationale}"
    else:
        return Label(
            **base,
            status="unscored",
            orders=orders,
            consistent=False,
            raw=raw,
            reason=f"the two orders disagree ({orders['ab']} vs {orders['ba']}) "
            "and the rubric has no tie",
        )
    return Label(
        **base,
        label=label,
        probs=probs,
        score=rubric.score(probs),
        rationale=rationale,
        orders=orders,
        consistent=consistent,
        raw=raw,
        reason=_ambiguous_reason(results),
    )


def _ambiguous_reason(results: dict[str, dict[str, Any]]) -> str | None:
    """``ambiguous: ...`` for a label whose answer held a second, different verdict."""
    notes = [f"order {o}: {r['ambiguous']}" if len(results) > 1 else r["ambiguous"]
             for o, r in results.items() if r.get("ambiguous")]  # fmt: skip
    return "ambiguous: " + "; ".join(notes) if notes else None
