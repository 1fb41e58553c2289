"""A frozen sentence encoder with an on-disk embedding cache, for the probe tier.

Texts longer than the encoder's window are embedded in consecutive chunks whose
embeddings are averaged (weighted by chunk length): nothing is truncated, and
the tokens seen are counted. Embeddings are cached in SQLite by a hash of the
encoder, the settings and the text, so a second fit over the same items is free.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge._cache import default_cache_dir
from tinyjudge._progress import progress

from ._shapes import SHAPES_VERSION, padded_batch

# Where they were first defined; the Hugging Face seam owns them now.
from .hf import (
    BF16_MIN_SPEEDUP,
    MINILM,
    SAFE_LOAD,
    PairCodec,
    bf16_fast,
    bf16_speedup,
    check_hf_dir,
    check_vocab,
    hf_call,
    resolve_encoder,
)

__all__ = [
    "MINILM",
    "BF16_MIN_SPEEDUP",
    "resolve_encoder",
    "bf16_fast",
    "bf16_speedup",
    "default_cache_dir",
    "EmbeddingCache",
    "FrozenEncoder",
]


class EmbeddingCache:
    """float32 vectors in SQLite, keyed by a content hash; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB, n_tokens INTEGER)"
        )

    def get(self, keys: Sequence[str]) -> dict[str, tuple[np.ndarray, int]]:
        found: dict[str, tuple[np.ndarray, int]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = list(keys[start : start + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, vec, n_tokens FROM emb WHERE key IN ({marks})", part
                )
                for key, blob, n in rows:
                    found[key] = (np.frombuffer(blob, dtype=np.float32), int(n))
        return found

    def put(self, entries: dict[str, tuple[np.ndarray, int]]) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO emb VALUES (?, ?, ?)",
                [(k, v.astype(np.float32).tobytes(), n) for k, (v, n) in entries.items()],
            )


class FrozenEncoder:
    """Mean-pooled, L2-normalised sentence embeddings from a frozen transformer.

    Args:
        model: a local path or hub id (``all-MiniLM-L6-v2`` resolves offline).
        max_length: tokens per chunk, special tokens included.
        batch_size: chunks per forward pass.
        bf16: run under bfloat16 autocast (fast on CPUs with BF16 units);
            ``None`` picks it when the CPU supports it.
        cache_dir: where ``embeddings.sqlite`` lives; ``None`` for the default.
    """

    def __init__(
        self,
        model: str = MINILM,
        max_length: int = 256,
        batch_size: int = 32,
        bf16: bool | None = None,
        cache_dir: str | Path | None = None,
    ):
        from transformers import AutoModel, AutoTokenizer

        path = resolve_encoder(model)
        check_hf_dir(path)
        who = f"cannot load encoder {model!r} ({path})"
        self.tokenizer = hf_call(
            who, lambda: AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        )
        self.model = hf_call(who, lambda: AutoModel.from_pretrained(path, **SAFE_LOAD).eval())
        check_vocab(self.tokenizer, self.model, path)
        self._codec = PairCodec(self.tokenizer, token_types=False)
        self.max_length = max_length
        self.batch_size = batch_size
        self.bf16 = bf16_fast() if bf16 is None else bf16
        self.cache = EmbeddingCache(Path(cache_dir or default_cache_dir()) / "embeddings.sqlite")
        # The padding shape moves bfloat16 results a little: part of the identity too.
        ident = (
            f"{path}|{self.model.config.to_json_string()}|{max_length}|{self.bf16}|{SHAPES_VERSION}"
        )
        self._ident = hashlib.sha256(ident.encode()).hexdigest()
        self._lock = threading.Lock()
        self.tokens_seen = 0

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self._ident}\0{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text; long texts are chunked and pooled, never cut."""
        keys = [self._key(t) for t in texts]
        found = self.cache.get(sorted(set(keys)))
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if todo:
            fresh = self._compute(list(todo.values()))
            new = dict(zip(todo, fresh, strict=True))
            self.cache.put(new)
            found.update(new)
        self.tokens_seen += sum(found[k][1] for k in keys)
        return np.stack([found[k][0] for k in keys])

    def _compute(self, texts: list[str]) -> list[tuple[np.ndarray, int]]:
        import torch

        body = self.max_length - self._codec.n_special_single  # room for the specials
        with self._lock:  # the fast tokenizer's settings are shared state
            ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        chunks: list[list[int]] = []
        owner: list[int] = []
        for i, seq in enumerate(ids):
            for start in range(0, max(len(seq), 1), body):
                chunks.append(self._codec.wrap(seq[start : start + body]))
                owner.append(i)
        vecs = np.zeros((len(chunks), self.model.config.hidden_size), dtype=np.float32)
        weights = np.array([len(c) for c in chunks], dtype=np.float32)
        order = np.argsort(weights)  # similar lengths together: less padding
        what = f"embedding {len(texts):,} texts ({len(chunks):,} chunks)"
        with progress(what, len(chunks)) as advance:
            for s in range(0, len(chunks), self.batch_size):
                idx = order[s : s + self.batch_size]
                vecs[idx] = self._forward([chunks[j] for j in idx], torch)
                advance(len(idx))
        out = []
        owner_arr = np.array(owner)
        for i, seq in enumerate(ids):
            mask = owner_arr == i
            v = (vecs[mask] * weights[mask, None]).sum(axis=0)
            out.append((v / max(float(np.linalg.norm(v)), 1e-12), len(seq)))
        return out

    def _forward(self, chunks: list[list[int]], torch: Any) -> np.ndarray:
        batch = padded_batch(
            chunks,
            self.tokenizer.pad_token_id or 0,
            max_width=getattr(self.model.config, "max_position_embeddings", None),
        )
        input_ids = torch.from_numpy(batch["input_ids"])
        mask = torch.from_numpy(batch["attention_mask"])
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=self.bf16):
            hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).float()
        pooled = (hidden.float() * m).sum(1) / m.sum(1).clamp(min=1.0)
        return pooled[: len(chunks)].numpy()
