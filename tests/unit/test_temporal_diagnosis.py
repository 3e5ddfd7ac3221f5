"""wrong_answers: each wrong answer of a run, the record that gave it, and the cause its trace shows."""

from lab_utils.temporal import HELDOUT, Config, evaluate, load_scenarios
from lab_utils.temporal.diagnosis import wrong_answers

FILTERS = {"filter_entity": True, "time_aware": True}


def diagnosed(settings, paths=None):
    scenarios = load_scenarios(paths) if paths else load_scenarios()
    return {s.id: wrong_answers(s) for s in evaluate(Config(**settings), scenarios).scenarios
            if wrong_answers(s)}


def test_the_baselines_wrong_answers_and_their_causes():
    assert diagnosed({}) == {
        "distractor-retrieval": [(9, "m008", "other entity")],
        "entity-grounding": [(3, "m002", "other entity")],
        "future-move": [(3, "m002", "not valid on as_of")],
        "historical-address": [(3, "m002", "not valid on as_of")],
        "history-boundary": [(3, "m002", "not valid on as_of")],
        # Step 9's record is of another entity and not yet valid: the entity is named first.
        "selective-deletion": [(6, "m004", "other entity"), (9, "m004", "other entity")],
        "useful-low-confidence": [(2, None, "no answer")],
    }


def test_broad_writes_store_wrong_values():
    assert diagnosed({**FILTERS, "min_confidence": 0.2}) == {
        sid: [(step, record, "wrong value stored")] for sid, step, record in [
            ("clean-abstention", 2, "m001"), ("uncertain-conflict", 3, "m002"),
            ("uncertain-timezone", 3, "m002"), ("unnecessary-write", 3, "m002")]}


def test_a_run_that_passes_has_no_wrong_answers():
    final = {**FILTERS, "deduplicate": True, "min_confidence": 0.6}
    assert diagnosed(final) == {} and diagnosed(final, HELDOUT) == {}


def test_every_wrong_answer_of_a_failed_heldout_scenario_is_diagnosed():
    report = evaluate(Config(), load_scenarios(HELDOUT))
    for result in report.scenarios:
        wrong = sum(a != e for a, e in zip(result.answers, result.expected))
        assert len(wrong_answers(result)) == wrong, result.id
