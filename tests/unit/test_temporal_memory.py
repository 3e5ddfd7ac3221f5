"""The write policy, the reader and deletion, one rule per test."""

import pytest

from lab_utils.temporal import Config, Fact, MemoryRecord, TemporalMemory, WriteEvent
from lab_utils.temporal.writer import classify_update

ADA = ("north", "ada")


def write(value, at, *, valid_from=None, key="city", entity="account", confidence=0.95,
          source="user", kind="fact", actor=ADA, owner=None, event_id="test:event"):
    owner = owner or actor
    event = {"action": "write", "at": at, "actor": {"tenant": actor[0], "user": actor[1]},
             "fact": {"tenant": owner[0], "user": owner[1], "entity": entity, "key": key,
                      "value": value, "confidence": confidence, "source": source,
                      "kind": kind, "valid_from": valid_from or at},
             "should_retain": True}
    if event_id:
        event["source_event_id"] = f"{event_id}-{value}"
    return event


def query(as_of, *, key="city", entity="account", text="which city", actor=ADA):
    return {"action": "query", "at": as_of, "actor": {"tenant": actor[0], "user": actor[1]},
            "entity": entity, "key": key, "as_of": as_of, "text": text, "expect": None}


def delete(at, *, key="city", entity="account", actor=ADA):
    return {"action": "delete", "at": at, "actor": {"tenant": actor[0], "user": actor[1]},
            "entity": entity, "key": key}


@pytest.fixture
def moved():
    """Berlin from Jan 1; on Jan 3 a move to Paris effective Jan 10 (the article's story)."""
    memory = TemporalMemory(Config())
    memory.write(write("Berlin", "2026-01-01"))
    memory.write(write("Paris", "2026-01-03", valid_from="2026-01-10"))
    return memory


def assert_refused(memory, event, status, reason):
    before = memory.records
    result = memory.write(event)
    assert (result.status, result.retained) == (status, False)
    assert reason in result.reason
    assert memory.records is before  # nothing changed, not even a copy


# --- the writer ---------------------------------------------------------------------------

def test_an_update_closes_the_active_record_and_links_back(moved):
    berlin, paris = moved.records
    assert (berlin.value, berlin.valid_from, berlin.valid_to) == ("Berlin", "2026-01-01", "2026-01-10")
    assert (paris.value, paris.valid_from, paris.valid_to) == ("Paris", "2026-01-10", None)
    assert paris.supersedes_memory_id == berlin.id == "m001"
    assert paris.id == "m002" and paris.observed_at == "2026-01-03"
    assert paris.source_event_id == "test:event-Paris"


def test_the_write_result_says_what_happened():
    memory = TemporalMemory()
    first = memory.write(write("Berlin", "2026-01-01"))
    second = memory.write(write("Paris", "2026-01-02"))
    assert (first.status, first.record_id, first.closed_id) == ("stored", "m001", None)
    assert (second.status, second.record_id, second.closed_id) == ("stored", "m002", "m001")


def test_same_date_with_another_value_is_a_conflict(moved):
    assert_refused(moved, write("Rome", "2026-01-04", valid_from="2026-01-10"), "rejected", "conflict")


def test_same_date_with_the_same_value_reuses_the_record(moved):
    before = moved.records
    result = moved.write(write("Paris", "2026-01-04", valid_from="2026-01-10"))
    assert (result.status, result.record_id, result.retained) == ("reused", "m002", True)
    assert moved.records == before


def test_an_earlier_valid_from_than_the_active_record_is_not_backfilled(moved):
    assert_refused(moved, write("Rome", "2026-01-05"), "rejected", "backfill")


def test_a_fact_claiming_another_owner_is_rejected_even_at_full_confidence(moved):
    spoof = write("SPOOF", "2026-01-04", owner=("south", "ada"), confidence=1.0)
    assert_refused(moved, spoof, "rejected", "owner mismatch")


@pytest.mark.parametrize("changes, why", [
    ({"key": "password"}, "key 'password'"),
    ({"source": "retrieved"}, "source 'retrieved'"),
    ({"source": "tool"}, "source 'tool'"),
    ({"kind": "instruction"}, "kind 'instruction'"),
])
def test_prohibited_writes_are_rejected_whatever_the_config(changes, why):
    memory = TemporalMemory(Config(min_confidence=0.0))
    assert_refused(memory, write("SENTINEL", "2026-01-01", **changes), "rejected",
                   f"prohibited write: {why}")


def test_below_min_confidence_the_writer_abstains():
    memory = TemporalMemory(Config(min_confidence=0.7))
    assert_refused(memory, write("Lisbon", "2026-01-01", confidence=0.6), "abstained", "below")


def test_confidence_equal_to_the_threshold_is_admitted():
    memory = TemporalMemory(Config(min_confidence=0.6))
    assert memory.write(write("Lisbon", "2026-01-01", confidence=0.6)).status == "stored"


@pytest.mark.parametrize("field, bad, named", [
    ("valid_from", "2026-02-30", "fact.valid_from"),
    ("valid_from", "2026-1-5", "fact.valid_from"),
    ("confidence", "high", "fact.confidence"),
    ("source", None, "fact.source"),
])
def test_malformed_input_is_rejected_by_field_and_stores_nothing(moved, field, bad, named):
    event = write("Rome", "2026-01-11")
    event["fact"][field] = bad
    assert_refused(moved, event, "rejected", f"malformed: {named}")


def test_a_fact_with_a_missing_field_is_malformed(moved):
    event = write("Rome", "2026-01-11")
    del event["fact"]["source"]
    assert_refused(moved, event, "rejected", "fact.source: Field required")


def test_a_write_without_provenance_is_unsourced():
    assert_refused(TemporalMemory(), write("Berlin", "2026-01-01", event_id=None),
                   "rejected", "unsourced")


def test_without_deduplicate_a_repeated_value_is_a_new_version():
    memory = TemporalMemory(Config(deduplicate=False))
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        memory.write(write("German", day, key="language"))
    assert [(r.valid_from, r.valid_to) for r in memory.records] == [
        ("2026-01-01", "2026-01-02"), ("2026-01-02", "2026-01-03"), ("2026-01-03", None)]


def test_deduplicate_reuses_the_active_record_for_a_later_confirmation():
    memory = TemporalMemory(Config(deduplicate=True))
    results = [memory.write(write("German", day, key="language"))
               for day in ("2026-01-01", "2026-01-02", "2026-01-03")]
    assert [r.status for r in results] == ["stored", "reused", "reused"]
    assert [(r.id, r.valid_from, r.valid_to) for r in memory.records] == [("m001", "2026-01-01", None)]


def test_deduplicate_compares_with_the_active_value_only():
    memory = TemporalMemory(Config(deduplicate=True))
    for value, day in (("French", "2026-02-01"), ("Spanish", "2026-02-05"), ("French", "2026-02-09")):
        memory.write(write(value, day, key="language"))
    assert [r.value for r in memory.records] == ["French", "Spanish", "French"]


def test_write_accepts_the_event_model_too():
    event = WriteEvent.model_validate(write("Berlin", "2026-01-01"))
    assert TemporalMemory().write(event).status == "stored"


# --- the reader ---------------------------------------------------------------------------

@pytest.mark.parametrize("as_of, time_aware, answer", [
    ("2026-01-05", False, "Paris"),   # the published failure: newest wins, validity unchecked
    ("2026-01-05", True, "Berlin"),
    ("2026-01-09", True, "Berlin"),
    ("2026-01-10", True, "Paris"),    # Paris starts on the 10th itself
    ("2025-12-31", True, None),       # before anything was true
])
def test_time_aware_reads_the_value_valid_on_the_asked_day(moved, as_of, time_aware, answer):
    moved.config = Config(time_aware=time_aware)
    assert moved.query(query(as_of)).answer == answer


def test_owner_isolation_holds_with_every_filter_off_and_top_k_at_most():
    memory = TemporalMemory(Config(top_k=8))
    memory.write(write("Berlin", "2026-01-01"))
    memory.write(write("Paris", "2026-01-02", actor=("south", "ada")))
    memory.write(write("Rome", "2026-01-03", actor=("north", "ben")))
    result = memory.query(query("2026-01-04"))
    assert (result.answer, result.kept_ids) == ("Berlin", ["m001"])
    assert memory.query(query("2026-01-04", actor=("east", "eve"))).kept_ids == []


@pytest.mark.parametrize("filter_entity, answer", [(False, "Paris"), (True, "Berlin")])
def test_filter_entity_keeps_the_asked_entity(filter_entity, answer):
    memory = TemporalMemory(Config(filter_entity=filter_entity))
    memory.write(write("Berlin", "2026-01-01", entity="home"))
    memory.write(write("Paris", "2026-01-02", entity="work"))
    assert memory.query(query("2026-01-03", entity="home")).answer == answer


def test_ranking_puts_the_asked_key_first_then_shared_words_then_the_newest():
    memory = TemporalMemory(Config(top_k=8))
    memory.write(write("Berlin", "2026-01-01", entity="home"))
    memory.write(write("Paris", "2026-01-02", entity="work"))
    memory.write(write("German", "2026-01-03", key="language"))
    newest_first = memory.query(query("2026-01-04", text="which city"))
    assert newest_first.kept_ids == ["m002", "m001", "m003"]
    home_named = memory.query(query("2026-01-04", text="which city is ada's home in"))
    assert (home_named.kept_ids[0], home_named.answer) == ("m001", "Berlin")


def test_top_k_bounds_the_kept_records():
    memory = TemporalMemory(Config(top_k=2))
    for day, city in (("01", "Lyon"), ("02", "Rome"), ("03", "Oslo")):
        memory.write(write(city, f"2026-01-{day}", entity=f"project-{day}"))
    assert memory.query(query("2026-01-04")).kept_ids == ["m003", "m002"]


def test_a_malformed_query_raises_naming_the_field():
    bad = query("2026-13-01")
    with pytest.raises(ValueError, match="as_of"):
        TemporalMemory().query(bad)


# --- deletion -----------------------------------------------------------------------------

def test_delete_removes_every_version_of_the_key_in_the_owners_entity_only():
    memory = TemporalMemory()
    memory.write(write("Berlin", "2026-01-01"))
    memory.write(write("Paris", "2026-01-02"))
    memory.write(write("German", "2026-01-03", key="language"))
    memory.write(write("Oslo", "2026-01-04", entity="office"))
    memory.write(write("Rome", "2026-01-04", actor=("north", "ben")))
    result = memory.delete(delete("2026-01-05"))
    assert (result.status, result.deleted_ids) == ("deleted", ["m001", "m002"])
    assert [r.value for r in memory.records] == ["German", "Oslo", "Rome"]


def test_nobody_can_delete_another_owners_facts():
    memory = TemporalMemory()
    memory.write(write("Berlin", "2026-01-01"))
    result = memory.delete(delete("2026-01-02", actor=("north", "ben")))
    assert (result.status, result.deleted_ids) == ("nothing to delete", [])
    assert len(memory.records) == 1


def test_a_write_after_delete_starts_a_fresh_history():
    memory = TemporalMemory(Config(time_aware=True))
    memory.write(write("Berlin", "2026-01-01"))
    memory.delete(delete("2026-01-02"))
    result = memory.write(write("Paris", "2026-01-04"))
    (paris,) = memory.records
    assert (result.status, paris.id, paris.supersedes_memory_id) == ("stored", "m002", None)
    assert memory.query(query("2026-01-01")).answer is None  # no trace of Berlin's history
    assert memory.query(query("2026-01-05")).answer == "Paris"


def test_apply_dispatches_on_the_action():
    memory = TemporalMemory()
    assert memory.apply(write("Berlin", "2026-01-01")).status == "stored"
    assert memory.apply(query("2026-01-02")).answer == "Berlin"
    assert memory.apply(delete("2026-01-03")).deleted_ids == ["m001"]
    with pytest.raises(ValueError, match="action"):
        memory.apply({"action": "forget"})


# classify_update is rule 5 on its own (lesson 05's exercise 2 is tested against it).
@pytest.mark.parametrize("active_from, value, dedupe, expected", [
    (None, "Berlin", False, "store"),
    ("2026-01-05", "Paris", False, "backfill"), ("2026-01-05", "Berlin", True, "backfill"),
    ("2026-01-02", "Berlin", True, "reuse"), ("2026-01-02", "Paris", True, "conflict"),
    ("2026-01-01", "Berlin", False, "store"), ("2026-01-01", "Berlin", True, "reuse"),
    ("2026-01-01", "berlin", True, "store"),
])
def test_classify_update_is_rule_5_alone(active_from, value, dedupe, expected):
    owner = {"tenant": "north", "user": "ada", "entity": "account", "key": "city",
             "confidence": 0.9, "source": "user"}
    active = active_from and MemoryRecord(**owner, value="Berlin", valid_from=active_from, id="m001",
                                          source_event_id="e1", observed_at=active_from)
    fact = Fact(**owner, value=value, kind="fact", valid_from="2026-01-02")
    assert classify_update(active, fact, dedupe) == expected
