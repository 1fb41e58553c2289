"""The linear tier: TF-IDF word and character n-grams, and logistic regression.

Saved without pickle: each vocabulary and its IDF weights as JSON and
safetensors, the regression's coefficients as safetensors.
"""

from __future__ import annotations

import json
import re
from functools import partial
from itertools import repeat
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from scipy import sparse

from tinyjudge.errors import ModelDirError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._base import RewardModel, class_balance, model_rubric
from ._charhash import CharNgramCounter, tally
from ._configs import LinearConfig
from ._configured import Configured
from ._text import View, item_views, opening

__all__ = ["LinearRM", "TextFeatures", "SoftLogistic"]

# Which text each vectorizer reads, and how. The reply's opening gets character
# n-grams of its own because refusals ("I'm sorry, but I can't") show there. The
# rubric's references (when the model reads them) are a block of their own, so a
# word in the correct answer is not mistaken for the same word in the reply.
_SPECS: dict[str, dict[str, Any]] = {
    "response_words": {"field": "response", "analyzer": "word", "ngram_range": (1, 2)},
    "opening_chars": {"field": "opening", "analyzer": "char_wb", "ngram_range": (2, 5)},
    "context_words": {"field": "context", "analyzer": "word", "ngram_range": (1, 1)},
    "reference_words": {"field": "references", "analyzer": "word", "ngram_range": (1, 1)},
}


def _field_texts(
    items: list[Item], opening_chars: int, view: str = "window", rubric: Rubric | None = None
) -> dict[str, list[str]]:
    return _view_fields([item_views(it, view, rubric)[0] for it in items], opening_chars)


def _view_fields(views: list[View], opening_chars: int) -> dict[str, list[str]]:
    return {
        "context": [v.context for v in views],
        "opening": [opening(v.response, opening_chars) for v in views],
        "response": [v.response for v in views],
        "references": [v.references for v in views],
    }


_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token_pattern


def _word_grams(doc: str, ngram_range: tuple[int, int]) -> list[str]:
    """scikit-learn's ``word`` analyzer (lowercased, default tokens), with fewer steps."""
    tokens = _TOKEN.findall(doc.lower())
    lo, hi = ngram_range
    out = tokens[:] if lo == 1 else []
    for n in range(max(lo, 2), hi + 1):
        out += map(" ".join, zip(*(tokens[k:] for k in range(n)), strict=False))
    return out


def _count_words(
    vocab: dict[str, int], analyze: Any, texts: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, count) of the vocabulary's n-grams (``analyze``'s) in each text."""
    # One dict.get per n-gram through map (CountVectorizer.transform raises and
    # catches a KeyError per unknown one), then a single count for the batch.
    cols: list[int] = []
    lengths: list[int] = []
    get = vocab.get
    for doc in texts:
        grams = analyze(doc)
        cols.extend(map(get, grams, repeat(-1)))
        lengths.append(len(grams))
    c = np.array(cols, dtype=np.int64)
    r = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    known = c >= 0
    return tally(r[known], c[known], len(vocab))


class TextFeatures:
    """Sparse TF-IDF features of an item's views; fitted once, then fixed.

    The transform is a fixed-vocabulary count, sublinear TF, IDF and L2
    normalisation per view, so a reloaded model reproduces scores exactly.
    """

    def __init__(
        self,
        opening_chars: int = 150,
        max_features: int = 50000,
        min_df: int = 2,
        view: str = "window",
        rubric: Rubric | None = None,
    ):
        self.opening_chars = opening_chars
        self.view = view
        self.rubric = rubric
        self.max_features = max_features
        self.min_df = min_df
        self.vocab_: dict[str, dict[str, int]] = {}
        self.idf_: dict[str, np.ndarray] = {}
        self._counters: dict[str, Any] = {}

    def fit(self, items: list[Item]) -> TextFeatures:
        from sklearn.feature_extraction.text import TfidfVectorizer

        fields = _field_texts(items, self.opening_chars, self.view, self.rubric)
        self._counters = {}  # bound to the previous vocabulary
        for name, spec in _SPECS.items():
            texts = fields[spec["field"]]
            vec = TfidfVectorizer(
                analyzer=spec["analyzer"],
                ngram_range=spec["ngram_range"],
                min_df=min(self.min_df, len(texts)),
                max_features=self.max_features,
                sublinear_tf=True,
                dtype=np.float32,
            )
            try:
                vec.fit(texts)
            except ValueError:  # e.g. every context empty: that view carries nothing
                continue
            self.vocab_[name] = {t: int(i) for t, i in vec.vocabulary_.items()}
            self.idf_[name] = vec.idf_.astype(np.float32)
        return self

    def _counter(self, name: str) -> Any:
        """A function from texts to (row, column, count) arrays for view ``name``."""
        if name not in self._counters:
            spec = _SPECS[name]
            if spec["analyzer"] == "char_wb":
                self._counters[name] = CharNgramCounter(
                    self.vocab_[name], spec["ngram_range"]
                ).counts
            else:
                analyze = partial(_word_grams, ngram_range=spec["ngram_range"])
                self._counters[name] = partial(_count_words, self.vocab_[name], analyze)
        return self._counters[name]

    def transform(self, items: list[Item]) -> sparse.csr_matrix:
        """TF-IDF rows as scikit-learn's TfidfVectorizer gives them, to float32 rounding.

        Per view: sublinear TF (``1 + log count``), times IDF, L2-normalised per
        row; the views sit side by side in one matrix.
        """
        return self.transform_views([item_views(it, self.view, self.rubric)[0] for it in items])

    def transform_views(self, views: list[View]) -> sparse.csr_matrix:
        """:meth:`transform` of the views of single items."""
        fields = _view_fields(views, self.opening_chars)
        rows, cols, vals, offset = [], [], [], 0
        for name in self.vocab_:
            r, c, n = self._counter(name)(fields[_SPECS[name]["field"]])
            v = (1.0 + np.log(n, dtype=np.float64)) * self.idf_[name][c]
            norm = np.sqrt(np.bincount(r, weights=v * v, minlength=len(views)))
            rows.append(r)
            cols.append(c + offset)
            vals.append(v / norm[r])
            offset += len(self.vocab_[name])
        r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        order = np.argsort(r, kind="stable")  # each view is sorted by row: a merge
        indptr = np.zeros(len(views) + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=len(views)), out=indptr[1:])
        return sparse.csr_matrix(
            (v[order].astype(np.float32), c[order], indptr), shape=(len(views), offset)
        )

    @property
    def n_features(self) -> int:
        return sum(len(v) for v in self.vocab_.values())

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON-able vocabularies and options, arrays) for saving."""
        meta = {"opening_chars": self.opening_chars, "vocab": self.vocab_}
        return meta, {f"idf.{k}": v for k, v in self.idf_.items()}

    @classmethod
    def from_state(
        cls,
        meta: dict[str, Any],
        arrays: dict[str, np.ndarray],
        view: str = "window",
        rubric: Rubric | None = None,
    ) -> TextFeatures:
        feats = cls(opening_chars=meta["opening_chars"], view=view, rubric=rubric)
        feats.vocab_ = {k: dict(v) for k, v in meta["vocab"].items()}
        feats.idf_ = {k: arrays[f"idf.{k}"] for k in feats.vocab_}
        for name, vocab in feats.vocab_.items():
            # every index a column of its IDF array: one out of it (10^9) would fail at scoring
            n = len(feats.idf_[name])
            bad = next((i for i in vocab.values() if type(i) is not int or not 0 <= i < n), None)
            if bad is not None or len(vocab) != n:
                shown = f"index {str(bad)[:40]}" if bad is not None else f"{len(vocab)} entries"
                raise ModelDirError(
                    f"the {name} vocabulary has {shown}; allowed: indices 0..{n - 1}, "
                    "one per IDF weight; re-distill the model"
                )
        return feats


class SoftLogistic:
    """Multinomial logistic regression on soft targets with balanced class mass.

    scikit-learn's LogisticRegression takes hard labels only, so each item is
    repeated once per class it has mass on, weighted by that mass.

    A class with no mass in the training targets (a rubric label the teacher
    never gave) still gets a probability: ``1 / (n + k)`` for ``n`` training
    items and ``k`` classes, the posterior mean of a class seen 0 times in ``n``
    under a uniform prior. Never 0, so a calibrator fitted on people who do use
    that label is not driven to extremes by ``log 0``.
    """

    def __init__(self, C: float = 10.0, max_iter: int = 2000, balanced: bool = True):
        self.C = C
        self.max_iter = max_iter
        self.balanced = balanced

    def fit(self, X: Any, Y: np.ndarray, sample_weight: np.ndarray | None = None) -> SoftLogistic:
        from sklearn.linear_model import LogisticRegression

        s = np.ones(len(Y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        row = class_balance(Y, s) if self.balanced else s
        rows, cols = np.nonzero((Y > 0) & (row[:, None] > 0))
        weight = (Y * row[:, None])[rows, cols]
        lr = LogisticRegression(C=self.C, max_iter=self.max_iter)
        Xr = X[rows]
        lr.fit(Xr, cols, sample_weight=weight * len(rows) / weight.sum())
        self.k_ = Y.shape[1]
        self.present_ = lr.classes_.astype(np.int64)
        self.absent_p_ = 1.0 / (Y.shape[0] + self.k_)
        coef, intercept = lr.coef_, lr.intercept_
        if len(self.present_) == 2:  # binary LR keeps one row: make it a softmax pair
            coef = np.vstack([-coef[0] / 2, coef[0] / 2])
            intercept = np.array([-intercept[0] / 2, intercept[0] / 2])
        self.coef_ = coef.astype(np.float32)
        self.intercept_ = intercept.astype(np.float32)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        logits = np.asarray(X @ self.coef_.T) + self.intercept_
        logits -= logits.max(axis=1, keepdims=True)
        # shares taken in float64: the present classes' mass is then 1 - absent to 1e-16, so
        # the renormalisation that follows leaves an absent class's probability where it is
        e = np.exp(logits).astype(np.float64)
        n_absent = self.k_ - len(self.present_)
        P = np.full((X.shape[0], self.k_), self.absent_p_)
        P[:, self.present_] = e / e.sum(axis=1, keepdims=True) * (1.0 - n_absent * self.absent_p_)
        return P

    def state(self) -> dict[str, np.ndarray]:
        return {
            "coef": self.coef_,
            "intercept": self.intercept_,
            "present": self.present_,
            "k": np.array([self.k_]),
            "absent_p": np.array([self.absent_p_]),
        }

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray]) -> SoftLogistic:
        head = cls()
        head.coef_, head.intercept_ = arrays["coef"], arrays["intercept"]
        head.present_, head.k_ = arrays["present"], int(arrays["k"][0])
        # saved before absent classes had a probability: a small one all the same
        head.absent_p_ = float(arrays.get("absent_p", [1e-3])[0])
        return head


class TextTerms:
    """``top_terms`` for a tier whose ``head_`` reads the linear tier's TF-IDF block first."""

    features_: TextFeatures
    head_: SoftLogistic
    classes_: list[str]

    def top_terms(self, label: str, top: int = 20) -> list[tuple[str, float]]:
        """The response words weighed most toward ``label`` (the label's coefficient minus
        the mean of the others'), heaviest first, those that push toward it."""
        vocab = self.features_.vocab_
        if "response_words" not in vocab:
            return []
        offset = 0
        for name, v in vocab.items():
            if name == "response_words":
                break
            offset += len(v)
        k = list(self.classes_).index(label)
        rows = list(np.asarray(self.head_.present_))
        if k not in rows:
            return []
        coef = np.asarray(self.head_.coef_, dtype=np.float64)
        words = vocab["response_words"]
        cols = np.fromiter(words.values(), dtype=np.int64) + offset
        w = coef[rows.index(k), cols] - np.delete(coef, rows.index(k), axis=0)[:, cols].mean(axis=0)
        terms = list(words)
        return [(terms[i], float(w[i])) for i in np.argsort(-w)[:top] if w[i] > 0]


class LinearRM(TextTerms, Configured):
    """TF-IDF features of the reply, its opening and the request, with logistic regression.

    Args:
        rubric: the rubric (or its name) whose labels are the classes.
        name: the model's name; labels get source ``rm:<name>``.
        config: a :class:`LinearConfig` (``C``, ``opening_chars``, ``max_features``,
            ``balanced``); keyword options override its fields.
    """

    tier = "linear"
    config_class = LinearConfig
    config: LinearConfig
    linear_head = True

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        _refuse_pairwise(items, self.tier)
        c = self.config
        self.features_ = TextFeatures(
            c.opening_chars, c.max_features, view=self.view, rubric=self.rubric
        ).fit(items)
        self.head_ = SoftLogistic(C=c.C, balanced=c.balanced).fit(
            self.features_.transform(items), Y, sample_weight
        )

    def head_inputs(self, items: list[Item]) -> sparse.csr_matrix:
        return self.features_.transform(items)

    def _proba(self, items: list[Item]) -> np.ndarray:
        return self.head_.predict_proba(self.features_.transform(items))

    def _proba_views(self, views: list[View]) -> np.ndarray:
        return self.head_.predict_proba(self.features_.transform_views(views))

    def _save_files(self, model_dir: Path) -> None:
        save_text_head(model_dir, self.features_, self.head_)

    @classmethod
    def _load(cls, model_dir: Path, meta: dict[str, Any]) -> LinearRM:
        return load_text_head(cls, model_dir, meta)


M = TypeVar("M", bound=RewardModel)


def save_text_head(model_dir: Path, features: TextFeatures, head: SoftLogistic) -> None:
    """Write text features and a logistic head: ``vocab.json`` + ``weights.safetensors``."""
    from safetensors.numpy import save_file

    meta, arrays = features.state()
    (model_dir / "vocab.json").write_text(json.dumps(meta, ensure_ascii=False))
    arrays.update({f"head.{k}": v for k, v in head.state().items()})
    # safetensors writes the raw buffer: a Fortran-ordered array (lbfgs leaves
    # coef_ that way) would come back transposed in memory.
    arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    save_file(arrays, str(model_dir / "weights.safetensors"))


def load_text_head(cls: type[M], model_dir: Path, meta: dict[str, Any]) -> M:
    """Rebuild a model saved by :func:`save_text_head` (the linear and probe tiers)."""
    from safetensors.numpy import load_file

    model = cls(model_rubric(model_dir, meta), meta["name"], **meta["params"])
    arrays = load_file(str(model_dir / "weights.safetensors"))
    vocab = json.loads((model_dir / "vocab.json").read_text())
    try:
        model.features_ = TextFeatures.from_state(
            vocab, arrays, view=model.view, rubric=model.rubric
        )
    except ModelDirError as e:
        raise ModelDirError(f"{model_dir / 'vocab.json'}: {e}") from None
    model.head_ = SoftLogistic.from_state(
        {k.removeprefix("head."): v for k, v in arrays.items() if k.startswith("head.")}
    )
    model.classes_ = list(meta["classes"])
    model.card_ = meta.get("card", {})
    return model


def _refuse_pairwise(items: list[Item], tier: str) -> None:
    from tinyjudge.errors import UsageError

    pair = next((it.id for it in items if it.is_pairwise), None)
    if pair is not None:
        raise UsageError(
            f"item {pair!r} is pairwise; the {tier} tier scores single items; "
            "use tier transformer (Bradley-Terry) for pairs",
            param="tier",
        )
