"""hint_effect: the given answer's per-token log-probabilities with and without the hint,
under a real (tiny, untrained) Qwen2 policy with a real trained tokenizer."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import REPO, real_data

from tinyjudge.datasets.importers import run_import
from tinyjudge.errors import UsageError
from tinyjudge.hints import hint_effect, hint_rows, tool_error_hints
from tinyjudge.hints._effect import teacher_prompt


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    tb = real_data("tau_bench")
    if tb is None:
        pytest.skip("tau_bench: neither ../shared/data nor the bundled slice")
    items = run_import("tau_bench", tb).items
    got = hint_rows(items, tool_error_hints(items), format="messages").rows
    return sorted(got, key=lambda r: len(str(r["prompt"])))[:3]


@pytest.fixture(scope="module")
def policy(rows: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = REPO / "examples" / "sdpo_with_hints.py"
    spec = importlib.util.spec_from_file_location("sdpo_example", path)
    assert spec is not None and spec.loader is not None
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    return Path(ex.tiny_policy(rows, tmp_path_factory.mktemp("policy")))


def _hf_sum(model: Any, tok: Any, context: list[dict[str, Any]], answer: list[int]) -> float:
    """Sum of the answer's log-probabilities from transformers' own loss."""
    import torch

    head = tok.apply_chat_template(context, add_generation_prompt=True, return_dict=False)
    ids = torch.tensor([list(head) + answer])
    labels = ids.clone()
    labels[0, : len(head)] = -100
    with torch.no_grad():
        loss = model(input_ids=ids, labels=labels).loss
    return -float(loss) * len(answer)


def test_the_effect_is_the_difference_of_the_policys_own_log_probs(rows, policy) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(policy)
    tok = AutoTokenizer.from_pretrained(policy)
    effects = hint_effect(model, rows, tokenizer=tok)
    assert [e.item_id for e in effects] == [r["item_id"] for r in rows]
    for effect, row in zip(effects, rows, strict=True):
        text = "".join(effect.tokens)
        answer = row["completion"][0]
        assert text.startswith(answer["content"]) and text.rstrip().endswith("<|im_end|>")
        ids = [tok.convert_tokens_to_ids(t) for t in tok.tokenize(text)]
        plain = _hf_sum(model, tok, row["prompt"], ids)
        given = _hf_sum(model, tok, teacher_prompt(row["prompt"], row["privileged_context"]), ids)
        assert effect.without_hint.sum() == pytest.approx(plain, abs=1e-3)
        assert effect.with_hint.sum() == pytest.approx(given, abs=1e-3)
        assert np.allclose(effect.delta, effect.with_hint - effect.without_hint)
        assert np.abs(effect.delta).max() > 0  # the hint changes what the policy expects
        assert effect.mean == pytest.approx(float(effect.delta.mean()))


def test_no_hint_no_effect_and_the_message_context(rows, policy) -> None:
    same = [{**r, "hinted_prompt": r["prompt"]} for r in rows]
    for effect in hint_effect(str(policy), same, context="message"):
        assert np.array_equal(effect.with_hint, effect.without_hint)
    as_message = hint_effect(policy, rows, context="message")
    assert all(np.abs(e.delta).max() > 0 for e in as_message)


def test_bad_calls_are_one_line(rows, policy) -> None:
    from transformers import AutoModelForCausalLM

    with pytest.raises(UsageError, match=r"context must be one of 'sdpo', 'message', got 'x'"):
        hint_effect(policy, rows, context="x")
    with pytest.raises(UsageError, match=r"needs the policy's tokenizer"):
        hint_effect(AutoModelForCausalLM.from_pretrained(policy), rows)
    with pytest.raises(UsageError, match=r"a row lacks 'completion'"):
        hint_effect(policy, [{"prompt": rows[0]["prompt"], "privileged_context": "h"}])
    with pytest.raises(UsageError, match=r"must end on a user turn"):
        teacher_prompt([{"role": "assistant", "content": "a"}], "h")
