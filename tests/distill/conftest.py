"""Fixtures for the distill tests: the bundled XSTest sample as items and judge labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.importers import Imported, run_import
from tinyjudge.distill import TrainingSet, training_set

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "xstest_sample"


@pytest.fixture(scope="session")
def xs() -> Imported:
    """The bundled 500-row XSTest sample (items plus human and GPT-4 labels)."""
    return run_import("xstest", SAMPLE)


@pytest.fixture(scope="session")
def xs_set(xs: Imported) -> TrainingSet:
    """GPT-4's labels on the sample, ready to fit."""
    return training_set(xs.items, xs.labels, "judge:gpt-4", "compliance")


@pytest.fixture(scope="session")
def small(xs_set: TrainingSet) -> TrainingSet:
    """120 items with all three labels present, for the slow tiers' unit tests."""
    picked: list[int] = []
    for want in ("partial_refusal", "full_refusal", "full_compliance"):
        picked += [i for i, y in enumerate(xs_set.y_hard) if y == want][:40]
    picked.sort()
    return TrainingSet(
        [xs_set.items[i] for i in picked],
        [xs_set.y_hard[i] for i in picked],
        xs_set.y_soft[picked],
        0,
    )


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer, 32-wide BERT from a config, with the real all-MiniLM-L6-v2 tokenizer.

    Random weights, real tokenization: fast enough for unit tests of training,
    saving, export and loading, with the same code paths as MiniLM.
    """
    from transformers import AutoTokenizer, BertConfig, BertModel

    from tinyjudge.distill.hf import resolve_encoder

    d = tmp_path_factory.mktemp("tiny_bert")
    tok = AutoTokenizer.from_pretrained(resolve_encoder("all-MiniLM-L6-v2"))
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    import torch

    torch.manual_seed(0)
    BertModel(config).save_pretrained(d)
    tok.save_pretrained(d)
    return d


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _decoder_tokenizer(xs: Imported, chat: bool) -> object:
    """A 600-token byte-level BPE trained on the sample's texts with ``tokenizers``.

    ``chat``: ChatML specials and template, pad = eos (as many decoders ship);
    otherwise Llama-like ``<s>``/``</s>`` with no pad and no template.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if chat else ["<s>", "</s>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    texts = [m.text for it in xs.items[:300] for m in it.messages]
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=600,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    if chat:
        tok = PreTrainedTokenizerFast(
            tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|im_end|>"
        )
        tok.chat_template = CHATML
    else:
        tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>")
    return tok


@pytest.fixture(scope="session")
def tiny_decoders(xs: Imported, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 2-layer, 32-wide Qwen2 (ChatML template, pad = eos) and Llama (no template, no
    pad), each saved as a causal LM with its own small tokenizer, as users start from."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    shape = {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 512,
    }
    out = {}
    for name, config_cls, model_cls, chat in (
        ("qwen2", Qwen2Config, Qwen2ForCausalLM, True),
        ("llama", LlamaConfig, LlamaForCausalLM, False),
    ):
        d = tmp_path_factory.mktemp(f"tiny_{name}")
        tok = _decoder_tokenizer(xs, chat)
        config = config_cls(
            vocab_size=len(tok),
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.bos_token_id,
            **shape,
        )
        torch.manual_seed(0)
        model_cls(config).save_pretrained(d)
        tok.save_pretrained(d)
        out[name] = d
    return out
