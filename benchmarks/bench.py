"""The course's speed figures, measured in one run: `make bench` (or python benchmarks/bench.py).

Prints one table. Ratios compare two implementations measured back to back on the same data in
this run, so they hold on any machine; absolute times are this machine's.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import bm25s  # make bench installs it (pyproject.toml's bench extra)
from rank_bm25 import BM25Okapi
from sqlalchemy.exc import SAWarning

from lab_utils import rules
from lab_utils.course import lesson_names, release
from lab_utils.course.autograde import autograde_all
from lab_utils.memory import MemoryStore
from lab_utils.noise import generate_tickets
from lab_utils.paths import ROOT, load_data
from lab_utils.text import tokenize

import grading_strength  # benchmarks/, next to this file

CLASS_SIZE = 24  # submissions graded with JOBS=1 and JOBS=2 for the parallel ratio
QUERIES = [g["query"] for g in load_data("support", "gold.json")] + [
    "export file has no rows after the filter change", "invoice copy for last month",
    "customer asks for a callback about seats", "weekly report export is empty"]


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def raw_store(n: int, folder: Path) -> MemoryStore:
    """A naive store of n generated raw observations."""
    store = MemoryStore(folder / f"raw-{n}.jsonl")
    lines = (line for t in generate_tickets(n // 4 + 1, seed=1) for line in t.raw)
    for _, line in zip(range(n), lines):
        store.remember_raw(line, "noise")
    return store


def rebuild_per_query(store: MemoryStore, query: str, k: int = 3) -> list:
    """The baseline: index every memory again for each query, as a first version would."""
    scores = BM25Okapi([tokenize(m.text) for m in store.items]).get_scores(tokenize(query))
    return sorted(range(len(scores)), key=lambda i: -scores[i])[:k]


def recall_latency(n: int, folder: Path) -> tuple[float, float]:
    store = raw_store(n, folder)
    store.search(QUERIES[0])  # the first query after writes refreshes the IDF table once
    kept = statistics.mean(timed(store.search, q) for q in QUERIES)
    rebuilt = statistics.mean(timed(rebuild_per_query, store, q) for q in QUERIES[: 3 if n > 20_000 else 8])
    return kept, rebuilt


def recall_vs_index(n: int, folder: Path, repeats: int = 10) -> tuple[float, ...]:
    """Median seconds per query: the store's recall, its index's search alone, and bm25s on the
    same tokens (a reference library that `make bench` installs, not a course dependency). Each
    query is timed with the three in turn, so a drift in the machine's speed touches all three alike,
    and each goes first as often as the others: the one after the store's finds its data in the cache."""
    store = raw_store(n, folder)
    store.search(QUERIES[0])  # the first query after writes refreshes the IDF table once
    reference = bm25s.BM25()
    reference.index([tokenize(m.text) for m in store.items], show_progress=False)
    ways = (store.recall, lambda q: store._index.search(q, 3),
            lambda q: reference.retrieve([tokenize(q)], k=3, show_progress=False))
    spent: list[list[float]] = [[] for _ in ways]
    for turn, query in enumerate(QUERIES * repeats):
        for way in [(turn + i) % len(ways) for i in range(len(ways))]:
            spent[way].append(timed(ways[way], query))
    return tuple(map(statistics.median, spent))


def full_scan_dedupe(tokens_of: dict[str, frozenset]):
    """The baseline dedupe: compare the new text with every memory (token sets cached)."""

    def first_duplicate(store: MemoryStore, text: str, threshold: float = rules.SIM_DUP):
        new = frozenset(tokenize(text))
        for m in store.items:
            old = tokens_of.get(m.id)
            if old is None:
                old = tokens_of[m.id] = frozenset(tokenize(m.text))
            if new and old and len(new & old) / len(new | old) >= threshold:
                return m
        return None

    return first_duplicate


def disciplined_writes(n: int, folder: Path, full_scan: bool) -> float:
    memories = [m for t in generate_tickets(n, seed=2) for m in t.memories][:n]
    store = MemoryStore(folder / f"rules-{n}-{full_scan}.jsonl")
    original = rules.find_duplicate
    if full_scan:
        rules.find_duplicate = full_scan_dedupe({})
    try:
        start = time.perf_counter()
        for m in memories:
            rules.remember(store, m["text"], m["kind"], "noise", m["verified"], cap=10**9)
        return time.perf_counter() - start
    finally:
        rules.find_duplicate = original


def lesson_times(folder: Path) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "tests"))
    from nbtools import LESSONS, execute, notebook_path

    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.pop("LAB_LIVE", None)
    os.environ["LAB_WORK_DIR"] = str(folder / "work")
    return {lesson: timed(execute, notebook_path("solutions", lesson), folder / lesson) for lesson in LESSONS}


def course_copy(folder: Path, lessons: list[str]) -> Path:
    """A released course with these lessons, graded with the repository's nbgrader_config.py."""
    for lesson in lessons:
        shutil.copytree(ROOT / "solutions" / lesson, folder / "solutions" / lesson)
    release(folder)
    return folder


def hand_in(root: Path, lesson: str, students: list[str]) -> None:
    for student in students:
        target = root / "submitted" / student / lesson
        target.mkdir(parents=True)
        shutil.copy(root / "solutions" / lesson / f"{lesson}.ipynb", target)


def autograde_times(folder: Path) -> dict[str, float]:
    """Seconds to autograde one submission (the solution) of each lesson, sandboxed, one at a time."""
    root = course_copy(folder / "course", lesson_names())
    for lesson in lesson_names(root):
        hand_in(root, lesson, ["bench"])
    return {o.lesson: o.seconds for o in autograde_all(root)}


def parallel_class(folder: Path, students: int = CLASS_SIZE, rounds: int = 3) -> dict[int, list[float]]:
    """Wall-clock seconds to autograde a class (the first lesson) with JOBS=1 and JOBS=2, alternating,
    `rounds` times each: a shared virtual machine's speed drifts by a fifth from one minute to the next."""
    lesson = lesson_names()[0]
    root = course_copy(folder / "class", [lesson])
    hand_in(root, lesson, [f"student-{i:03d}" for i in range(students)])
    times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for jobs in times:
            times[jobs].append(timed(lambda jobs=jobs: list(autograde_all(root, jobs=jobs))))
    return times


def redaction_rows() -> list[tuple[str, str]]:
    """redact's recall and false-positive rate on the PII test set (data/pii/cases.json and every
    region's example numbers), beside phonenumbers' own PhoneNumberMatcher (phones only)."""
    from lab_utils.attacks import pii

    goals = pii.summary(pii.table(rules.redact))
    return [(f"redact: {goal}", f"{row['redact']:.1%} (phonenumbers matcher {row['phonenumbers matcher']:.1%}); "
             f"{row['cases']} cases{', goal ' + row['goal'] if row['goal'] else ''}")
            for goal, row in goals.iterrows()]


def main() -> None:
    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's gradebook chatter
    os.environ["LAB_PROGRESS"] = "0"  # the output is one table: no bars drawn through it
    from lab_utils.proposer.campaign import run_study
    from lab_utils.temporal import Config, evaluate, grid, load_scenarios

    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for lesson, seconds in lesson_times(folder).items():
            rows.append((f"lesson {lesson} executes (nbclient, offline)", f"{seconds:.1f} s"))
        for n in (1_000, 10_000, 100_000):
            kept, rebuilt = recall_latency(n, folder)
            rows.append((f"recall at {n:,} memories: kept index / rebuild per query",
                         f"{kept * 1e3:.1f} ms / {rebuilt * 1e3:.0f} ms = {rebuilt / kept:.0f}x faster"))
        for n in (1_000, 10_000, 50_000):
            recall, index, reference = recall_vs_index(n, folder)
            rows.append((f"at {n:,} memories: store recall / its index's search / bm25s",
                         f"{recall * 1e3:.2f} ms / {index * 1e3:.2f} ms = {recall / index:.2f}x; "
                         f"bm25s {reference * 1e3:.2f} ms"))
        indexed = disciplined_writes(10_000, folder, full_scan=False)
        scanned = disciplined_writes(10_000, folder, full_scan=True)
        rows.append(("10,000 disciplined writes: token index / full-scan dedupe",
                     f"{indexed:.1f} s / {scanned:.1f} s = {scanned / indexed:.0f}x faster"))
        scenarios = load_scenarios()
        one = statistics.mean(timed(evaluate, Config(), scenarios) for _ in range(20))
        rows.append(("evaluator on the 20 scenarios", f"{one * 1e3:.1f} ms"))
        rows.append(("evaluator over the 384-configuration grid",
                     f"{timed(lambda: [evaluate(c, scenarios) for c in grid()]):.1f} s"))
        rows.append(("one offline campaign (3 x 4, replayed)",
                     f"{timed(run_study, folder / 'campaign', 3, 4, 0.50):.2f} s"))
        times = autograde_times(folder)
        rows.append((f"autograde one submission, sandboxed, lessons {min(times)[:2]}-{max(times)[:2]}",
                     " / ".join(f"{seconds:.1f}" for seconds in times.values()) + " s"))
        times = parallel_class(folder)
        one, two = min(times[1]), min(times[2])  # the best of each, as timeit does: noise only adds
        runs = " / ".join(", ".join(f"{t:.0f}" for t in times[jobs]) for jobs in (1, 2))
        rows.append((f"autograde a class of {CLASS_SIZE} ({lesson_names()[0]}): JOBS=1 / JOBS=2, best of "
                     f"{len(times[1])}", f"{one:.0f} s / {two:.0f} s = {one / two:.2f}x faster (runs: {runs} s)"))
    mutants = [o for outcomes in grading_strength.measure(grading_strength.LESSONS).values() for o in outcomes]
    rows.append(("mutants of the solutions' answers (make grading-strength)",
                 grading_strength.describe(*grading_strength.shares(mutants))))
    rows += redaction_rows()
    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)} | result")
    print(f"{'-' * width}-|-{'-' * 40}")
    for name, value in rows:
        print(f"{name.ljust(width)} | {value}")


if __name__ == "__main__":
    main()
