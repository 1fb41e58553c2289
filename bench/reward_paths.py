"""Does a rollout's reward depend on how it reaches the server? Messages vs chat-template text.

An RL loop such as OpenRLHF sends the text the policy saw (its chat template applied)
and the prompt's text. Before tinyjudge read templates back into messages, that text
was scored as a user turn holding the whole templated prompt plus one assistant
turn: not what the reward model learned from. This script measures the shift on
SYCON's multi-turn push-back dialogues with a linear reward model distilled from
GPT-4o's labels: each dialogue is rendered with Qwen2.5's own chat template (from
its GGUF metadata, rendered by transformers' ``apply_chat_template``) and scored
three ways:

- messages: the OpenAI-style message list (``/get_reward`` with a list, or ``/score``);
- text, read back: the templated text, turned back into messages (today's path);
- text, flat: the templated text split at the prompt's text (the path before).

Prints the mean and largest reward difference to the messages path and the label
flips, and writes ``bench/results/reward_paths.json``.

The model reads what the rubric's ``reward_model`` block says (``--view`` and
``--combine`` override it). Since ``pushback_under_pressure`` reads the first user
turn, the first and the last answer, with each answer scored and the worst kept,
the flat path moves the reward far more than it did under the whole-window view:
split at the prompt, a dialogue is one user turn holding every earlier turn and
one answer, so the premise, the first answer and the earlier answers are no
longer where that view looks (``--view window --combine last`` gives the earlier
figure back).

    nice -n 10 .venv/bin/python bench/reward_paths.py [--n 1000] [--view window --combine last]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import distill
from tinyjudge.rubric import load_rubric
from tinyjudge.serve import query_to_item, reward_of, rollout_to_item

RESULTS = Path(__file__).parent / "results"
TEMPLATE = Path(__file__).parents[1] / "tests" / "serve" / "templates" / "qwen2.5_chatml.jinja"


def _tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    )
    tok.chat_template = TEMPLATE.read_text()
    return tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--n", type=int, default=1000, help="dialogues scored (a seeded sample)")
    ap.add_argument("--view", help="override the rubric's reward_model.view (e.g. window)")
    ap.add_argument("--combine", help="override its reward_model.combine (e.g. last)")
    ap.add_argument("--smoke", action="store_true", help="20 dialogues (the smoke test)")
    ap.add_argument("--out", type=Path, default=RESULTS / "reward_paths.json")
    args = ap.parse_args()
    if args.smoke:
        args.n = 20

    imported = run_import("sycon", args.data / "sycon")
    if args.smoke:  # distilled on the first 300 turns
        imported.items = imported.items[:300]
    rubric = load_rubric("pushback_under_pressure")
    reads = rubric.reward_model.model_copy(
        update={k: v for k, v in (("view", args.view), ("combine", args.combine)) if v}
    )
    rubric = rubric.model_copy(update={"reward_model": reads})
    model = distill(
        imported.items, imported.labels, "judge:gpt-4o", rubric,
        tier="linear", group_by="metadata.dialogue_id",
    ).model  # fmt: skip
    items = random.Random(0).sample(imported.items, min(args.n, len(imported.items)))
    tok = _tokenizer()
    as_dicts = [[m.model_dump(exclude_none=True) for m in it.messages] for it in items]
    texts = [tok.apply_chat_template(d, tokenize=False) for d in as_dicts]
    prompts = [
        tok.apply_chat_template(d[:-1], tokenize=False, add_generation_prompt=True)
        for d in as_dicts
    ]

    def rewards(built: list) -> tuple[np.ndarray, list[str | None]]:
        labels = model.score_items(built)
        return np.array([reward_of(lab) for lab in labels]), [lab.label for lab in labels]

    start = time.perf_counter()
    r_msg, l_msg = rewards([rollout_to_item(d, None, i) for i, d in enumerate(as_dicts)])
    r_read, l_read = rewards(
        [rollout_to_item(t, p, i) for i, (t, p) in enumerate(zip(texts, prompts, strict=True))]
    )
    r_flat, l_flat = rewards(
        [query_to_item(t, p, i) for i, (t, p) in enumerate(zip(texts, prompts, strict=True))]
    )
    turns = [len(d) for d in as_dicts]

    def compare(r: np.ndarray, lab: list) -> dict:
        diff = np.abs(r - r_msg)
        return {
            "mean_abs_diff": float(diff.mean()),
            "max_abs_diff": float(diff.max()),
            "label_flips": int(sum(a != b for a, b in zip(lab, l_msg, strict=True))),
        }

    result = {
        "data": "SYCON-Bench (pushback_under_pressure), seeded sample",
        "model": "linear, distilled from judge:gpt-4o (80% of SYCON dialogues, grouped)",
        "reward_model_view": reads.view,
        "reward_model_combine": reads.combine,
        "template": "Qwen2.5 ChatML (tokenizer.chat_template of Qwen2.5-Coder-1.5B-Instruct GGUF)",
        "n": len(items),
        "messages_per_dialogue": {
            "min": min(turns),
            "max": max(turns),
            "mean": float(np.mean(turns)),
        },
        "text_read_back": compare(r_read, l_read),
        "text_flat_split_at_prompt": compare(r_flat, l_flat),
        "seconds": round(time.perf_counter() - start, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
