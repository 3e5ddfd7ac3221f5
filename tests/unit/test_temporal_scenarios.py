"""Scenario files load strictly; a malformed one is reported by file, event and field."""

import json

import pytest

from lab_utils.temporal import PUBLIC, ScenarioError, load_scenarios
from lab_utils.temporal.scenarios import load_scenario


@pytest.fixture
def future_move():
    return json.loads((PUBLIC / "future-move.json").read_text())


def saved(tmp_path, data, name="broken.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_every_public_file_is_named_after_its_scenario():
    for path in sorted(PUBLIC.glob("*.json")):
        assert load_scenario(path).id == path.stem


@pytest.mark.parametrize("break_it, where", [
    (lambda s: s["events"][1]["fact"].update(valid_from="2026-02-30"), "event 2, field fact.valid_from"),
    (lambda s: s["events"][0]["fact"].update(confidence="high"), "event 1, field fact.confidence"),
    (lambda s: s["events"][2].update(as_of="2026-1-5"), "event 3, field as_of"),
    (lambda s: s["events"][3].pop("expect"), "event 4, field expect"),
    (lambda s: s["events"][0]["actor"].update(role="admin"), "event 1, field actor.role"),
    (lambda s: s["events"][1].pop("action"), "event 2, field action"),
    (lambda s: s["events"][1].update(action="forget"), "event 2, field action"),
    (lambda s: s["events"][3].update(at="2026-01-02"), "event 4, field at"),
    (lambda s: s.update(role="training"), "field role"),
])
def test_a_malformed_scenario_names_file_event_and_field(tmp_path, future_move, break_it, where):
    break_it(future_move)
    path = saved(tmp_path, future_move)
    with pytest.raises(ScenarioError) as caught:
        load_scenarios(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert where in str(caught.value)


def test_a_scenario_without_a_query_is_refused(tmp_path, future_move):
    future_move["events"] = future_move["events"][:2]
    with pytest.raises(ScenarioError, match="no query"):
        load_scenarios(saved(tmp_path, future_move))


def test_invalid_json_names_the_file(tmp_path):
    path = tmp_path / "torn.json"
    path.write_text('{"id": "torn", "events": [')
    with pytest.raises(ScenarioError, match="torn.json: cannot read a JSON scenario"):
        load_scenarios(path)


def test_duplicate_ids_across_files_are_refused(tmp_path, future_move):
    saved(tmp_path, future_move, "a.json")
    saved(tmp_path, future_move, "b.json")
    with pytest.raises(ScenarioError, match="b.json: id 'future-move' is already used by .*a.json"):
        load_scenarios(tmp_path)


def test_missing_paths_and_empty_folders_are_refused(tmp_path):
    with pytest.raises(ScenarioError, match="no scenario files"):
        load_scenarios(tmp_path)
    with pytest.raises(ScenarioError, match="no such file or folder"):
        load_scenarios(tmp_path / "missing")


def test_files_and_folders_mix(tmp_path, future_move):
    future_move["id"] = "my-move"
    path = saved(tmp_path, future_move, "my-move.json")
    scenarios = load_scenarios([PUBLIC, str(path)])
    assert len(scenarios) == 21 and scenarios[-1].id == "my-move"
