"""The kept BM25 index gives the same answers as building BM25Okapi afresh."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from lab_utils.retrieval import BM25Index
from lab_utils.text import similarity, tokenize

WORDS = ["export", "empty", "filter", "status", "invoice", "plan", "c-4471", "kb-101", "rows", "seats"]
texts = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(docs=texts, later=texts, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join))
def test_updated_index_scores_like_a_fresh_build(docs, later, query):
    index = BM25Index([(f"d{i}", t) for i, t in enumerate(docs)])
    index.scores(query)  # build, then keep updating
    for i, t in enumerate(later):
        index.add(f"e{i}", t)
    fresh = BM25Okapi([tokenize(t) for t in docs + later])
    assert np.allclose(index.scores(query), fresh.get_scores(tokenize(query)))


def test_search_is_best_first_with_stable_ties_and_removal_rebuilds():
    docs = [("a", "export empty"), ("b", "invoice copy"), ("c", "export empty"), ("d", "plan"), ("e", "seats")]
    index = BM25Index(docs)
    assert [i for i, _ in index.search("export empty", 3)] == ["a", "c", "b"]
    index.remove({"a"})
    assert [i for i, _ in index.search("export empty", 1)] == ["c"]
    assert index.search("export", 0) == [] and len(index) == 4


def test_a_term_in_exactly_half_the_documents_scores_zero():
    # BM25Okapi's IDF is log((N - n + 0.5) / (n + 0.5)): zero at n = N / 2.
    index = BM25Index([("a", "export"), ("b", "invoice")])
    assert list(index.scores("export")) == [0.0, 0.0]


def test_floored_idf_for_terms_in_most_documents():
    index = BM25Index([(str(i), f"c-4471 note{i}") for i in range(10)])
    idf = index.idf()
    assert idf["c-4471"] > 0 and idf["c-4471"] < idf["note1"] / 5


def test_an_index_of_empty_texts_scores_zero():
    index = BM25Index([("a", "the"), ("b", "")])
    assert list(index.scores("export")) == [0.0, 0.0]


def test_tokenize_keeps_identifiers_and_drops_stopwords():
    assert tokenize("Is C-4471 on the kb-101 plan?") == ["c-4471", "kb-101", "plan"]
    assert similarity("status filter", "filter status") == 1.0
    assert similarity("", "x") == 0.0
