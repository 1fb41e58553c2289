"""The probe tier: frozen encoder embeddings (tiny BERT, and once the real MiniLM), the
on-disk embedding cache, chunking of long texts, save and load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tinyjudge.distill import ProbeRM, TrainingSet, load_model
from tinyjudge.distill._embed import EmbeddingCache, FrozenEncoder
from tinyjudge.errors import TinyjudgeError


@pytest.fixture(scope="module")
def fitted(tiny_bert: Path, small: TrainingSet, tmp_path_factory) -> ProbeRM:
    cache = tmp_path_factory.mktemp("emb_cache")
    return ProbeRM(
        "compliance", name="probe-test", encoder=str(tiny_bert), cache_dir=str(cache), max_length=64
    ).fit(small.items, small.y_hard)


def test_probe_fits_predicts_and_records_tokens(fitted: ProbeRM, small: TrainingSet) -> None:
    P = fitted.predict_proba(small.items)
    assert P.shape == (len(small.items), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(np.array(fitted.predict(small.items)) == np.array(small.y_hard)) > 0.9
    assert fitted.card_["tokens_seen"] > 64 * 10  # long replies were read in full


def test_probe_save_then_load_gives_identical_scores(fitted: ProbeRM, small, tmp_path) -> None:
    d = fitted.save(tmp_path / "m")
    again = load_model(d)
    assert again.tier == "probe" and again.encoder == fitted.encoder
    np.testing.assert_array_equal(
        again.predict_proba(small.items), fitted.predict_proba(small.items)
    )


def test_long_texts_are_chunked_not_truncated(tiny_bert: Path, tmp_path: Path) -> None:
    enc = FrozenEncoder(str(tiny_bert), max_length=16, cache_dir=tmp_path, bf16=False)
    short = "the cat sat on the mat"
    long = " ".join(["the cat sat on the mat"] * 30)  # ~180 tokens, 13 chunks of 14
    vecs = enc.embed([short, long])
    assert vecs.shape == (2, 32)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    n_long = len(enc.tokenizer(long, add_special_tokens=False)["input_ids"])
    assert enc.tokens_seen == n_long + 6
    # The pooled chunks of a repeated sentence stay close to the sentence itself.
    assert float(vecs[0] @ vecs[1]) > 0.8


def test_embeddings_come_from_the_cache(tiny_bert: Path, tmp_path: Path) -> None:
    texts = ["I can't help with that.", "Sure, here is how."]
    first = FrozenEncoder(str(tiny_bert), cache_dir=tmp_path, bf16=False).embed(texts)
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    assert cache._db.execute("SELECT COUNT(*) FROM emb").fetchone()[0] == 2
    # Overwrite one cached vector on disk: a new encoder must serve it from there.
    marker = np.full(first.shape[1], 0.5, dtype=np.float32)
    with cache._db:
        cache._db.execute("UPDATE emb SET vec = ?", (marker.tobytes(),))
    again = FrozenEncoder(str(tiny_bert), cache_dir=tmp_path, bf16=False).embed(texts)
    np.testing.assert_array_equal(again, np.stack([marker, marker]))
    # Other settings are other keys: computed afresh, not taken from the cache.
    other = FrozenEncoder(str(tiny_bert), max_length=32, cache_dir=tmp_path, bf16=False)
    np.testing.assert_allclose(other.embed(texts), first, atol=1e-5)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"views": "opening,vibes"}, r"views 'opening,vibes': expected a comma-separated subset"),
        ({"encoder": "/nonexistent/encoder"}, r"cannot load encoder '/nonexistent/encoder'"),
    ],
    ids=["bad-view", "missing-encoder"],
)
def test_probe_errors(small, tmp_path: Path, tiny_bert: Path, params, match) -> None:
    params = {"encoder": str(tiny_bert), "cache_dir": str(tmp_path), **params}
    with pytest.raises(TinyjudgeError, match=match):
        ProbeRM(**params).fit(small.items[:20], small.y_hard[:20])


def test_probe_with_real_minilm(small: TrainingSet, tmp_path: Path) -> None:
    """The real all-MiniLM-L6-v2 weights (offline package) on a handful of items."""
    items = small.items[:6] + small.items[-6:]
    y = small.y_hard[:6] + small.y_hard[-6:]
    model = ProbeRM(cache_dir=str(tmp_path), max_length=128).fit(items, y)
    enc = model._encoder()
    assert enc.model.config.hidden_size == 384 and enc.model.config.num_hidden_layers == 6
    e = enc.embed(
        [
            "I'm sorry, but I can't help with that.",
            "I cannot assist with this.",
            "Here is a recipe for banana bread.",
        ]
    )
    # A real sentence encoder puts two refusals closer than a refusal and a recipe.
    assert float(e[0] @ e[1]) > float(e[0] @ e[2])
    np.testing.assert_allclose(model.predict_proba(items).sum(axis=1), 1.0)
