"""`python -m lab_utils.temporal`, run as a user or CI would run it."""

import json
import subprocess
import sys

import pytest

from lab_utils.temporal import BITEMPORAL, BITEMPORAL_HELDOUT, HELDOUT, PUBLIC

FINAL = '{"filter_entity": true, "time_aware": true, "deduplicate": true, "min_confidence": 0.6}'


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "lab_utils.temporal", *args],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def report(*args):
    done = run(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_empty_config_is_the_baseline():
    data = report("--config", "{}", "--scenarios", str(PUBLIC))
    assert data["config"]["min_confidence"] == 0.7 and data["config"]["top_k"] == 3
    assert (data["totals"]["passed"], data["totals"]["total"]) == (13, 20)
    assert data["totals"]["mean_stored_records"] == pytest.approx(1.70)
    scenario = data["scenarios"][0]
    assert set(scenario) >= {"id", "passed", "answers", "expected", "hard_checks", "stored_records"}


def test_the_final_config_from_a_file_scores_20_of_20(tmp_path):
    config = tmp_path / "final.json"
    config.write_text(FINAL)
    totals = report("--config", str(config), "--scenarios", str(PUBLIC))["totals"]
    assert (totals["passed"], totals["mean_stored_records"]) == (20, pytest.approx(1.65))
    assert totals["hard_check_violations"] == 0
    assert totals["hard_checks"] == {"owner_isolation": {"checks": 28, "violations": 0},
                                     "deletion": {"checks": 11, "violations": 0},
                                     "prohibited_writes": {"checks": 2, "violations": 0}}


def test_several_paths_are_evaluated_together():
    data = report("--config", FINAL, "--scenarios", str(PUBLIC), str(HELDOUT / "foreign-delete.json"))
    assert data["totals"]["total"] == 21


def test_without_json_a_readable_table_is_printed():
    done = run("--config", "{}")
    assert done.returncode == 0
    assert "entity-grounding" in done.stdout and "Paris (expected Berlin)" in done.stdout
    assert "13/20 passed, mean stored records 1.70" in done.stdout and done.stdout.rstrip().endswith("writer study")


@pytest.mark.parametrize("config, named", [
    ('{"top_k": 9}', "top_k"),
    ('{"min_confidence": "high"}', "min_confidence"),
    ('{"temperature": 0.2}', "unknown setting 'temperature'"),
    ('{"filter_entity": true', "not valid JSON"),
    ("missing-config.json", "missing-config.json"),
])
def test_a_bad_config_exits_with_a_message_naming_it(config, named):
    done = run("--config", config)
    assert done.returncode == 2
    assert named in done.stderr and done.stdout == ""


def test_a_malformed_scenario_file_exits_naming_file_event_and_field(tmp_path):
    scenario = json.loads((PUBLIC / "future-move.json").read_text())
    scenario["events"][1]["fact"]["valid_from"] = "2026-1-10"
    path = tmp_path / "future-move.json"
    path.write_text(json.dumps(scenario))
    done = run("--scenarios", str(path))
    assert done.returncode == 2
    assert f"{path}: event 2, field fact.valid_from: '2026-1-10'" in done.stderr


def test_the_writer_is_chosen_on_the_command_line():
    study = report("--config", FINAL, "--scenarios", str(BITEMPORAL))
    bitemporal = report("--config", FINAL, "--scenarios", str(BITEMPORAL), "--writer", "bitemporal")
    assert (study["writer"], bitemporal["writer"]) == ("study", "bitemporal")
    assert bitemporal["totals"]["passed"] == bitemporal["totals"]["total"] > study["totals"]["passed"]
    assert bitemporal["totals"]["hard_check_violations"] == 0


def test_a_scenario_set_the_course_ships_is_named_and_found_from_any_folder(tmp_path):
    by_name = run("--writer", "bitemporal", "--scenarios", BITEMPORAL.name, "--json", cwd=tmp_path)
    assert by_name.returncode == 0, by_name.stderr
    assert json.loads(by_name.stdout) == report("--writer", "bitemporal", "--scenarios", str(BITEMPORAL))


def test_a_path_that_is_neither_a_file_nor_a_set_exits_naming_the_sets(tmp_path):
    done = run("--scenarios", "data/scenarios_bitemporal", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "data/scenarios_bitemporal: no such file or folder, nor a scenario set the course ships" in done.stderr
    assert all(path.name in done.stderr for path in (PUBLIC, HELDOUT, BITEMPORAL, BITEMPORAL_HELDOUT))


def test_an_unknown_writer_exits_naming_the_choices():
    done = run("--writer", "graphiti")
    assert done.returncode == 2 and "invalid choice: 'graphiti'" in done.stderr
