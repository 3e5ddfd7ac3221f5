"""How good a memory is: retrieval metrics over a gold set, and two production metrics;
also what each poisoning leaves in a memory file, the words that expose a memory, and
settings chosen from labelled data (the dedupe threshold, BM25's b).

A gold item is a query plus the knowledge it needs, written as one or more markers:
{"query": ..., "marker": "status filter"} or {"query": ..., "markers": ["enterprise", "kb-101"]}.
A memory is relevant when it contains a marker, case-sensitively (`marker in memory.text`, as
the source article checks it): the test is for the knowledge, not just the right ticket.
An item may also name the tickets the knowledge comes from ("sources"); then a memory must
come from one of them too. In a store full of other customers' tickets, a word like
"confirmed" is everywhere, and only provenance tells the right memory from a lookalike.
Rankings are what the agent reads: `store.search(query, k)`, minimum score included.

recall_any@k and recall_all@k follow LongMemEval (Wu et al., 2024): a query scores 1 when
any / all of its gold evidence is in the top k; here the evidence is the markers. recall@k is
recall_any@k, which for a single marker is the share of queries whose top-k holds it.

Like LongMemEval, a gold set may label each item with the ability it tests (ABILITIES).
Abstention items have nothing to find: the right answer is "no relevant memories", scored as
abstention accuracy and kept out of recall. Knowledge-update items also name the value that
changed ("stale": markers and the old tickets); a context that still holds it is stale.
Any memory, baselines included, is judged by what it hands the model (a `Reader`), so recall,
staleness and the context's cost in words are measured alike for all of them, and every figure
gets a bootstrap interval over the gold items.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

import numpy as np
import pandas as pd
from rank_bm25 import BM25Okapi

from lab_utils.memory import MIN_SCORE, Memory, MemoryStore
from lab_utils.rules import find_pii, is_raw_observation
from lab_utils.text import similarity, tokenize


def markers(item: dict) -> list[str]:
    """The markers of a gold item, whichever of the two forms it uses."""
    return list(item["markers"]) if "markers" in item else [item["marker"]]


def _holds(memory: Memory, marker: str, item: dict) -> bool:
    return marker in memory.text and ("sources" not in item or memory.source in item["sources"])


def is_relevant(memory: Memory, item: dict) -> bool:
    """Does the memory hold any of the knowledge the gold item asks for?"""
    return any(_holds(memory, marker, item) for marker in markers(item))


# -- one query, given its ranking (best first) ---------------------------------------------


def hit_any(top: list[Memory], item: dict) -> bool:
    return any(is_relevant(m, item) for m in top)


def hit_all(top: list[Memory], item: dict) -> bool:
    return all(any(_holds(m, marker, item) for m in top) for marker in markers(item))


def reciprocal_rank(top: list[Memory], item: dict) -> float:
    """1 / the rank of the first relevant memory; 0 if there is none."""
    return next((1 / rank for rank, m in enumerate(top, start=1) if is_relevant(m, item)), 0.0)


def ndcg(top: list[Memory], item: dict, n_relevant: int, k: int) -> float:
    """nDCG@k with binary relevance: a hit at rank r is worth 1 / log2(r + 1).

    The ideal ranking puts the store's `n_relevant` relevant memories first (at most k of
    them); with none in the store the query scores 0.
    """
    dcg = sum(1 / math.log2(rank + 1) for rank, m in enumerate(top[:k], start=1) if is_relevant(m, item))
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(k, n_relevant) + 1))
    return dcg / ideal if ideal else 0.0


# -- a store over a gold set -------------------------------------------------------------


def _tops(store: MemoryStore, gold: list[dict], k: int) -> list[list[Memory]]:
    return [store.search(item["query"], k) for item in gold]


def _n_relevant(store: MemoryStore, item: dict) -> int:
    return sum(is_relevant(m, item) for m in store.items)


def recall_any_at_k(store: MemoryStore, gold: list[dict], k: int) -> float:
    """Share of queries with at least one of their markers in the top k."""
    return fmean(hit_any(top, item) for top, item in zip(_tops(store, gold, k), gold))


def recall_all_at_k(store: MemoryStore, gold: list[dict], k: int) -> float:
    """Share of queries with every one of their markers somewhere in the top k."""
    return fmean(hit_all(top, item) for top, item in zip(_tops(store, gold, k), gold))


def recall_at_k(store: MemoryStore, gold: list[dict], k: int) -> float:
    """Share of queries whose top k holds a memory containing the marker."""
    return recall_any_at_k(store, gold, k)


def mrr(store: MemoryStore, gold: list[dict], k: int = 10) -> float:
    """Mean reciprocal rank of the first relevant memory within the top k."""
    return fmean(reciprocal_rank(top, item) for top, item in zip(_tops(store, gold, k), gold))


def ndcg_at_k(store: MemoryStore, gold: list[dict], k: int) -> float:
    """Mean nDCG@k over the gold set."""
    tops = _tops(store, gold, k)
    return fmean(ndcg(top, item, _n_relevant(store, item), k) for top, item in zip(tops, gold))


def evaluate(store: MemoryStore, gold: list[dict], ks: tuple[int, ...] = (1, 3),
             depth: int = 10) -> dict[str, float]:
    """Every retrieval metric at once, from one search per query (top-k is a prefix of top-depth)."""
    tops = _tops(store, gold, max(depth, *ks))
    relevant = [_n_relevant(store, item) for item in gold]
    row = {}
    for k in ks:
        row[f"recall@{k}"] = fmean(hit_any(top[:k], item) for top, item in zip(tops, gold))
        row[f"recall_all@{k}"] = fmean(hit_all(top[:k], item) for top, item in zip(tops, gold))
        row[f"nDCG@{k}"] = fmean(ndcg(top, item, n, k) for top, item, n in zip(tops, gold, relevant))
    row["MRR"] = fmean(reciprocal_rank(top[:depth], item) for top, item in zip(tops, gold))
    return row


def recall_with_b(memories: list[Memory], gold: list[dict], k: int, b: float,
                  min_score: float = MIN_SCORE) -> float:
    """recall@k of `memories` ranked by BM25Okapi with length normalization `b`.

    Same ranking as a store's search (ties keep store order, the minimum score applies), so
    with rank-bm25's default b=0.75 it agrees with `recall_at_k` on a store of these memories.
    """
    bm25 = BM25Okapi([tokenize(m.text) for m in memories], b=b)
    hits = 0
    for item in gold:
        scores = bm25.get_scores(tokenize(item["query"]))
        ranked = sorted(range(len(memories)), key=lambda i: (-scores[i], i))[:k]
        hits += hit_any([memories[i] for i in ranked if scores[i] >= min_score], item)
    return hits / len(gold)


def choose_b(memories: list[Memory], gold: list[dict], k: int, candidates: list[float]) -> float:
    """The candidate b with the highest recall@k on `gold`; a tie goes to the one listed first."""
    return max(candidates, key=lambda b: recall_with_b(memories, gold, k, b))


def poisoning_report(store: MemoryStore, queries: list[str],
                     detectors: Mapping[str, Callable[[Memory], bool]], k: int = 3) -> pd.DataFrame:
    """What the agent would read for each query: how many recalled memories each detector flags.

    One row per query (the index), in order: "recalled" (how many memories search returned),
    one column per detector (how many of them it flags), and "clean" (flagged by none).
    """
    rows = []
    for query in queries:
        found = store.search(query, k)
        flags = {name: [bool(flag(m)) for m in found] for name, flag in detectors.items()}
        clean = sum(not any(marks) for marks in zip(*flags.values())) if flags else len(found)
        rows.append({"query": query, "recalled": len(found), **{n: sum(f) for n, f in flags.items()},
                     "clean": clean})
    return pd.DataFrame(rows, columns=["query", "recalled", *detectors, "clean"]).set_index("query")


GUESS = "lacks export permission"  # the refuted guess of t-8801, however it is restated
POISONED_SOURCE = "t-9021"  # the ticket whose body is an instruction to the agent


def poisoning_counts(path: str | Path) -> dict[str, int]:
    """Each poisoning where it lives: in the memory file at `path` (read afresh from disk).

    "PII strings": emails and phone numbers in the memories' text; "copies of the guess":
    memories restating the refuted guess; "from t-9021": memories of the poisoned ticket;
    "raw observations": lines of the loop's trace instead of knowledge.
    """
    items = MemoryStore(path).items
    return {"PII strings": sum(len(find_pii(m.text)) for m in items),
            "copies of the guess": sum(GUESS in m.text for m in items),
            "from t-9021": sum(m.source == POISONED_SOURCE for m in items),
            "raw observations": sum(is_raw_observation(m.text) for m in items)}


def exposing_words(store: MemoryStore, memory_id: str, k: int = 3) -> list[str]:
    """The words of a memory that, each sent alone as a query, make recall return it, sorted.

    A word exposes the memory when `store.search(word, k)` (minimum score included) returns it.
    Only the memory's own tokens are tried: a word it lacks scores it zero.
    """
    memory = next((m for m in store.items if m.id == memory_id), None)
    if memory is None:
        raise ValueError(f"no memory {memory_id!r} in {store.path}")
    return sorted(word for word in set(tokenize(memory.text))
                  if any(m.id == memory_id for m in store.search(word, k)))


# -- choosing a dedupe threshold from labelled pairs -------------------------------------
# A pair is {"a": text, "b": text, "duplicate": bool}; dedupe merges it when
# similarity(a, b) >= threshold. A false merge loses a memory (a changed fact, a second
# incident); a missed duplicate only costs a line. So a threshold must merge no non-duplicate.


def merge_errors(pairs: list[dict], threshold: float) -> dict[str, int]:
    """What dedupe at `threshold` gets wrong on labelled pairs."""
    merged = [similarity(p["a"], p["b"]) >= threshold for p in pairs]
    return {"false merges": sum(m and not p["duplicate"] for m, p in zip(merged, pairs)),
            "missed duplicates": sum(p["duplicate"] and not m for m, p in zip(merged, pairs))}


def choose_threshold(pairs: list[dict], thresholds: list[float]) -> float:
    """The lowest threshold that merges no pair labelled not duplicate."""
    safe = [t for t in thresholds if merge_errors(pairs, t)["false merges"] == 0]
    if not safe:
        raise ValueError(f"every threshold in {sorted(thresholds)} merges a pair labelled not duplicate")
    return min(safe)


# -- abilities, baselines and uncertainty ---------------------------------------------------

ABILITIES = ("extraction", "multi-session", "temporal", "knowledge-update", "abstention")
KNOWLEDGE_UPDATE, ABSTENTION = "knowledge-update", "abstention"


def context_words(context: Sequence[Memory]) -> int:
    """What a context costs the model, counted in words: whitespace-separated pieces of the
    records' texts (a tokenizer would give more tokens than words; the ranking of memories by
    cost is the same)."""
    return sum(len(m.text.split()) for m in context)


def is_stale(context: Sequence[Memory], item: dict) -> bool:
    """Does the context hold the old value of a knowledge-update item?

    `item["stale"]` is a gold item of its own ({"markers", "sources"}): the old value's markers
    and the tickets that stated it. Provenance matters: the update itself names the old value too.
    """
    return hit_any(list(context), item["stale"])


def _knowledge_updates(gold: list[dict]) -> list[int]:
    positions = [i for i, item in enumerate(gold) if item.get("ability") == KNOWLEDGE_UPDATE]
    if not positions:
        raise ValueError("no knowledge-update item in the gold set: the stale-fact rate is undefined")
    return positions


def stale_fact_rate(gold: list[dict], contexts: list[list[Memory]]) -> float:
    """Share of the knowledge-update items whose context (contexts[i] for gold[i]) is stale."""
    if len(gold) != len(contexts):
        raise ValueError(f"one context per gold item: {len(gold)} items, {len(contexts)} contexts")
    positions = _knowledge_updates(gold)
    return sum(is_stale(contexts[i], gold[i]) for i in positions) / len(positions)


@dataclass(frozen=True)
class Reader:
    """A memory as an evaluation sees it: the records it hands the model for a gold item.

    `store` holds every record it could hand (nDCG's ideal counts the relevant ones there; None
    for no memory at all); `k` is how many ranked records the model reads, or None when it reads
    everything it is handed, in the order handed.
    """

    name: str
    hand: Callable[[dict], list[Memory]]
    store: MemoryStore | None = None
    k: int | None = None

    @property
    def corpus(self) -> list[Memory]:
        return self.store.items if self.store is not None else []


def retriever(name: str, store: MemoryStore, k: int) -> Reader:
    """The memory under test: `store.search(query, k)`, minimum score included."""
    return Reader(name, lambda item: store.search(item["query"], k), store, k)


def no_memory() -> Reader:
    """The floor: nothing recalled, ever (so it always abstains)."""
    return Reader("no memory", lambda item: [])


def full_context(store: MemoryStore) -> Reader:
    """Every record of the store, in store order: nothing is missed, and everything is paid for."""
    return Reader("full context", lambda item: list(store.items), store)


def oracle(store: MemoryStore) -> Reader:
    """Only the records of the item's source tickets, in store order (none for abstention)."""
    return Reader("oracle", lambda item: [m for m in store.items if m.source in item["sources"]], store)


def _check_item(item: dict) -> None:
    ability = item.get("ability")
    if ability not in ABILITIES:
        raise ValueError(f"gold item {item.get('query')!r}: ability must be one of {ABILITIES}, not {ability!r}")
    if ability == KNOWLEDGE_UPDATE and "stale" not in item:
        raise ValueError(f"knowledge-update item {item['query']!r} names no stale value (\"stale\")")
    if (ability == ABSTENTION) == bool(markers(item)):
        raise ValueError(f"gold item {item['query']!r}: abstention items and only they have no markers")


def item_scores(reader: Reader, gold: list[dict]) -> pd.DataFrame:
    """One row per gold item: what `reader` handed, scored.

    recall_any, recall_all and nDCG for answerable items (NaN for abstention items), abstained
    for abstention items (handed nothing), stale for knowledge-update items, and words for all.
    """
    corpus = reader.corpus
    rows = []
    for item in gold:
        _check_item(item)
        context = reader.hand(item)
        answerable = item["ability"] != ABSTENTION
        k = reader.k if reader.k is not None else len(context)
        relevant = sum(is_relevant(m, item) for m in corpus) if answerable else 0
        rows.append({"query": item["query"], "ability": item["ability"],
                     "recall_any": hit_any(context, item) if answerable else math.nan,
                     "recall_all": hit_all(context, item) if answerable else math.nan,
                     "nDCG": ndcg(context, item, relevant, k) if answerable else math.nan,
                     "abstained": math.nan if answerable else not context,
                     "stale": is_stale(context, item) if item["ability"] == KNOWLEDGE_UPDATE else math.nan,
                     "words": context_words(context)})
    return pd.DataFrame(rows).set_index("query").astype({"recall_any": float, "recall_all": float, "nDCG": float,
                                                         "abstained": float, "stale": float})


def p95(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The 95th percentile (numpy's linear interpolation)."""
    return np.percentile(values, 95, axis=axis)


RESAMPLES = 2000
SEED = 0


def bootstrap_ci(values: Sequence[float], statistic: Callable = np.mean, *, resamples: int = RESAMPLES,
                 confidence: float = 0.95, seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic` over `values` (one per gold item).

    Resamples the items with replacement, `resamples` times, from a fixed seed; `statistic`
    takes an array and `axis` (np.mean, np.median, p95). The same seed gives the same interval.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("no values to resample")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1, not {resamples}, {confidence}")
    rng = np.random.default_rng(seed)
    stats = statistic(values[rng.integers(0, values.size, size=(resamples, values.size))], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


# The headline figures of item_scores: (column, statistic), each over the items it is defined on.
HEADLINE = {"recall_any@k": ("recall_any", np.mean), "recall_all@k": ("recall_all", np.mean),
            "nDCG@k": ("nDCG", np.mean), "abstention accuracy": ("abstained", np.mean),
            "stale-fact rate": ("stale", np.mean), "words per query (mean)": ("words", np.mean),
            "words per query (p95)": ("words", p95)}


def with_interval(values: Sequence[float], statistic: Callable = np.mean, **bootstrap) -> dict[str, float]:
    """{"value", "low", "high"}: the statistic over `values` and its bootstrap interval."""
    values = np.asarray(values, dtype=float)
    low, high = bootstrap_ci(values, statistic, **bootstrap)
    return {"value": float(statistic(values, axis=0)), "low": low, "high": high}


def headline(scores: pd.DataFrame, **bootstrap) -> pd.DataFrame:
    """Every headline figure of one reader's item_scores with its interval (rows: figures)."""
    return pd.DataFrame({figure: with_interval(scores[column].dropna(), statistic, **bootstrap)
                         for figure, (column, statistic) in HEADLINE.items()}).T


def by_ability(scores: pd.DataFrame, **bootstrap) -> pd.DataFrame:
    """Per ability, the share answered with its interval: recall_all@k (every piece of the answer
    in the context), or for abstention items, abstention accuracy."""
    rows = {}
    for ability in ABILITIES:
        part = scores[scores["ability"] == ability]
        if len(part):
            column = "abstained" if ability == ABSTENTION else "recall_all"
            rows[ability] = with_interval(part[column], **bootstrap)
    return pd.DataFrame(rows).T


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES,
                     confidence: float = 0.95, seed: int = SEED) -> dict[str, float]:
    """Is b better than a on the same items? mean(b - a), its interval, and a two-sided p-value.

    Items are resampled in pairs, so what both get right or wrong cancels out. The p-value is
    twice the share of resampled differences on the far side of zero, with the usual +1 so
    that a finite number of resamples never claims p = 0.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"need two equally long, non-empty lists of paired scores, not {a.size} and {b.size}")
    diff = b - a
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    beyond = min((means <= 0).sum(), (means >= 0).sum())
    return {"difference": float(diff.mean()), "low": float(low), "high": float(high),
            "p_value": float(min(1.0, 2 * (beyond + 1) / (resamples + 1))),
            "b better": int((diff > 0).sum()), "a better": int((diff < 0).sum()), "ties": int((diff == 0).sum())}


def mean_context_words(store: MemoryStore, gold: list[dict], k: int) -> float:
    """Words handed to the model per query when it reads the top k of `store`."""
    return fmean(context_words(store.search(item["query"], k)) for item in gold)


# -- production metrics ------------------------------------------------------------------


def rejection_rate(outcomes: list[str]) -> float:
    """Share of write candidates the rules refused (gate, dedupe, or a cap full of facts).

    0 means the rules do nothing; 1 means the agent learns nothing.
    """
    if not outcomes:
        raise ValueError("no write outcomes to rate")
    return sum(not o.startswith("stored") for o in outcomes) / len(outcomes)


@dataclass(frozen=True)
class Step:
    action: str
    model_call: bool  # does this step ask the model (costs tokens and seconds)?


# The repeated ticket t-9310 ("Export is empty AGAIN"), step by step.
WITHOUT_MEMORY = (
    Step("plan the triage of t-9310", model_call=True),
    Step("read_ticket(t-9310)", model_call=False),
    Step('search_kb("export empty file") -> kb-101', model_call=False),
    Step("reply: ask which filters the customer applied", model_call=True),
    Step("reply: send the kb-101 steps once the customer answers", model_call=True),
)
WITH_RECALL = (
    Step('recall("C-4471 export file is empty again") -> two confirmed resolutions', model_call=False),
    Step("reply: third time, same status filter cause, here are the kb-101 steps", model_call=True),
)


@dataclass(frozen=True)
class TicketCost:
    steps: int
    model_calls: int


def ticket_cost(steps: tuple[Step, ...]) -> TicketCost:
    return TicketCost(steps=len(steps), model_calls=sum(s.model_call for s in steps))
