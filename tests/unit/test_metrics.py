"""Retrieval metrics over gold sets, the production metrics, and the figures drawn from them."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from lab_utils.memory import Memory, MemoryStore
from lab_utils.metrics import (ABILITIES, WITH_RECALL, WITHOUT_MEMORY, Reader, TicketCost, bootstrap_ci, by_ability,
                               choose_b, choose_threshold, context_words, evaluate, full_context, headline, hit_all,
                               hit_any, is_relevant, is_stale, item_scores, mean_context_words, merge_errors, mrr,
                               ndcg, ndcg_at_k, no_memory, oracle, p95, paired_bootstrap, poisoning_counts,
                               poisoning_report, recall_all_at_k, recall_any_at_k, recall_at_k, recall_with_b,
                               reciprocal_rank, rejection_rate, retriever, stale_fact_rate, ticket_cost)
from lab_utils.noise import load_history
from lab_utils.paths import DATA_DIR, load_data
from lab_utils.plots import grouped_bars, lines, lines_and_cost
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


# -- abilities, baselines and uncertainty ------------------------------------------------------

GOLD_ABILITIES = load_data("support", "gold_abilities.json")
HISTORY = load_history() + load_history(DATA_DIR / "support" / "later_history.json")


@pytest.fixture
def raw_history(naive):
    """Every observation of the whole history, as the naive write stores it."""
    for ticket in HISTORY:
        for line in ticket.raw:
            naive.remember_raw(line, ticket.ticket)
    return naive


def test_the_ability_gold_set_is_labelled_and_answerable_from_its_sources(raw_history):
    counts = {ability: sum(item["ability"] == ability for item in GOLD_ABILITIES) for ability in ABILITIES}
    assert len(GOLD_ABILITIES) >= 60 and min(counts.values()) >= 10, counts
    assert len({item["query"] for item in GOLD_ABILITIES}) == len(GOLD_ABILITIES)
    tickets = {r["source"] for r in load_data("support", "raw_log.json")} | {t.ticket for t in HISTORY}
    for item in GOLD_ABILITIES:
        assert set(item["sources"]) <= tickets, item
        if item["ability"] == "knowledge-update":
            assert set(item["stale"]["sources"]) <= tickets and not set(item["stale"]["sources"]) & set(item["sources"])
    # The oracle reads only the source tickets: it answers every item, fully, and never stale.
    scores = item_scores(oracle(raw_history), GOLD_ABILITIES)
    answerable = scores[scores["ability"] != "abstention"]
    assert answerable["recall_all"].eq(1.0).all(), answerable[answerable["recall_all"] < 1].index.tolist()
    assert scores["stale"].dropna().eq(0.0).all() and scores["abstained"].dropna().eq(1.0).all()
    # Each old value is really in the history, so a memory that keeps everything is stale everywhere.
    assert item_scores(full_context(raw_history), GOLD_ABILITIES)["stale"].dropna().eq(1.0).all()


def test_baselines_hand_what_they_promise(raw_history):
    total = context_words(raw_history.items)
    gold = [item for item in GOLD_ABILITIES if item["ability"] in ("knowledge-update", "abstention")]
    empty = item_scores(no_memory(), gold)
    assert empty["words"].eq(0).all() and empty["abstained"].dropna().eq(1.0).all()
    assert empty["stale"].dropna().eq(0.0).all() and empty["recall_any"].dropna().eq(0.0).all()
    everything = item_scores(full_context(raw_history), gold)
    assert everything["words"].eq(total).all() and everything["abstained"].dropna().eq(0.0).all()
    top = item_scores(retriever("naive", raw_history, 3), gold)
    assert (top["words"] <= everything["words"]).all()
    assert mean_context_words(raw_history, gold, 3) == pytest.approx(top["words"].mean())


def test_item_scores_keep_abstention_out_of_recall_and_ndcg_reads_the_whole_context(tmp_path):
    item = {"query": "q", "ability": "extraction", "markers": ["kb-1"], "sources": ["t-1"]}
    nothing = {"query": "z", "ability": "abstention", "markers": [], "sources": []}
    store = MemoryStore(tmp_path / "m.jsonl")
    for text in ("noise", "noise again", "fixed per kb-1"):
        store.remember_raw(text, "t-1")
    reader = Reader("all", lambda it: store.items if it is item else store.items[:1], store)
    scores = item_scores(reader, [item, nothing])
    assert scores.loc["q", "recall_all"] == 1.0 and math.isnan(scores.loc["z", "recall_all"])
    assert scores.loc["z", "abstained"] == 0.0 and math.isnan(scores.loc["q", "abstained"])
    assert scores.loc["q", "nDCG"] == pytest.approx(1 / math.log2(4))  # k=None: read to the end
    assert scores["words"].tolist() == [6, 1]


def test_bad_gold_items_are_named():
    reader = no_memory()
    with pytest.raises(ValueError, match="ability must be one of"):
        item_scores(reader, [{"query": "q", "ability": "recall", "markers": ["x"], "sources": []}])
    with pytest.raises(ValueError, match="names no stale value"):
        item_scores(reader, [{"query": "q", "ability": "knowledge-update", "markers": ["x"], "sources": []}])
    with pytest.raises(ValueError, match="abstention items and only they have no markers"):
        item_scores(reader, [{"query": "q", "ability": "abstention", "markers": ["x"], "sources": []}])


def test_the_stale_fact_rate_counts_knowledge_updates_and_old_tickets_only():
    update = {"query": "seats", "ability": "knowledge-update", "markers": ["55 seats"], "sources": ["t-2"],
              "stale": {"markers": ["40 seats"], "sources": ["t-1"]}}
    other = {"query": "cause", "ability": "extraction", "markers": ["filter"], "sources": ["t-1"]}
    old, new = _m("enterprise, 40 seats", "t-1"), _m("from 40 seats to 55 seats", "t-2")
    assert is_stale([old], update) and not is_stale([new], update)  # the update names the old value too
    assert stale_fact_rate([update, other, update], [[old, new], [old], [new]]) == 0.5
    assert stale_fact_rate([update], [[]]) == 0.0
    with pytest.raises(ValueError, match="no knowledge-update item"):
        stale_fact_rate([other], [[old]])
    with pytest.raises(ValueError, match="one context per gold item"):
        stale_fact_rate([update, other], [[old]])


def test_bootstrap_intervals():
    four = [0, 1, 1, 1]
    assert bootstrap_ci(four) == (0.25, 1.0)  # four items: one of them moves the mean by 0.25
    assert bootstrap_ci(four, seed=3) == bootstrap_ci(four, seed=3)
    assert bootstrap_ci([0.4] * 30) == pytest.approx((0.4, 0.4))
    many = np.random.default_rng(1).random(400)
    low, high = bootstrap_ci(many)
    assert low < many.mean() < high and high - low < 0.1 < bootstrap_ci(many[:20])[1] - bootstrap_ci(many[:20])[0]
    assert bootstrap_ci(list(range(100)), p95)[1] <= 99
    with pytest.raises(ValueError, match="no values"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci(four, resamples=0)


def test_headline_and_by_ability_give_each_figure_its_interval(raw_history):
    scores = item_scores(retriever("naive", raw_history, 3), GOLD_ABILITIES)
    table = headline(scores)
    assert list(table.index) == ["recall_any@k", "recall_all@k", "nDCG@k", "abstention accuracy", "stale-fact rate",
                                 "words per query (mean)", "words per query (p95)"]
    assert (table["low"] <= table["value"] + 1e-12).all() and (table["value"] <= table["high"] + 1e-12).all()
    abstention = scores[scores["ability"] == "abstention"]["abstained"]
    assert table.loc["abstention accuracy", "value"] == pytest.approx(abstention.mean())
    per_ability = by_ability(scores)
    assert list(per_ability.index) == list(ABILITIES)
    assert per_ability.loc["abstention", "value"] == pytest.approx(abstention.mean())
    temporal = scores[scores["ability"] == "temporal"]["recall_all"]
    assert per_ability.loc["temporal", "value"] == pytest.approx(temporal.mean())


def test_paired_bootstrap():
    same = paired_bootstrap([1, 0, 1, 0], [1, 0, 1, 0])
    assert same["difference"] == 0 and same["p_value"] == 1.0 and same["ties"] == 4
    better = paired_bootstrap([0] * 30, [1] * 25 + [0] * 5)
    assert better["low"] > 0 and better["p_value"] < 0.01 and (better["b better"], better["a better"]) == (25, 0)
    mixed = paired_bootstrap([1, 0] * 10, [0, 1] * 10)
    assert mixed["low"] < 0 < mixed["high"] and mixed["p_value"] > 0.5
    with pytest.raises(ValueError, match="paired scores"):
        paired_bootstrap([1, 0], [1])


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


def test_bars_with_whiskers_and_a_curve_with_its_cost():
    bars = grouped_bars({"extraction": {"naive": 0.5, "oracle": 1.0}}, title="t", ylabel="share",
                        intervals={"extraction": {"naive": (0.25, 0.75), "oracle": (1.0, 1.0)}})
    whiskers = [c for c in bars.axes[0].containers if hasattr(c, "errorbar") and c.errorbar is not None]
    assert len(whiskers) == 2
    segments = whiskers[0].errorbar.lines[2][0].get_segments()
    assert [tuple(y for _, y in seg) for seg in segments] == [(0.25, 0.75)]
    curve = lines_and_cost([0, 1], {"naive recall@3": [1, 0.5]}, {"naive words": [10, 12], "full context": [20, 90]},
                           title="t", xlabel="records", ylabel="recall", cost_label="words per query")
    curve.savefig(io.BytesIO(), format="png")
    assert len(curve.axes) == 2 and len(curve.axes[1].lines) == 2
