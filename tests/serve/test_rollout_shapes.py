"""The same rollout gets the same reward however it arrives at the reward server: OpenAI
messages, Anthropic blocks (with a top-level ``system``), Responses items, LangChain's
``messages_to_dict``, ChatML as Qwen's own template writes it, Llama 3 text, or an item
for ``/score``. What no reader knows is named in ``extra_logs`` and counted in /metrics."""

from __future__ import annotations

import httpx
import pytest
from transcript_shapes import (
    LLAMA3_TEXT,
    anthropic_request,
    langchain_messages,
    openai_messages,
    responses_exchange,
)

from tinyjudge.serve import create_app

from .conftest import running
from .test_rollouts import QWEN_TEMPLATE


def _chatml() -> str:
    """The rollout as Qwen2.5's real chat template writes it (transformers' renderer)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    )
    tok.chat_template = QWEN_TEMPLATE
    return str(tok.apply_chat_template(openai_messages(), tokenize=False))


def test_one_rollout_in_every_shape_gets_one_reward(linear_model) -> None:
    shapes = {
        "openai": openai_messages(),
        "anthropic": anthropic_request(),
        "anthropic-messages-only": anthropic_request()["messages"],
        "responses": responses_exchange(),
        "langchain": langchain_messages(),
        "chatml": _chatml(),
        "llama3": LLAMA3_TEXT,
    }
    with running(create_app(linear_model)) as url:
        got = httpx.post(f"{url}/get_reward", json={"query": list(shapes.values())})
        scored = httpx.post(f"{url}/score", json={"items": [anthropic_request()]})
    assert got.status_code == 200, got.text
    rewards = dict(zip(shapes, got.json()["rewards"], strict=True))
    # without its system turn the rollout reads differently: the reward tells the two apart
    assert rewards["anthropic-messages-only"] != pytest.approx(rewards["openai"], abs=1e-6)
    del rewards["anthropic-messages-only"]
    assert rewards == pytest.approx(dict.fromkeys(rewards, rewards["openai"]), abs=1e-12)
    assert scored.status_code == 200, scored.text
    assert scored.json()["labels"][0]["score"] == pytest.approx(rewards["openai"], abs=1e-12)
    assert "unread" not in scored.json()
    assert not [k for k in got.json()["extra_logs"] if k.startswith("unread")]


def test_top_level_system_is_read_not_refused(linear_model) -> None:
    """Anthropic's ``system`` beside ``messages`` (a request body) is the system turn."""
    body = {"items": [{"id": "a1", **anthropic_request()}]}
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/score", json=body)
        other = httpx.post(f"{url}/score", json={"items": [{"id": "a1", "messages": []}]})
    assert r.status_code == 200, r.text
    assert r.json()["labels"][0]["item_id"] == "a1"
    assert other.status_code == 422


def test_unknown_parts_are_named_in_extra_logs_and_metrics(linear_model) -> None:
    odd = openai_messages()
    odd[-1] = {"role": "assistant", "content": [{"type": "hologram", "data": "..."},
                                                  {"type": "text", "text": "Done."}]}  # fmt: skip
    items = [*responses_exchange()["input"], {"type": "quantum_call", "id": "q1"}]
    responses = {**responses_exchange(), "input": items}
    with running(create_app(linear_model)) as url:
        got = httpx.post(f"{url}/get_reward", json={"query": [openai_messages(), odd, responses]})
        scored = httpx.post(f"{url}/score", json={"items": [{"messages": odd}]})
        metrics = httpx.get(f"{url}/metrics").text
    logs = got.json()["extra_logs"]
    assert logs['unread content part "hologram"'] == [0.0, 1.0, 0.0]
    assert logs['unread Responses item "quantum_call"'] == [0.0, 0.0, 1.0]
    assert scored.json()["unread"] == {'content part "hologram"': 1}
    assert 'tinyjudge_unread_parts_total{part="content part \\"hologram\\""} 2' in metrics
    assert 'tinyjudge_unread_parts_total{part="Responses item \\"quantum_call\\""} 1' in metrics


def test_a_rollout_object_with_no_messages_answers_422(linear_model) -> None:
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": ["fine", {"model": "x"}]})
    assert r.status_code == 422
    assert r.json()["detail"].startswith("query 1: no messages")
