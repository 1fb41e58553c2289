"""Does a rollout's reward depend on the framework shape it arrives in?

tau-bench's tool-using trajectories (real agent runs: tool calls, tool results, errors) are
written in the shapes agent frameworks use: OpenAI chat messages, Anthropic Messages
(top-level ``system``, ``tool_use`` / ``tool_result`` blocks), OpenAI Responses items
(``function_call`` / ``function_call_output``) and LangChain's ``messages_to_dict``, and each
is sent the way an RL loop sends a rollout (``rollout_to_item``, what ``/get_reward`` and
the TRL/verl adapters call). A linear reward model distilled from the bundled XSTest
sample's GPT-4 labels scores them. Prints, per shape, the largest reward difference to the
OpenAI-messages path, the rollouts that could not be read, and how many rollouts a second
the reading takes; writes ``bench/results/transcript_shapes.json`` (``--out``). tau-bench is
read from ``--data`` (a folder holding ``tau_bench/``), by default ``../shared/data`` when it
is there, else the bundled slice. ``--smoke`` reads 5 trajectories (the smoke test).

    nice -n 10 .venv/bin/python bench/transcript_shapes.py [--n 300]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.datasets.importers import run_import
from tinyjudge.demo import bundled_sample
from tinyjudge.distill import LinearRM
from tinyjudge.records import Item
from tinyjudge.serve import reward_of, rollout_to_item

RESULTS = Path(__file__).parent / "results" / "transcript_shapes.json"
_REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TINYJUDGE_SHARED_DATA", _REPO.parent / "shared" / "data")) / "tau_bench"
SLICE = _REPO / "tests" / "fixtures" / "data" / "tau_bench"


def _openai(item: Item) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", exclude_none=True, exclude={"extra"}) for m in item.messages]


def _anthropic(item: Item) -> dict[str, Any]:
    system = [m.text for m in item.messages if m.role == "system"]
    turns: list[dict[str, Any]] = []
    for m in item.messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.text}
            if turns and turns[-1]["role"] == "user" and isinstance(turns[-1]["content"], list):
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block]})
            continue
        blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
        for c in m.tool_calls or []:
            args = json.loads(c.function.arguments or "{}")
            blocks.append({"type": "tool_use", "id": c.id, "name": c.function.name, "input": args})
        turns.append({"role": m.role, "content": blocks})
    return {"system": "\n".join(system), "messages": turns}


def _responses(item: Item) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for m in item.messages:
        if m.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text}
            )
            continue
        if m.text:
            part = "output_text" if m.role == "assistant" else "input_text"
            items.append({"type": "message", "role": m.role,
                          "content": [{"type": part, "text": m.text}]})  # fmt: skip
        for c in m.tool_calls or []:
            items.append({"type": "function_call", "call_id": c.id, "name": c.function.name,
                          "arguments": c.function.arguments})  # fmt: skip
    return {"input": items[:-1], "output": items[-1:]}


def _langchain(item: Item) -> list[dict[str, Any]]:
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        messages_to_dict,
    )

    out: list[Any] = []
    for m in item.messages:
        if m.role == "system":
            out.append(SystemMessage(m.text))
        elif m.role == "user":
            out.append(HumanMessage(m.text))
        elif m.role == "tool":
            out.append(ToolMessage(m.text, tool_call_id=m.tool_call_id or ""))
        else:
            calls = [{"name": c.function.name, "args": json.loads(c.function.arguments or "{}"),
                      "id": c.id} for c in m.tool_calls or []]  # fmt: skip
            out.append(AIMessage(m.text, tool_calls=calls))
    return messages_to_dict(out)


SHAPES = {"openai": _openai, "anthropic": _anthropic, "responses": _responses,
          "langchain": _langchain}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300, help="trajectories (at most)")
    parser.add_argument("--data", type=Path, help="a folder holding tau_bench/")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="5 trajectories (a test)")
    args = parser.parse_args()
    if args.smoke:
        args.n = min(args.n, 5)
    sample = run_import("xstest", Path(bundled_sample()))
    teacher = {lab.item_id: lab.label for lab in sample.labels if lab.source == "judge:gpt-4"}
    train = [it for it in sample.items if teacher.get(it.id)]
    model = LinearRM("compliance").fit(train, [teacher[it.id] for it in train])
    if args.data is not None:
        source = args.data / "tau_bench"
    else:
        source = DATA if DATA.is_dir() else SLICE
    items = [it for it in run_import("tau_bench", source).items if not it.is_pairwise][: args.n]
    rollouts = {name: [make(it) for it in items] for name, make in SHAPES.items()}
    rewards: dict[str, list[float]] = {}
    figures: dict[str, Any] = {}
    for name, shaped in rollouts.items():
        start = time.perf_counter()
        read, refused = [], 0
        for i, rollout in enumerate(shaped):
            try:
                read.append(rollout_to_item(rollout, None, i))
            except ValueError:
                refused += 1
                read.append(Item(id=f"query:{i}", messages=[{"role": "assistant", "content": ""}]))
        seconds = time.perf_counter() - start
        rewards[name] = [
            reward_of(lab, ["full_refusal", "partial_refusal"]) for lab in model.score_items(read)
        ]
        figures[name] = {"refused": refused, "rollouts_per_second": round(len(shaped) / seconds, 1)}
    base = np.array(rewards["openai"])
    for name in SHAPES:
        diff = np.abs(np.array(rewards[name]) - base)
        figures[name]["max_abs_reward_diff"] = float(diff.max())
        figures[name]["differing_rollouts"] = int((diff > 1e-9).sum())
    n_calls = sum(len(m.tool_calls or []) for it in items for m in it.messages)
    data = "slice" if source.resolve() == SLICE.resolve() else "shared"
    out = {"trajectories": len(items), "tool_calls": n_calls, "source": str(source.name),
           "data": data, "shapes": figures}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{len(items)} tau-bench trajectories ({n_calls} tool calls), one reward model")
    for name, f in figures.items():
        print(f"  {name:<10} max |reward - openai| {f['max_abs_reward_diff']:.3g}  "
              f"differing {f['differing_rollouts']:>4}  refused {f['refused']:>4}  "
              f"{f['rollouts_per_second']:>8} rollouts/s read")  # fmt: skip


if __name__ == "__main__":
    main()
