"""The proposer's answer form (strict schema) and the validator that runs before anything else."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab_utils.proposer import SCHEMA, SETTINGS, Rejected, build_evidence, config_key, validate
from lab_utils.temporal import Config, evaluate, load_scenarios

BASELINE = Config()
NULLS = dict.fromkeys(SETTINGS)


@pytest.fixture(scope="module")
def evidence():
    return build_evidence(evaluate(BASELINE, load_scenarios()))


@pytest.fixture(scope="module")
def tested():
    return {config_key(BASELINE): "baseline",
            config_key(Config(filter_entity=True)): "agent-01"}


def answer(patch=None, action="propose", observations=None, **extra) -> str:
    return json.dumps({
        "observations": observations if observations is not None else [
            {"scenario_id": "future-move", "step": 3, "seen": "answered Paris for January 5"}],
        "hypothesis": "the reader ignores validity dates",
        "predicted_effect": "temporal scenarios pass",
        "action": action,
        "patch": {**NULLS, **(patch or {})},
        **extra})


def rejected(text, evidence, tested) -> str:
    with pytest.raises(Rejected) as info:
        validate(text, evidence, BASELINE, tested)
    return str(info.value)


def _objects(node):
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def test_schema_is_strict_everywhere():
    objects = list(_objects(SCHEMA))
    assert len(objects) == 3  # decision, observation, patch
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])


def test_schema_patch_names_all_five_settings_each_nullable():
    patch = SCHEMA["$defs"]["Patch"]
    assert list(patch["properties"]) == list(SETTINGS)
    for prop in patch["properties"].values():
        assert {"type": "null"} in prop["anyOf"]
    assert SCHEMA["properties"]["action"]["enum"] == ["propose", "stop"]


def test_valid_proposal_yields_the_parent_with_the_patch(evidence, tested):
    accepted = validate(answer({"time_aware": True, "top_k": 5}), evidence, BASELINE, tested)
    assert accepted.config == Config(time_aware=True, top_k=5)
    assert accepted.decision.patch.changes() == {"time_aware": True, "top_k": 5}


def test_stop_with_an_empty_patch_is_accepted(evidence, tested):
    assert validate(answer(action="stop"), evidence, BASELINE, tested).config is None


def test_stop_carrying_a_patch_is_rejected(evidence, tested):
    assert "stop must leave every setting null" in rejected(
        answer({"deduplicate": True}, action="stop"), evidence, tested)


def test_citing_a_candidate_id_as_a_scenario_is_rejected(evidence, tested):
    text = answer({"time_aware": True}, observations=[
        {"scenario_id": "agent-01", "step": 1, "seen": "19/20"}])
    message = rejected(text, evidence, tested)
    assert "'agent-01'" in message and "candidate id, not a scenario" in message


def test_citing_a_scenario_the_evidence_did_not_show_is_rejected(evidence, tested):
    # useful-write passes at baseline with nothing notable, so it is not in the evidence
    text = answer({"time_aware": True}, observations=[
        {"scenario_id": "useful-write", "step": 1, "seen": "stored German"}])
    assert "not in the evidence" in rejected(text, evidence, tested)


def test_citing_a_step_the_evidence_did_not_show_is_rejected(evidence, tested):
    # of duplicate-confirmation only the repeated writes (steps 2 and 3) are shown
    text = answer({"deduplicate": True}, observations=[
        {"scenario_id": "duplicate-confirmation", "step": 1, "seen": "first write"}])
    assert "shown steps: [2, 3]" in rejected(text, evidence, tested)


def test_no_observation_is_rejected(evidence, tested):
    text = answer({"time_aware": True}, observations=[])
    assert "no observations" in rejected(text, evidence, tested)


@pytest.mark.parametrize("patch", [
    {},
    {"time_aware": True, "filter_entity": True, "deduplicate": True},
])
def test_a_proposal_changes_one_or_two_settings(patch, evidence, tested):
    assert "changes 1 to 2 settings" in rejected(answer(patch), evidence, tested)


def test_setting_the_parents_own_value_is_not_a_change(evidence, tested):
    assert "already 3 in the parent" in rejected(answer({"top_k": 3}), evidence, tested)


@pytest.mark.parametrize("patch", [
    {"min_confidence": 1.5}, {"min_confidence": -0.1}, {"top_k": 0}, {"top_k": 9}])
def test_out_of_bounds_values_are_rejected(patch, evidence, tested):
    assert "out of bounds" in rejected(answer(patch), evidence, tested)


def test_a_configuration_tested_before_is_rejected(evidence, tested):
    assert "already evaluated as agent-01" in rejected(
        answer({"filter_entity": True}), evidence, tested)


@pytest.mark.parametrize("field", ["expected_answers", "owner_isolation", "budget_usd"])
def test_a_patch_field_outside_the_five_settings_is_rejected(field, evidence, tested):
    text = json.dumps({**json.loads(answer({"time_aware": True})),
                       "patch": {**NULLS, "time_aware": True, field: False}})
    message = rejected(text, evidence, tested)
    assert repr(field) in message and "not one of the five settings" in message


def test_extra_top_level_fields_and_wrong_types_are_rejected(evidence, tested):
    assert "unknown field" in rejected(
        answer({"time_aware": True}, approval="granted"), evidence, tested)
    assert "patch.filter_entity" in rejected(answer({"filter_entity": "true"}), evidence, tested)
    assert "patch.top_k" in rejected(answer({"top_k": 4.0}), evidence, tested)


def test_a_missing_setting_and_broken_json_are_rejected(evidence, tested):
    text = json.loads(answer({"time_aware": True}))
    del text["patch"]["top_k"]
    assert "patch.top_k" in rejected(json.dumps(text), evidence, tested)
    assert "does not fit" in rejected('{"observations": [', evidence, tested)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats(-2, 2, allow_nan=False)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=2)
    | st.dictionaries(st.text(max_size=4), children, max_size=2),
    max_leaves=4)
outside = st.text(min_size=1, max_size=20).filter(lambda key: key not in SETTINGS)


@settings(max_examples=200, deadline=None)
@given(known=st.dictionaries(st.sampled_from(SETTINGS), json_values),
       extra=st.dictionaries(outside, json_values, min_size=1, max_size=3))
def test_no_patch_naming_anything_outside_the_five_settings_passes(known, extra, evidence, tested):
    text = json.dumps({**json.loads(answer()), "patch": {**NULLS, **known, **extra}})
    with pytest.raises(Rejected):
        validate(text, evidence, BASELINE, tested)


@settings(max_examples=200, deadline=None)
@given(patch=st.dictionaries(st.sampled_from(SETTINGS), json_values))
def test_whatever_passes_changes_one_or_two_settings_within_bounds(patch, evidence, tested):
    try:
        accepted = validate(answer(patch), evidence, BASELINE, tested)
    except Rejected:
        return
    changed = {k for k, v in accepted.config.model_dump().items() if v != getattr(BASELINE, k)}
    assert 1 <= len(changed) <= 2
    assert 0 <= accepted.config.min_confidence <= 1 and 1 <= accepted.config.top_k <= 8
    assert config_key(accepted.config) not in tested
