"""Hints at failing steps as rows for TRL's self-distillation trainers, on real trajectories.

Two sources of hinted steps:

- tau-bench (gpt-4o airline): every failed tool call (a result starting ``Error``), with
  the rule's hint (``tool_error_hints``: the failed call, the error, the tools it has);
- Who&When (Algorithm-Generated): the step people blamed, with their written reason
  (``hint_from="rationale"``).

For each: rows written, rows refused and why, hints flagged as copying the expected
answer (``metadata`` targets, rubric references), the median prompt length in tokens
(the rows' prompts as the tiny policy's chat template renders them, under a real released
vocabulary, all-MiniLM-L6-v2's WordPiece, and as words), and the
mean hint effect on the given answer (``hint_effect``: per-token log-probability with the
hint minus without, averaged over the answer, then over rows) next to the same rows with
the hints shuffled across items. The policy is a tiny Qwen2 built from a config with a
tokenizer trained on the rows (no decoder weights are available offline): untrained, so
its effects show the mechanism's noise floor, not what a hint does to a trained model.

    nice -n 10 .venv/bin/python bench/hints.py [--smoke] [--data ../shared/data]

Writes ``bench/results/hints.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from tinyjudge.datasets.importers import run_import
from tinyjudge.hints import HintRows, hint_effect, hint_rows, shuffle_hints, tool_error_hints

RESULTS = Path(__file__).parent / "results" / "hints.json"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sdpo_with_hints.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("sdpo_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prompt_tokens(tok: Any, rows: list[dict[str, Any]]) -> list[int]:
    return [
        len(tok.apply_chat_template(r["prompt"], add_generation_prompt=True, return_dict=False))
        for r in rows
    ]


def _words(rows: list[dict[str, Any]]) -> list[int]:
    return [sum(len(str(m["content"]).split()) for m in r["prompt"]) for r in rows]


def _wordpiece(rows: list[dict[str, Any]]) -> list[int] | None:
    """Prompt tokens under a real released vocabulary (all-MiniLM-L6-v2's WordPiece)."""
    from transformers import AutoTokenizer

    from tinyjudge.distill.hf import resolve_encoder

    try:
        tok = AutoTokenizer.from_pretrained(resolve_encoder("all-MiniLM-L6-v2"))
    except OSError:  # the package that carries it offline is not installed
        return None
    text = ["\n".join(str(m["content"]) for m in r["prompt"]) for r in rows]
    return [len(ids) for ids in tok(text, add_special_tokens=False)["input_ids"]]


def _summary(got: HintRows) -> dict[str, Any]:
    return {
        "labels": got.labels,
        "rows_written": len(got.rows),
        "refused": got.refused_by_kind,
        "refused_examples": [str(r) for r in got.refused[:3]],
        "leaks_flagged": len(got.leaks),
        "leaks": [str(x) for x in got.leaks],
    }


def _effects(policy: Path, rows: list[dict[str, Any]], max_context: int) -> dict[str, Any]:
    """Mean per-row effect of the hints, and of the same rows with hints shuffled."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(policy)
    tok = AutoTokenizer.from_pretrained(policy)
    own = [e.mean for e in hint_effect(model, rows, tokenizer=tok, max_context=max_context)]
    moved = shuffle_hints(rows, seed=0)
    ctl = [e.mean for e in hint_effect(model, moved, tokenizer=tok, max_context=max_context)]
    diff = [a - b for a, b in zip(own, ctl, strict=True)]
    return {
        "rows": len(rows),
        "mean_effect_hint": statistics.fmean(own) if own else None,
        "mean_effect_shuffled": statistics.fmean(ctl) if ctl else None,
        "mean_hint_minus_shuffled": statistics.fmean(diff) if diff else None,
        "share_rows_hint_above_shuffled": (sum(d > 0 for d in diff) / len(diff) if diff else None),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true", help="a few rows per set (a test)")
    ap.add_argument("--effect-rows", type=int, default=40, help="rows per set scored")
    ap.add_argument("--max-context", type=int, default=4096, help="context tokens kept")
    args = ap.parse_args()
    n_effect = 3 if args.smoke else args.effect_rows

    tb = run_import("tau_bench", args.data / "tau_bench")
    ww = run_import("who_and_when", args.data / "who_and_when")
    sets = {
        "tau_bench": hint_rows(tb.items, tool_error_hints(tb.items)),
        "who_and_when": hint_rows(ww.items, ww.labels, hint_from="rationale"),
    }
    out: dict[str, Any] = {
        "data": str(args.data),
        "smoke": args.smoke,
        "hint_sources": {
            "tau_bench": "rule:tool_error (tool_error_hints) at each failed tool result",
            "who_and_when": "human:who_and_when mistake_reason at mistake_step (--from rationale)",
        },
        "policy": "tiny Qwen2 (2 layers, width 32, random weights) with a byte-level BPE "
        "(800 tokens) trained on the rows' text: the effects are an untrained model's",
        "sets": {},
    }
    ex = _example()
    with tempfile.TemporaryDirectory() as tmp:
        every = [r for got in sets.values() for r in got.rows]
        policy = Path(ex.tiny_policy(every, Path(tmp) / "policy"))
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(policy)
        for name, got in sets.items():
            figures = _summary(got)
            if got.rows:
                figures["median_prompt_tokens"] = statistics.median(_prompt_tokens(tok, got.rows))
                figures["median_prompt_words"] = statistics.median(_words(got.rows))
                wordpiece = _wordpiece(got.rows)
                if wordpiece is not None:
                    figures["median_prompt_tokens_minilm_wordpiece"] = statistics.median(wordpiece)
            # evenly spread rows: the effect does not depend on which end of the file
            step = max(1, len(got.rows) // n_effect)
            picked = got.rows[::step][:n_effect]
            figures["hint_effect"] = _effects(policy, picked, args.max_context)
            out["sets"][name] = figures
            print(
                f"{name}: {got.summary()}; median prompt "
                f"{figures.get('median_prompt_tokens')} tokens; hint effect "
                f"{figures['hint_effect']['mean_effect_hint']:.4f} vs shuffled "
                f"{figures['hint_effect']['mean_effect_shuffled']:.4f} "
                f"({figures['hint_effect']['rows']} rows)"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"-> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
