"""Counting a fixed vocabulary of ``char_wb`` n-grams with numpy instead of Python strings.

scikit-learn's ``char_wb`` analyzer builds every n-gram of every space-padded
word as a Python string, and counting them against a vocabulary costs a dict
lookup each: at scoring time that is most of the linear tier's work. Here the
padded words of a whole batch are laid end to end as one array of code points;
each window of ``n`` code points inside one word gets a 64-bit polynomial hash,
the hashes are looked up in the vocabulary's sorted hashes, and every hit is
confirmed against the vocabulary string itself, so the counts are exactly
scikit-learn's (a hash collision costs a comparison, never a wrong count).
Code points are hashed plus one, so a NUL changes the hash like any character.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["CharNgramCounter", "tally"]

_BASE = 0x9E3779B97F4A7C15  # odd, so its powers modulo 2**64 never vanish


def _powers(n: int, base: int) -> np.ndarray:
    return np.array([pow(base, k, 2**64) for k in range(n)], dtype=np.uint64)


def _code_points(text: str) -> np.ndarray:
    # surrogatepass: a lone surrogate (valid in JSON) is one code point, as in str.
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def tally(
    rows: np.ndarray, cols: np.ndarray, n_features: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, count) of each distinct (row, column) pair, sorted by row then column."""
    if not len(rows):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    key, count = np.unique(rows * n_features + cols, return_counts=True)
    return key // n_features, key % n_features, count


def _padded_words(texts: list[str]) -> tuple[str, np.ndarray]:
    """``" w "`` for every word of every text, end to end, and each word's text index."""
    words_per_text = [t.lower().split() for t in texts]
    joined = "".join(f" {w} " for ws in words_per_text for w in ws)
    owner = np.repeat(np.arange(len(texts)), [len(ws) for ws in words_per_text])
    return joined, owner


class CharNgramCounter:
    """Counts of ``char_wb`` n-grams (lowercased, ``lo`` to ``hi`` chars) over a fixed vocabulary.

    Args:
        vocab: n-gram -> column, as a fitted ``TfidfVectorizer`` holds it.
        ngram_range: (lo, hi) n-gram lengths of that vectorizer.
        base: the hash's multiplier. Counts do not depend on it; a poor one
            (say 0: the hash is the first character) only makes collisions common.
    """

    def __init__(self, vocab: dict[str, int], ngram_range: tuple[int, int], base: int = _BASE):
        self.lo, self.hi = ngram_range
        if not 1 <= self.lo <= min(3, self.hi):
            # char_wb also emits a padded word shorter than lo whole; the shortest
            # padded word has 3 characters, so lo <= 3 never meets that case.
            raise ValueError(f"ngram_range must have 1 <= lo <= min(3, hi), got {ngram_range}")
        self.n_features = len(vocab)
        self._pow = _powers(self.hi, base)
        width = max((len(t) for t in vocab), default=1)
        terms = np.array(list(vocab), dtype=f"U{width}")
        cols = np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))
        hashes = np.array([self._hash_one(t) for t in vocab], dtype=np.uint64)
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._cols, self._terms = hashes[order], cols[order], terms[order]
        # numpy strings drop trailing NULs: lengths tell "ab" from "ab\x00".
        self._lens = np.array([len(t) for t in vocab], dtype=np.int64)[order]

    def _hash_one(self, term: str) -> np.uint64:
        codes = _code_points(term).astype(np.uint64) + np.uint64(1)
        return np.uint64((codes * self._pow[: len(codes)]).sum(dtype=np.uint64))

    def counts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, count) of every vocabulary n-gram present, rows = positions in texts."""
        joined, owner = _padded_words(texts)
        if not joined or not self.n_features:
            return tally(np.zeros(0, np.int64), np.zeros(0, np.int64), self.n_features)
        codes = _code_points(joined)
        # Word number of each position: a word starts at 0 and after every "  ".
        starts = np.zeros(len(codes), dtype=bool)
        starts[0] = True
        starts[1:] = (codes[1:] == 32) & (codes[:-1] == 32)
        word = np.cumsum(starts) - 1
        c64 = codes.astype(np.uint64) + np.uint64(1)
        rows, cols = [], []
        h = np.zeros(len(codes), dtype=np.uint64)
        for n in range(1, self.hi + 1):
            m = len(codes) - n + 1
            if m <= 0:
                break
            h = h[:m] + c64[n - 1 : n - 1 + m] * self._pow[n - 1]
            if n < self.lo:
                continue
            p = np.flatnonzero(word[:m] == word[n - 1 : n - 1 + m])  # inside one word
            hit_rows, hit_cols = self._lookup(h[p], codes, p, n)
            rows.append(owner[word[p[hit_rows]]])
            cols.append(hit_cols)
        return tally(np.concatenate(rows), np.concatenate(cols), self.n_features)

    def _lookup(
        self, h: np.ndarray, codes: np.ndarray, p: np.ndarray, n: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Indices into ``p`` whose n-gram is in the vocabulary, and their columns."""
        at = np.searchsorted(self._hashes, h)
        at[at == len(self._hashes)] = 0
        cand = np.flatnonzero(self._hashes[at] == h)
        if not len(cand):
            return cand, cand
        grams = sliding_window_view(codes, n)[p[cand]].copy().view(f"U{n}")[:, 0]
        same = (grams == self._terms[at[cand]]) & (self._lens[at[cand]] == n)
        # Two vocabulary n-grams sharing a hash: the first was compared; check the rest.
        for i in np.flatnonzero(~same):
            j = at[cand[i]] + 1
            while j < len(self._hashes) and self._hashes[j] == h[cand[i]]:
                if self._terms[j] == grams[i] and self._lens[j] == n:
                    at[cand[i]], same[i] = j, True
                    break
                j += 1
        keep = cand[same]
        return keep, self._cols[at[keep]]
