"""Retrieval metrics over gold sets, the production metrics, and the figures drawn from them."""

from __future__ import annotations

import io
import math

import pytest

from lab_utils.memory import Memory, MemoryStore
from lab_utils.metrics import (WITH_RECALL, WITHOUT_MEMORY, TicketCost, choose_b, choose_threshold,
                               evaluate, hit_all, hit_any, is_relevant, merge_errors, mrr, ndcg, ndcg_at_k,
                               poisoning_counts, poisoning_report, recall_all_at_k, recall_any_at_k,
                               recall_at_k, recall_with_b, reciprocal_rank, rejection_rate, ticket_cost)
from lab_utils.paths import load_data
from lab_utils.plots import grouped_bars, lines
from lab_utils.rules import forget_source, remember



@pytest.fixture
def naive(tmp_path):
    store = MemoryStore(tmp_path / "naive.jsonl")
    for r in load_data("support", "raw_log.json"):
        store.remember_raw(r["text"], r["source"])
    forget_source(store, "t-9021")
    return store


@pytest.fixture
def disciplined(tmp_path):
    store = MemoryStore(tmp_path / "disciplined.jsonl")
    for r in load_data("support", "sessions.json") + load_data("support", "candidates.json"):
        remember(store, r["text"], r["kind"], r["source"], r["verified"])
    return store


def _m(text: str, source: str = "t-1") -> Memory:
    return Memory("m-x", "episode", text, source, 0.0, True)


# -- the lesson's table ----------------------------------------------------------------------


def test_the_source_table_as_measured(naive, disciplined):
    gold = load_data("support", "gold.json")
    assert (len(naive.items), len(disciplined.items)) == (9, 5)
    assert (recall_at_k(naive, gold, 1), recall_at_k(naive, gold, 3)) == (0.5, 0.5)
    # The source reports 1.00 / 1.00; the t-8801 episode ties the plan fact for
    # "what plan is customer C-4471 on" and comes first (lesson 04 explains).
    assert (recall_at_k(disciplined, gold, 1), recall_at_k(disciplined, gold, 3)) == (0.75, 1.0)


def test_evaluate_agrees_with_each_metric(naive, disciplined):
    gold = load_data("support", "gold_large.json")
    for store in (naive, disciplined):
        row = evaluate(store, gold, ks=(1, 3))
        assert row["recall@1"] == recall_at_k(store, gold, 1)
        assert row["recall@3"] == recall_any_at_k(store, gold, 3)
        assert row["recall_all@3"] == recall_all_at_k(store, gold, 3)
        assert row["nDCG@3"] == pytest.approx(ndcg_at_k(store, gold, 3))
        assert row["MRR"] == pytest.approx(mrr(store, gold, 10))


# -- one query -----------------------------------------------------------------------------


def test_marker_is_case_sensitive_and_sources_narrow_it():
    item = {"query": "q", "marker": "status filter"}
    assert is_relevant(_m("Cause: status filter."), item)
    assert not is_relevant(_m("Cause: Status filter."), item)
    pinned = {"query": "q", "markers": ["confirmed"], "sources": ["t-8801"]}
    assert is_relevant(_m("customer confirmed", "t-8801"), pinned)
    assert not is_relevant(_m("customer confirmed", "t-10001"), pinned)


def test_any_all_rank_and_ndcg_on_a_given_ranking():
    item = {"query": "q", "markers": ["status filter", "enterprise"]}
    top = [_m("raw complaint"), _m("the status filter excluded rows"), _m("enterprise plan, 40 seats")]
    assert hit_any(top[:2], item) and not hit_all(top[:2], item) and hit_all(top, item)
    assert not hit_any(top[:1], item)
    assert reciprocal_rank(top, item) == 0.5 and reciprocal_rank(top[:1], item) == 0.0
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg(top, item, n_relevant=2, k=3) == pytest.approx(expected)
    assert ndcg(top[1:], item, n_relevant=2, k=3) == pytest.approx(1.0)
    assert ndcg(top, item, n_relevant=0, k=3) == 0.0
    # Fewer hits than k above the minimum score still count against the ideal of k places.
    assert ndcg(top[1:2], item, n_relevant=2, k=3) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_recall_all_needs_every_marker(disciplined):
    gold = [{"query": "C-4471 export file is empty again", "markers": ["status filter", "invoice"]}]
    assert recall_any_at_k(disciplined, gold, 3) == 1.0
    assert recall_all_at_k(disciplined, gold, 3) == 0.0


def test_poisoning_report_counts_what_each_detector_flags(naive):
    detectors = {"guess": lambda m: m.text.startswith("guess:"),
                 "C-4471": lambda m: "C-4471" in m.text}
    queries = ["C-4471 export file is empty again", "invoice copy request from C-2210", "nothing like it"]
    report = poisoning_report(naive, queries, detectors, k=3)
    assert list(report.index) == queries
    assert list(report.columns) == ["recalled", "guess", "C-4471", "clean"]
    assert report.loc["C-4471 export file is empty again"].tolist() == [3, 1, 2, 0]
    assert report.loc["invoice copy request from C-2210"].tolist() == [1, 0, 0, 1]
    assert report.loc["nothing like it"].tolist() == [0, 0, 0, 0]
    assert poisoning_report(naive, queries[:1], {}, k=2)["clean"].tolist() == [2]


def test_recall_with_b_ranks_as_the_store_does_and_choose_b_keeps_the_first_of_a_tie(disciplined):
    gold = load_data("support", "gold.json")
    for k in (1, 3):
        assert recall_with_b(disciplined.items, gold, k, b=0.75) == recall_at_k(disciplined, gold, k)
    assert choose_b(disciplined.items, gold, 1, [0.75, 0.5, 1.0]) == 1.0
    assert choose_b(disciplined.items, gold, 3, [0.75, 1.0]) == 0.75  # all tie at 1.0
    assert choose_b(disciplined.items, gold, 3, [1.0, 0.75]) == 1.0


def test_poisoning_counts_read_the_file(naive, disciplined):
    assert poisoning_counts(disciplined.path) == {"PII strings": 0, "copies of the guess": 0, "from t-9021": 0,
                                                  "raw observations": 0}
    counts = poisoning_counts(naive.path)  # the naive fixture has forgotten t-9021 already
    assert counts == {"PII strings": 2, "copies of the guess": 1, "from t-9021": 0, "raw observations": 8}


def test_the_threshold_is_the_lowest_that_merges_no_non_duplicate():
    pairs = [{"a": "alpha beta gamma delta", "b": "alpha beta gamma delta", "duplicate": True},    # 1.0
             {"a": "alpha beta gamma", "b": "alpha beta gamma delta", "duplicate": True},          # 0.75
             {"a": "alpha beta gamma delta", "b": "alpha beta gamma epsilon", "duplicate": False}]  # 0.6
    assert merge_errors(pairs, 0.6) == {"false merges": 1, "missed duplicates": 0}
    assert merge_errors(pairs, 0.8) == {"false merges": 0, "missed duplicates": 1}
    assert choose_threshold(pairs, [0.9, 0.6, 0.7]) == 0.7  # 0.6 merges the pair at exactly 0.6
    with pytest.raises(ValueError, match="merges a pair labelled not duplicate"):
        choose_threshold(pairs, [0.5, 0.6])


# -- production metrics ----------------------------------------------------------------------


def test_rejection_rate():
    outcomes = ["stored m-001", "rejected: unverified claim", "duplicate of m-001, skipped", "stored m-002"]
    assert rejection_rate(outcomes) == 0.5
    assert rejection_rate(["stored m-001"]) == 0.0
    assert rejection_rate(["stored m-003 (cap 3: evicted m-001, the oldest episode)"]) == 0.0
    with pytest.raises(ValueError):
        rejection_rate([])


def test_repeated_ticket_cost_from_the_step_lists():
    assert ticket_cost(WITH_RECALL) == TicketCost(steps=2, model_calls=1)
    assert ticket_cost(WITHOUT_MEMORY) == TicketCost(steps=5, model_calls=3)
    assert WITH_RECALL[0].action.startswith("recall")


# -- figures ---------------------------------------------------------------------------------


def test_figures_render_without_a_display():
    bars = grouped_bars({"recall@1": {"naive": 0.5, "disciplined": 0.75},
                         "recall@3": {"naive": 0.5, "disciplined": 1.0}}, title="t", ylabel="share")
    curve = lines([0, 10, 100], {"naive": [0.7, 0.6, 0.5], "disciplined": [1, 1, 0.9]}, title="t",
                  xlabel="tickets", ylabel="recall@3", logx=True, xs={"naive": [5, 50, 500]})
    for fig in (bars, curve):
        fig.savefig(io.BytesIO(), format="png")
    assert len(bars.axes[0].patches) == 4
    assert list(curve.axes[0].lines[0].get_xdata()) == [5, 50, 500]
