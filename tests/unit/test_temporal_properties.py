"""Property tests: whatever happens, no query returns another owner's record."""

from hypothesis import given, settings
from hypothesis import strategies as st

from lab_utils.temporal import Config, TemporalMemory
from lab_utils.temporal.records import owner, scope

TENANTS = ["north", "south"]
USERS = ["ada", "ben"]
DAYS = [f"2026-01-{day:02d}" for day in range(1, 21)]

actors = st.fixed_dictionaries({"tenant": st.sampled_from(TENANTS), "user": st.sampled_from(USERS)})
facts = st.fixed_dictionaries({
    "tenant": st.sampled_from(TENANTS), "user": st.sampled_from(USERS),
    "entity": st.sampled_from(["account", "home", "work"]),
    "key": st.sampled_from(["city", "language", "password"]),
    "value": st.sampled_from(["Berlin", "Paris", "German", "home", "city"]),
    "confidence": st.sampled_from([0.1, 0.5, 0.7, 0.95, 1.0]),
    "source": st.sampled_from(["user", "user", "retrieved"]),
    "kind": st.sampled_from(["fact", "fact", "instruction"]),
    "valid_from": st.sampled_from(DAYS)})
writes = st.fixed_dictionaries({
    "action": st.just("write"), "at": st.sampled_from(DAYS), "actor": actors, "fact": facts,
    "should_retain": st.booleans(), "source_event_id": st.just("property:event")})
queries = st.fixed_dictionaries({
    "action": st.just("query"), "at": st.sampled_from(DAYS), "actor": actors,
    "entity": st.sampled_from(["account", "home", "work"]),
    "key": st.sampled_from(["city", "language", "password"]),
    "as_of": st.sampled_from(DAYS), "text": st.sampled_from(["which city", "ada ben home work"]),
    "expect": st.none()})
deletes = st.fixed_dictionaries({
    "action": st.just("delete"), "at": st.sampled_from(DAYS), "actor": actors,
    "entity": st.sampled_from(["account", "home"]), "key": st.sampled_from(["city", "language"])})
configs = st.builds(Config, min_confidence=st.sampled_from([0.0, 0.6, 0.7]),
                    filter_entity=st.booleans(), time_aware=st.booleans(),
                    deduplicate=st.booleans(), top_k=st.integers(1, 8))


@settings(max_examples=300, deadline=None)
@given(configs, st.lists(st.one_of(writes, queries, deletes), max_size=40))
def test_no_query_ever_returns_another_owners_record(config, events):
    memory = TemporalMemory(config)
    for event in events:
        result = memory.apply(event)
        if event["action"] != "query":
            continue
        asker = (event["actor"]["tenant"], event["actor"]["user"])
        by_id = {r.id: r for r in memory.records}
        assert all(owner(by_id[i]) == asker for i in result.kept_ids)
        assert result.record_id is None or owner(by_id[result.record_id]) == asker


@settings(max_examples=200, deadline=None)
@given(configs, st.lists(st.one_of(writes, deletes), max_size=40))
def test_each_slot_keeps_one_open_record_and_non_overlapping_history(config, events):
    memory = TemporalMemory(config)
    for event in events:
        memory.apply(event)
    slots = {}
    for record in memory.records:
        slots.setdefault(scope(record), []).append(record)
    for history in slots.values():
        assert [r.valid_to for r in history].count(None) == 1
        for earlier, later in zip(history, history[1:]):
            assert earlier.valid_to == later.valid_from
            assert later.supersedes_memory_id == earlier.id
