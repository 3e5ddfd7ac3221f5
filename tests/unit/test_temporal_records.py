"""The typed record and the configuration: strict, so bad input fails loudly and by name."""

import pytest
from pydantic import ValidationError

from lab_utils.temporal import Config, MemoryRecord, grid, valid_at

PARIS = {
    "tenant": "north", "user": "ada", "entity": "account", "key": "city", "value": "Paris",
    "confidence": 0.95, "source": "user", "valid_from": "2026-01-10", "schema_version": 1,
    "memory_type": "fact", "id": "m002", "source_event_id": "future-move:event-2",
    "observed_at": "2026-01-03", "valid_to": None, "supersedes_memory_id": "m001",
}


def record(**changes) -> MemoryRecord:
    return MemoryRecord.model_validate({**PARIS, **changes})


def rejected_fields(**changes) -> set[str]:
    with pytest.raises(ValidationError) as caught:
        record(**changes)
    return {".".join(map(str, e["loc"])) for e in caught.value.errors()}


def test_the_articles_paris_record_is_valid():
    paris = record()
    assert paris.model_dump() == PARIS
    assert (paris.schema_version, paris.memory_type, paris.valid_to) == (1, "fact", None)


def test_extra_fields_are_forbidden():
    assert rejected_fields(kind="fact") == {"kind"}


@pytest.mark.parametrize("bad", ["2026-1-5", "2026-02-30", "20260105", "2026-W02-1",
                                 "2026-01-10T00:00", "", "yesterday"])
def test_dates_must_be_real_canonical_calendar_dates(bad):
    assert rejected_fields(valid_from=bad) == {"valid_from"}
    assert rejected_fields(observed_at=bad) == {"observed_at"}


@pytest.mark.parametrize("field, bad", [
    ("confidence", "0.9"), ("confidence", True), ("confidence", 1.5), ("confidence", -0.1),
    ("confidence", float("nan")), ("tenant", 7), ("value", ""), ("value", "   "),
    ("valid_to", 20260111), ("schema_version", 2), ("memory_type", "episode"),
    ("id", "1"), ("supersedes_memory_id", "Berlin"), ("source_event_id", None),
])
def test_wrong_types_and_values_are_rejected(field, bad):
    assert rejected_fields(**{field: bad}) == {field}


@pytest.mark.parametrize("end", ["2026-01-10", "2026-01-09"])
def test_a_closed_interval_must_end_after_it_starts(end):
    with pytest.raises(ValidationError, match="valid_to .* must be after valid_from"):
        record(valid_to=end)


def test_berlin_may_end_the_day_paris_starts():
    berlin = record(value="Berlin", valid_from="2026-01-01", valid_to="2026-01-10", id="m001",
                    supersedes_memory_id=None)
    assert berlin.valid_to == record().valid_from


def test_records_are_immutable():
    with pytest.raises(ValidationError):
        record().value = "Rome"


@pytest.mark.parametrize("day, expected", [
    ("2025-12-31", False), ("2026-01-01", True), ("2026-01-09", True), ("2026-01-10", False)])
def test_valid_at_is_start_inclusive_end_exclusive(day, expected):
    berlin = record(valid_from="2026-01-01", valid_to="2026-01-10")
    assert valid_at(berlin, day) is expected


def test_an_open_record_is_valid_from_its_start_onwards():
    assert not valid_at(record(), "2026-01-09")
    assert valid_at(record(), "2026-01-10") and valid_at(record(), "2099-12-31")


def test_config_defaults_are_the_published_baseline():
    assert Config().model_dump() == {"min_confidence": 0.7, "filter_entity": False,
                                     "time_aware": False, "deduplicate": False, "top_k": 3}


@pytest.mark.parametrize("settings, field", [
    ({"min_confidence": 1.01}, "min_confidence"), ({"min_confidence": -0.1}, "min_confidence"),
    ({"top_k": 0}, "top_k"), ({"top_k": 9}, "top_k"), ({"top_k": 3.0}, "top_k"),
    ({"filter_entity": "true"}, "filter_entity"), ({"deduplicate": 1}, "deduplicate"),
    ({"max_records": 10}, "max_records"),
])
def test_config_rejects_out_of_bounds_values_and_unknown_settings(settings, field):
    with pytest.raises(ValidationError) as caught:
        Config.model_validate(settings)
    assert [e["loc"] for e in caught.value.errors()] == [(field,)]


def test_config_bounds_are_inclusive():
    assert Config(min_confidence=0, top_k=1) and Config(min_confidence=1, top_k=8)


def test_the_grid_has_384_distinct_configurations():
    configs = list(grid())
    assert len(configs) == len(set(configs)) == 384
    assert {c.min_confidence for c in configs} == {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}
    assert {c.top_k for c in configs} == set(range(1, 9))
