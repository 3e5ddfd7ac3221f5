"""The published figures (SCENARIOS.md) reproduce from data/scenarios and the code."""

import time
from collections import defaultdict

import pytest

import lab_utils.temporal.deletion as deletion
import lab_utils.temporal.reader as reader
from lab_utils.temporal import HELDOUT, Config, evaluate, grid, load_scenarios
from lab_utils.temporal.reader import QueryResult

FILTERS = {"filter_entity": True, "time_aware": True}
FINAL = {**FILTERS, "deduplicate": True, "min_confidence": 0.6}
BASELINE_FAILS = {"entity-grounding", "historical-address", "future-move", "distractor-retrieval",
                  "selective-deletion", "useful-low-confidence", "history-boundary"}

PUBLISHED = [  # settings, passed, mean stored records, failing scenarios (None: not published)
    pytest.param({}, 13, 1.70, BASELINE_FAILS, id="baseline"),
    pytest.param(FILTERS, 19, 1.70, {"useful-low-confidence"}, id="filters"),
    pytest.param({**FILTERS, "deduplicate": True}, 19, 1.60, {"useful-low-confidence"},
                 id="filters+dedupe"),
    pytest.param({**FILTERS, "min_confidence": 0.2}, 16, 1.95,
                 {"unnecessary-write", "uncertain-conflict", "uncertain-timezone",
                  "clean-abstention"}, id="broad-writes"),
    pytest.param(FINAL, 20, 1.65, set(), id="final"),
    pytest.param({"filter_entity": True}, 16, None, None, id="entity-filter-alone"),
    pytest.param({"time_aware": True}, 16, None, None, id="time-filter-alone"),
    pytest.param({"deduplicate": True}, 13, 1.60, None, id="dedupe-alone"),
    pytest.param({"min_confidence": 0.6}, 14, 1.75, None, id="threshold-0.6-alone"),
]


@pytest.fixture(scope="module")
def public():
    return load_scenarios()


def assert_hard_checks_clean(report):
    counts = {name: (c.checks, c.violations) for name, c in report.totals.checks.items()}
    assert counts == {"owner_isolation": (28, 0), "deletion": (11, 0), "prohibited_writes": (2, 0)}
    assert report.totals.hard_check_violations == 0


@pytest.mark.parametrize("settings, passed, mean_stored, fails", PUBLISHED)
def test_published_figure(public, settings, passed, mean_stored, fails):
    report = evaluate(Config(**settings), public)
    assert (report.totals.passed, report.totals.total) == (passed, 20)
    if mean_stored is not None:
        assert report.totals.mean_stored_records == pytest.approx(mean_stored)
    if fails is not None:
        assert set(report.failed_ids()) == fails
    assert_hard_checks_clean(report)


def test_the_public_set_is_the_published_one(public):
    assert len(public) == 20
    roles = defaultdict(int)
    for scenario in public:
        roles[scenario.role] += 1
    assert dict(roles) == {"search": 6, "evaluation": 7, "adversarial": 7}


def test_baseline_failures_are_the_published_wrong_answers(public):
    by_id = {s.id: s for s in evaluate(Config(), public).scenarios}
    assert by_id["entity-grounding"].answers == ["Paris"]
    assert by_id["future-move"].answers == ["Paris", "Paris"]
    assert by_id["distractor-retrieval"].answers == ["Bath"]
    assert by_id["selective-deletion"].answers == ["Oslo", "German", "Oslo", "Oslo"]
    assert by_id["useful-low-confidence"].answers == [None]
    assert by_id["history-boundary"].answers == ["Paris", "Paris"]
    assert by_id["duplicate-confirmation"].stored_records == 3


def test_the_retrospective_grid(public):
    start = time.perf_counter()
    reports = {config: evaluate(config, public) for config in grid()}
    assert time.perf_counter() - start < 30  # a few seconds in practice
    assert len(reports) == 384
    perfect = [c for c, r in reports.items() if r.totals.passed == 20]
    assert len(perfect) == 16
    assert {(c.min_confidence, c.filter_entity, c.time_aware) for c in perfect} == {(0.6, True, True)}
    assert all(r.totals.hard_check_violations == 0 for r in reports.values())
    # top_k never matters: the same answers and records whatever top_k is.
    outcomes = defaultdict(set)
    for config, report in reports.items():
        outcome = tuple((s.id, tuple(s.answers), s.stored_records) for s in report.scenarios)
        outcomes[config.model_copy(update={"top_k": 0})].add(outcome)
    assert all(len(seen) == 1 for seen in outcomes.values())
    # The selection rule (hard checks, then success, then fewer records) picks the final config.
    best = min(reports.values(), key=lambda r: (
        r.totals.hard_check_violations > 0, -r.totals.passed, r.totals.mean_stored_records))
    assert best.config.model_dump(exclude={"top_k"}) == Config(**FINAL).model_dump(exclude={"top_k"})


def test_the_public_set_evaluates_well_under_a_second(public):
    start = time.perf_counter()
    evaluate(Config(), public)
    assert time.perf_counter() - start < 1


def test_traces_show_every_event_with_its_state(public):
    (future,) = [s for s in public if s.id == "future-move"]
    steps = evaluate(Config(), [future]).scenarios[0].traces
    assert [(s.step, s.event_id, s.action) for s in steps] == [
        (1, "future-move:event-1", "write"), (2, "future-move:event-2", "write"),
        (3, "future-move:event-3", "query"), (4, "future-move:event-4", "query")]
    assert steps[1].before == steps[0].after and len(steps[1].after) == 2
    paris = steps[1].after[1]
    assert paris.model_dump() == {
        "tenant": "north", "user": "ada", "entity": "account", "key": "city", "value": "Paris",
        "confidence": 0.95, "source": "user", "valid_from": "2026-01-10", "schema_version": 1,
        "memory_type": "fact", "id": "m002", "source_event_id": "future-move:event-2",
        "observed_at": "2026-01-03", "valid_to": None, "supersedes_memory_id": "m001"}
    trace = steps[2].to_json()
    assert trace["result"] == {"answer": "Paris", "record_id": "m002", "kept_ids": ["m002", "m001"]}
    assert trace["detail"]["as_of"] == "2026-01-05" and len(trace["after"]) == 2


def test_report_json_has_the_cli_shape(public):
    data = evaluate(Config(**FINAL), public).to_json()
    assert data["config"] == Config(**FINAL).model_dump()
    assert data["totals"]["passed"] == 20 and data["totals"]["hard_check_violations"] == 0
    first = data["scenarios"][0]
    assert {"id", "passed", "answers", "expected", "hard_checks", "stored_records"} <= set(first)
    assert set(first["hard_checks"]) == {"owner_isolation", "deletion", "prohibited_writes"}


# --- the hard checks bite: break the fixed code on purpose and watch them fail ------------

def by_id(report):
    return {s.id: s for s in report.scenarios}


def test_a_reader_that_leaks_across_owners_violates_owner_isolation(public, monkeypatch):
    def leaky(records, event, config):
        kept = sorted(records, key=lambda r: r.observed_at, reverse=True)[: config.top_k]
        hit = next((r for r in kept if r.key == event.key), None)
        return QueryResult(answer=hit and hit.value, record_id=hit and hit.id,
                           kept_ids=[r.id for r in kept])

    monkeypatch.setattr(reader, "query", leaky)
    result = by_id(evaluate(Config(**FINAL), public))["tenant-isolation"]
    assert not result.passed and not result.hard_checks["owner_isolation"]


def test_a_delete_that_keeps_history_violates_deletion(public, monkeypatch):
    original = deletion.delete

    def forgets_only_current(records, event):
        remaining, result = original(records, event)
        history = tuple(r for r in records if r.id in result.deleted_ids and r.valid_to)
        return remaining + history, result

    monkeypatch.setattr(deletion, "delete", forgets_only_current)
    result = by_id(evaluate(Config(**FINAL), public))["selective-deletion"]
    assert not result.passed and not result.hard_checks["deletion"]


def test_a_writer_without_the_gate_violates_prohibited_writes(public, monkeypatch):
    monkeypatch.setattr("lab_utils.temporal.writer.prohibited", lambda fact: None)
    results = by_id(evaluate(Config(**FINAL), public))
    for sid in ("persistent-poison", "prohibited-secret"):
        assert not results[sid].hard_checks["prohibited_writes"]
        assert not results[sid].passed


# --- the held-out set -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def heldout():
    return load_scenarios(HELDOUT)


def test_the_heldout_set_is_separate_and_covers_every_family(public, heldout):
    assert len(heldout) >= 8
    assert not {s.id for s in heldout} & {s.id for s in public}
    families = {s.family for s in heldout}
    assert {"useful_write", "abstention", "entity_grounding", "update", "temporal", "conflict",
            "retrieval", "deletion", "poisoning", "deduplication"} <= families
    assert families & {"tenant_isolation", "user_isolation"}
    assert {s.role for s in heldout} == {"search", "evaluation", "adversarial"}


def test_the_heldout_set_runs_and_keeps_every_hard_check(heldout):
    for settings in ({}, FILTERS, FINAL):
        report = evaluate(Config(**settings), heldout)
        assert report.totals.hard_check_violations == 0
        assert all(c.checks > 0 for c in report.totals.checks.values())
    assert evaluate(Config(**FINAL), heldout).failed_ids() == []
    assert evaluate(Config(), heldout).totals.passed < len(heldout)


@pytest.mark.parametrize("threshold", [0.5, 0.7])
def test_the_heldout_set_catches_a_threshold_that_only_fits_the_public_set(public, heldout, threshold):
    # 0.5 also scores 20/20 on the public set (nothing there sits between 0.4 and 0.6).
    settings = {**FINAL, "min_confidence": threshold}
    if threshold == 0.5:
        assert evaluate(Config(**settings), public).totals.passed == 20
    assert "threshold-neighbours" in evaluate(Config(**settings), heldout).failed_ids()
