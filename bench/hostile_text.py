"""How reading chat text back into messages grows with the text: attack shapes and real turns.

The backtracking patterns this replaced took 6.5 s on a 48 KB body of ``" <eos>"`` and 84 s
on ``"<think>"`` x 40,000 (issue 25), time growing with the square of the length. This
script times :func:`tinyjudge.serve.parse_chat_text` on each attack shape at 1x, 2x and 4x
a base size, and on ordinary multi-turn ChatML of the same sizes, and reports the time
ratio per doubling (2 is linear; 4 would be quadratic).

    nice -n 10 .venv/bin/python bench/hostile_text.py

Writes ``bench/results/hostile_text.json`` (``--out``). ``--smoke`` times a base of 1,000
with one repeat (the smoke test: its ratios mean nothing).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from tinyjudge.serve import parse_chat_text

RESULTS = Path(__file__).parent / "results" / "hostile_text.json"
USER = "<|im_start|>user\nhi<|im_end|>\n"
ASSISTANT = "<|im_start|>assistant\n"
TURN = (
    "<|im_start|>user\nPlease check order 42.<|im_end|>\n<|im_start|>assistant\n"
    "<think>look it up</think>Checking.<tool_call>\n"
    '{"name": "lookup", "arguments": {"order": 42}}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\n<tool_response>\nshipped\n</tool_response><|im_end|>\n"
)
SHAPES: dict[str, Callable[[int], str]] = {
    "eos-near-miss": lambda n: USER + ASSISTANT + " <eos>" * n + "x",
    "unclosed-think": lambda n: USER + ASSISTANT + "<think>" * n,
    "unclosed-tool-call": lambda n: USER + ASSISTANT + "<tool_call>" * n,
    "unclosed-tool-response": lambda n: "<|im_start|>user\n" + "<tool_response>" * n,
    "newlines-before-tools": lambda n: "<|im_start|>system\n" + "\n" * (5 * n) + "<|im_end|>",
    "real-turns": lambda n: TURN * max(1, n // 40),
}
BASE = 40_000


def _seconds(text: str, repeats: int = 7) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        parse_chat_text(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true", help="a base of 1,000, one repeat (a test)")
    args = ap.parse_args()
    base, repeats = (1_000, 1) if args.smoke else (BASE, 7)
    out: dict[str, dict[str, object]] = {}
    for name, make in SHAPES.items():
        sizes, times = [], []
        for scale in (1, 2, 4):
            text = make(base * scale)
            sizes.append(len(text))
            times.append(_seconds(text, repeats))
        ratios = [round(times[i + 1] / times[i], 2) for i in range(2)]
        out[name] = {"chars": sizes, "seconds": [round(t, 5) for t in times], "ratio": ratios}
        mb_s = sizes[-1] / times[-1] / 1e6
        print(
            f"{name:24s} {sizes[-1]:>10,d} chars in {times[-1] * 1000:8.1f} ms "
            f"({mb_s:6.1f} M chars/s); time ratio per doubling {ratios}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
