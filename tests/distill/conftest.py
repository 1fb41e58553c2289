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

    from tinyjudge.distill import resolve_encoder

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
