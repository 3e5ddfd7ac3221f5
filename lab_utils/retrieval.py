"""BM25 retrieval that is kept between queries and updated as documents arrive.

Scoring is rank-bm25's BM25Okapi. Building one from the whole corpus costs a pass over
every document, so the index keeps its BM25Okapi and extends its per-document statistics
on `add`; only the IDF table is recomputed, and only when a query follows new documents.
Removing documents (rare: forget_source, the cap) rebuilds from the kept tokens.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from rank_bm25 import BM25Okapi

from lab_utils.text import tokenize


class BM25Index:
    def __init__(self, docs: list[tuple[str, str]] = ()) -> None:
        self._ids: list[str] = []
        self._tokens: list[list[str]] = []
        self._doc_counts: Counter[str] = Counter()  # in how many documents each term occurs
        self._bm25: BM25Okapi | None = None
        self._idf_stale = False
        for doc_id, text in docs:
            self.add(doc_id, text)

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, doc_id: str, text: str) -> None:
        tokens = tokenize(text)
        self._ids.append(doc_id)
        self._tokens.append(tokens)
        self._doc_counts.update(set(tokens))
        if self._bm25 is not None:
            # The statistics BM25Okapi._initialize computes, extended by one document.
            bm = self._bm25
            bm.doc_freqs.append(Counter(tokens))
            bm.doc_len.append(len(tokens))
            bm.corpus_size += 1
            bm.avgdl += (len(tokens) - bm.avgdl) / bm.corpus_size
            self._idf_stale = True

    def remove(self, doc_ids: set[str]) -> None:
        kept = [(i, t) for i, t in zip(self._ids, self._tokens) if i not in doc_ids]
        self._ids = [i for i, _ in kept]
        self._tokens = [t for _, t in kept]
        self._doc_counts = Counter(term for _, t in kept for term in set(t))
        self._bm25 = None

    def _scorer(self) -> BM25Okapi | None:
        """The kept BM25Okapi with a current IDF table; None while there is no term at all."""
        if not self._doc_counts:
            return None
        if self._bm25 is None:
            self._bm25 = BM25Okapi(self._tokens)
        elif self._idf_stale:
            self._bm25._calc_idf(self._doc_counts)
        self._idf_stale = False
        return self._bm25

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per document, in insertion order."""
        bm = self._scorer()
        return bm.get_scores(tokenize(query)) if bm else np.zeros(len(self._ids))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The k best (doc_id, score) pairs, best first; ties keep insertion order."""
        scores = self.scores(query)
        if k <= 0 or not len(scores):
            return []
        k = min(k, len(scores))
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]  # the k-th best score
        above = np.flatnonzero(scores > kth)
        top = [*above, *np.flatnonzero(scores == kth)[: k - len(above)]]
        return [(self._ids[i], float(scores[i])) for i in sorted(top, key=lambda i: (-scores[i], i))]

    def idf(self) -> dict[str, float]:
        """Each term's IDF as scored (BM25Okapi floors negative IDF at epsilon x the average)."""
        bm = self._scorer()
        return dict(bm.idf) if bm else {}
