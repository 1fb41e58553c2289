"""Test servers and fakes, for tinyjudge's own tests and for yours.

These are real, not mocks: :class:`LocalServer` is an OpenAI-compatible HTTP server
on 127.0.0.1 that answers chat completions from a *responder* (a function of the
:class:`Request` returning a :class:`Reply` or a :class:`Fault`), so a
:class:`~tinyjudge.judge.Judge` pointed at its ``base_url`` runs its whole path
(HTTP, retries, logprobs, the cache). :func:`replay_server` answers from recorded
labels (a public set's GPT-4 verdicts): the keyless demo uses it, and so can a test
of your pipeline. :func:`tiny_decoder` saves a small random-weight Qwen2 or Llama
causal LM with a tokenizer trained on your texts, for runs that need a policy or a
backbone without downloading one.

    >>> from tinyjudge.testing import LocalServer, Reply
    >>> with LocalServer(lambda request: Reply("Verdict: compliance")) as base_url:
    ...     base_url.startswith("http://127.0.0.1:")
    True

The judge's runner never imports this module; it sits above the judge (floor 1), and the
CLI's ``--replay`` and the demo reach the replay server through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tinyjudge._faces import lazy_names

# The servers live in the judge (they recognise its prompts by their fence nonce, the
# judge's own), privately: this module is their one public face.
from tinyjudge.judge._replay import Fault as Fault
from tinyjudge.judge._replay import LocalServer as LocalServer
from tinyjudge.judge._replay import Reply as Reply
from tinyjudge.judge._replay import Request as Request
from tinyjudge.judge._replay import Responder as Responder
from tinyjudge.judge._replay import completion_body as completion_body
from tinyjudge.judge._replay import load_replay_labels as load_replay_labels
from tinyjudge.judge._replay import replay_responder as replay_responder
from tinyjudge.judge._replay import replay_server as replay_server

# ChatML, as Qwen2 writes it, with assistant tool calls shown inline.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}\n<tool_call>"
    "{{ c['function']['name'] }} {{ c['function']['arguments'] }}</tool_call>"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# The smallest shape that still has grouped-query attention: a test's policy in seconds.
TINY_SHAPE = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 64,
}


def tiny_decoder(
    texts: Iterable[str],
    out_dir: Path,
    *,
    family: str = "qwen2",
    shape: Mapping[str, int] | None = None,
    vocab_size: int = 800,
    max_positions: int = 4096,
    tie_embeddings: bool = False,
) -> Path:
    """A random-weight causal LM with a byte-level BPE trained on ``texts``, saved in ``out_dir``.

    No decoder weights are packaged and the Hub is not reached: the model's shape is a
    config, its tokenizer learns ``texts`` (ChatML specials and template), and
    ``from_pretrained(out_dir)`` loads both. Seeded, so the same texts give the same model.
    torch, transformers and tokenizers load only when this is called.

    Args:
        texts: the text the tokenizer is trained on.
        out_dir: where the model and tokenizer are saved.
        family: ``"qwen2"`` or ``"llama"``.
        shape: config fields (``hidden_size``, ``num_hidden_layers``, ...);
            :data:`TINY_SHAPE` when not given. The model's vocabulary is the trained
            tokenizer's unless ``shape`` names a ``vocab_size``.
        vocab_size: the tokenizer's vocabulary.
        max_positions: ``max_position_embeddings``.
        tie_embeddings: share the input embedding with the output head.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    config_cls: Any
    model_cls: Any
    config_cls, model_cls = {
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
        "llama": (LlamaConfig, LlamaForCausalLM),
    }[family]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        list(texts),
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = CHATML
    config = config_cls(
        **{"vocab_size": len(tok), **(shape or TINY_SHAPE)},
        max_position_embeddings=max_positions,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=tie_embeddings,
    )
    torch.manual_seed(0)
    model_cls(config).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


_, __dir__ = lazy_names(__name__)
