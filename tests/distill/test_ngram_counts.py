"""Counting n-grams without scikit-learn's per-string overhead gives exactly its counts."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from tinyjudge.distill import TrainingSet
from tinyjudge.distill._charhash import CharNgramCounter
from tinyjudge.distill._text import item_views

ODD = [
    "",
    "   \n\t ",
    "a",
    "I'm sorry, but I can't help with that.",
    "Ünïcödé ÀÉ — 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 beyond the BMP, 中文字符 and emoji 🙂🙂",
    "tabs\tand\nnewlines  and   runs of spaces",
    "ß and İ change length when lowercased",
    "a NUL\x00 inside, ab ab\x00 c and a trailing one\x00",
    "a lone surrogate \udc80 and \ud800x, valid in JSON",
]


def _dense(counter: CharNgramCounter, texts: list[str]) -> np.ndarray:
    r, c, n = counter.counts(texts)
    out = np.zeros((len(texts), counter.n_features), dtype=np.int64)
    out[r, c] = n
    return out


def _check(fit_texts: list[str], texts: list[str], ngram_range=(2, 5), **kw) -> int:
    ref = CountVectorizer(analyzer="char_wb", ngram_range=ngram_range).fit(fit_texts)
    counter = CharNgramCounter(ref.vocabulary_, ngram_range, **kw)
    expected = ref.transform(texts).toarray()
    np.testing.assert_array_equal(_dense(counter, texts), expected)
    return int(expected.sum())


def test_counts_equal_sklearn_on_real_replies(xs_set: TrainingSet) -> None:
    replies = [item_views(it)[0].response for it in xs_set.items[:400]]
    # Vocabulary from some replies, counted on others: unknown n-grams must be skipped.
    assert _check(replies[:200], replies[200:]) > 10_000
    assert _check(replies[:200], [r[:150] for r in replies[200:]], ngram_range=(1, 3)) > 1_000


def test_counts_equal_sklearn_on_odd_text() -> None:
    assert _check(ODD, ODD) > 0
    assert _check(ODD[3:5], ODD) > 0


def test_hash_collisions_cost_nothing_but_time(xs_set: TrainingSet) -> None:
    """Base 0 hashes every n-gram to its first character: almost every lookup collides."""
    replies = [item_views(it)[0].response[:200] for it in xs_set.items[:60]]
    assert _check(replies[:30], replies, base=0) > 1_000
    assert _check(ODD, ODD, base=0) > 0


@pytest.mark.parametrize("texts", [[], [""], ["", "  "], ["xyz qrs"]])
def test_nothing_to_count(texts: list[str]) -> None:
    for vocab in ({"ab": 0, " a": 1}, {}):
        r, c, n = CharNgramCounter(vocab, (2, 5)).counts(texts)
        assert len(r) == len(c) == len(n) == 0


@pytest.mark.parametrize("ngram_range", [(1, 1), (1, 4), (3, 3), (3, 6)])
def test_other_ranges_equal_sklearn(ngram_range) -> None:
    assert _check(ODD, ODD, ngram_range=ngram_range) > 0


def test_ranges_it_cannot_count_are_refused() -> None:
    # char_wb emits a padded word shorter than lo whole, which windows of lo never see.
    with pytest.raises(ValueError, match="lo <= min"):
        CharNgramCounter({"abcd": 0}, (4, 5))


@pytest.mark.parametrize("ngram_range", [(1, 1), (1, 2), (2, 2), (1, 3)])
def test_word_grams_equal_sklearn_analyzer(xs_set: TrainingSet, ngram_range) -> None:
    from tinyjudge.distill._linear import _word_grams

    ref = CountVectorizer(analyzer="word", ngram_range=ngram_range).build_analyzer()
    texts = [item_views(it)[0].response for it in xs_set.items[:200]] + ODD
    for text in texts:
        assert _word_grams(text, ngram_range) == ref(text)
