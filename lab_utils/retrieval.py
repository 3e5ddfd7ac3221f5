"""BM25 retrieval that is kept between queries and updated as documents arrive.

Scoring is rank-bm25's BM25Okapi: its parameters, its IDF table (negative IDF floored at
epsilon x the average) and its formula. Two things change, neither of them the result:

- the index grows one document at a time instead of being rebuilt from the whole corpus;
  only the IDF table is recomputed, and only when a query follows new documents;
- a query reads the postings of its own terms instead of every document, so its cost
  follows how many documents share its words, not the size of the store.

Removing documents (rare: forget_source, the cap) rebuilds from the kept tokens.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from rank_bm25 import BM25Okapi

from lab_utils.text import tokenize


class GrowingOkapi(BM25Okapi):
    """A BM25Okapi that grows by `add` and scores through per-term postings."""

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        # BM25Okapi.__init__ needs a whole, non-empty corpus, so it is not called: this sets up
        # the empty state it would build, and `add` extends it one document at a time.
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.corpus_size, self.avgdl, self.average_idf = 0, 0.0, 0.0
        self.doc_freqs: list[Counter] = []
        self.doc_len: list[int] = []
        self.idf: dict[str, float] = {}
        self.tokenizer = None
        self._doc_counts: Counter[str] = Counter()  # in how many documents each term occurs
        self._postings: dict[str, tuple[list[int], list[int]]] = {}  # term -> (documents, counts)
        self._idf_stale = False

    def add(self, tokens: list[str]) -> None:
        counts = Counter(tokens)
        position = self.corpus_size
        self.doc_freqs.append(counts)
        self.doc_len.append(len(tokens))
        self.corpus_size += 1
        self.avgdl += (len(tokens) - self.avgdl) / self.corpus_size
        self._doc_counts.update(counts.keys())
        for term, count in counts.items():
            docs, tfs = self._postings.setdefault(term, ([], []))
            docs.append(position)
            tfs.append(count)
        self._idf_stale = True

    def current_idf(self) -> dict[str, float]:
        """The IDF table, recomputed (by BM25Okapi's own rule) if documents came since."""
        if self._idf_stale and self._doc_counts:
            self.idf = {}
            self._calc_idf(self._doc_counts)
        self._idf_stale = False
        return self.idf

    def get_scores(self, query: list[str]) -> np.ndarray:
        """The same scores as BM25Okapi.get_scores, from the postings of the query's terms."""
        scores = np.zeros(self.corpus_size)
        if self.avgdl == 0:
            return scores
        self.current_idf()
        doc_len = np.asarray(self.doc_len, dtype=float)
        for term in query:
            if term not in self._postings or not self.idf.get(term):
                continue
            docs, tfs = (np.asarray(p) for p in self._postings[term])
            norm = self.k1 * (1 - self.b + self.b * doc_len[docs] / self.avgdl)
            scores[docs] += self.idf[term] * tfs * (self.k1 + 1) / (tfs + norm)
        return scores


class BM25Index:
    def __init__(self, docs: list[tuple[str, str]] = ()) -> None:
        self._ids: list[str] = []
        self._tokens: list[list[str]] = []
        self._bm25 = GrowingOkapi()
        for doc_id, text in docs:
            self.add(doc_id, text)

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, doc_id: str, text: str) -> None:
        tokens = tokenize(text)
        self._ids.append(doc_id)
        self._tokens.append(tokens)
        self._bm25.add(tokens)

    def remove(self, doc_ids: set[str]) -> None:
        kept = [(i, t) for i, t in zip(self._ids, self._tokens) if i not in doc_ids]
        self._ids, self._tokens, self._bm25 = [], [], GrowingOkapi()
        for doc_id, tokens in kept:
            self._ids.append(doc_id)
            self._tokens.append(tokens)
            self._bm25.add(tokens)

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per document, in insertion order."""
        return self._bm25.get_scores(tokenize(query))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The k best (doc_id, score) pairs, best first; ties keep insertion order."""
        scores = self.scores(query)
        if k <= 0 or not len(scores):
            return []
        k = min(k, len(scores))
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]  # the k-th best score
        above = np.flatnonzero(scores > kth)
        top = np.concatenate([above, np.flatnonzero(scores == kth)[: k - len(above)]])
        best_first = top[np.lexsort((top, -scores[top]))]  # by score, then insertion order
        return [(self._ids[i], float(scores[i])) for i in best_first]

    def idf(self) -> dict[str, float]:
        """Each term's IDF as scored (BM25Okapi floors negative IDF at epsilon x the average)."""
        return dict(self._bm25.current_idf())
