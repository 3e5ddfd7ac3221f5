"""The proposer loop end to end (offline, from stored answers), selection, baselines, the CLI."""

from __future__ import annotations

import json
import math

import pytest

from lab_utils import llm
from lab_utils.proposer import (Evaluator, OutputExists, better, compare, fresh_folder, grid_search,
                                random_search, rule_search, run_study, verify)
from lab_utils.proposer.__main__ import main
from lab_utils.proposer.baselines import perfect_configs, top_k_matters
from lab_utils.proposer.registry import read
from lab_utils.temporal import Config, load_scenarios

FINAL = Config(min_confidence=0.6, filter_entity=True, time_aware=True, deduplicate=True)
PATH = [("agent-01", {"filter_entity": True, "time_aware": True}, 19, 1.70),
        ("agent-02", {"deduplicate": True}, 19, 1.60),
        ("agent-03", {"min_confidence": 0.6}, 20, 1.65)]


@pytest.fixture(scope="module")
def public():
    return Evaluator(load_scenarios())


def _totals(passed: int, records: float, violations: int = 0) -> dict:
    return {"passed": passed, "total": 20, "mean_stored_records": records,
            "hard_check_violations": violations}


def test_selection_rule():
    assert better(_totals(19, 1.7), _totals(13, 1.7))  # more scenarios pass
    assert better(_totals(19, 1.6), _totals(19, 1.7))  # as many, fewer records
    assert not better(_totals(19, 1.7), _totals(19, 1.7))  # a tie keeps the parent
    assert better(_totals(19, 1.7), _totals(19, math.nextafter(1.7, 2)))  # records compared exactly, no rounding
    assert not better(_totals(18, 1.0), _totals(19, 1.7))  # success before storage
    assert not better(_totals(20, 1.0, violations=1), _totals(13, 1.7))  # hard checks first
    assert better(_totals(13, 1.7), _totals(20, 1.0, violations=1))


def test_offline_study_reproduces_the_published_path(offline):
    study = run_study(offline / "study", campaigns=3, iterations=4, budget_usd=0.50)
    assert study.mode == "replay"
    for c in study.campaigns:
        steps = [(a.candidate_id, a.changes, a.totals["passed"],
                  round(a.totals["mean_stored_records"], 2)) for a in c.attempts]
        assert steps == PATH
        assert all(a.selected for a in c.attempts)
        assert c.stop_reason == "stopped" and c.calls == 4 and c.evaluations == 4
        assert c.final.id == "agent-03" and c.final.config == FINAL
    assert study.calls == 12
    assert 0.035 < study.cost_usd < 0.05 < 0.50  # about USD 0.04 of the USD 0.50 budget
    assert study.budget.spent_usd == pytest.approx(study.cost_usd)


def test_offline_study_registry_verifies_and_holds_every_attempt(offline):
    study = run_study(offline / "study")
    assert verify(study.registry).ok
    lines = read(study.registry)
    assert [line["kind"] for line in lines] == (["evaluation"] * 4 + ["stop"]) * 3
    assert all(line["fingerprint"]["code_sha256"] for line in lines)
    assert {line["proposer"] for line in lines} == {"human", "llm"}
    llm_lines = [line for line in lines if line["proposer"] == "llm"]
    assert all(line["cost_usd"] < line["reserved_usd"] for line in llm_lines)
    # fresh, independent campaigns: the same requests in the same order
    requests = [[line["request_sha256"] for line in llm_lines if line["campaign"] == n]
                for n in (1, 2, 3)]
    assert requests[0] == requests[1] == requests[2]
    report = json.loads((study.output / "report.json").read_text(encoding="utf-8"))
    assert report["calls"] == 12 and "intact" in report["registry"]
    assert "agent-03" in (study.output / "report.md").read_text(encoding="utf-8")


def test_a_rejected_answer_is_recorded_and_fed_back(offline):
    # The development run: its 2nd answer cites the candidate agent-01 as a scenario.
    study = run_study(offline / "dev", campaigns=1, iterations=5)
    c = study.campaigns[0]
    assert [a.rejection is None for a in c.attempts] == [True, False, True, True]
    assert "agent-01 is a candidate id" in c.attempts[1].rejection
    assert c.stop_reason == "stopped" and c.final.config == FINAL and c.calls == 5
    rejected = [line for line in read(study.registry) if line["kind"] == "rejected"]
    assert len(rejected) == 1 and '"agent-01"' in rejected[0]["answer"]
    assert rejected[0]["cost_usd"] > 0  # the model was paid for the rejected answer


def test_each_configuration_is_evaluated_once(monkeypatch):
    import lab_utils.proposer.evaluation as evaluation

    runs = []
    monkeypatch.setattr(evaluation, "evaluate",
                        lambda config, scenarios: runs.append(config) or config)
    evaluator = Evaluator([])
    evaluator(Config(top_k=4))
    evaluator(Config(top_k=4))
    evaluator(Config())
    assert runs == [Config(top_k=4), Config()] and evaluator.evaluations == 2


def test_grid_has_16_perfect_configurations_and_top_k_never_matters(public):
    result = grid_search(public)
    assert result.evaluations == 385  # the baseline and 384 grid configurations
    perfect = perfect_configs(result)
    assert len(perfect) == 16 and not top_k_matters(result)
    without_top_k = {c.model_copy(update={"top_k": 3}) for c in perfect}
    assert without_top_k == {FINAL, FINAL.model_copy(update={"deduplicate": False})}
    assert result.final.config.model_copy(update={"top_k": 3}) == FINAL


def test_rule_based_diagnoser_reaches_the_final_configuration_in_four_evaluations(public):
    result = rule_search(public, evaluations=4)
    assert result.evaluations == 4 and result.final.config == FINAL


def test_random_search_is_seeded_and_keeps_to_its_budget(public):
    first, again = random_search(public, 4, seed=7), random_search(public, 4, seed=7)
    assert first.evaluations == 4
    assert [c.config for c in first.candidates] == [c.config for c in again.candidates]


def test_compare_scores_every_proposer_on_held_out_scenarios(offline):
    data = compare(offline / "cmp", seeds=3)
    rows = {row["proposer"]: row for row in data["rows"]}
    assert data["budget_evaluations"] == 4
    assert rows["llm"]["reached_all"] == 3 and rows["rules"]["reached_all"] == 1
    assert all(row["heldout_total"] > 0 for row in rows.values())
    assert data["grid"] == {"configurations": 384, "reach_all": 16, "top_k_matters": False}
    assert verify(offline / "cmp" / "registry.jsonl").ok
    assert (offline / "cmp" / "compare.md").exists()


def test_a_study_never_writes_into_an_existing_folder(offline):
    first = fresh_folder(offline)
    run_study(first, campaigns=1)
    with pytest.raises(OutputExists):
        run_study(first, campaigns=1)
    assert fresh_folder(offline) == offline / "study-002"


def test_cli_runs_offline_and_refuses_an_existing_output(offline, monkeypatch, capsys):
    monkeypatch.setenv("LAB_LIVE", "1")  # the flag decides, not the shell; restored afterwards
    out = offline / "study"
    assert main(["campaign", "--campaigns", "3", "--iterations", "4", "--budget-usd", "0.50",
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    study = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (f"12 model calls replayed from stored answers, nothing spent; live they would cost USD "
            f"{study['spent_usd']:.6f} of 0.50; registry verified") in printed
    assert {p.name for p in out.iterdir()} == {"registry.jsonl", "report.md", "report.json"}
    before = (out / "registry.jsonl").read_bytes()
    assert main(["campaign", "--output", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "registry.jsonl").read_bytes() == before
    assert main(["verify", str(out)]) == 0


def test_cli_verify_fails_on_a_tampered_registry(offline, monkeypatch, capsys):
    monkeypatch.setenv("LAB_LIVE", "0")
    out = offline / "study"
    assert main(["campaign", "--output", str(out)]) == 0
    path = out / "registry.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace('"passed": 19', '"passed": 20', 1),
                    encoding="utf-8")
    assert main(["verify", str(out)]) == 1
    assert "broken at line 2" in capsys.readouterr().out


def test_cli_live_without_a_key_refuses_before_writing(offline, monkeypatch, capsys):
    monkeypatch.setenv("LAB_LIVE", "0")
    assert main(["campaign", "--live", "--output", str(offline / "live")]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not (offline / "live").exists()


def test_a_request_replay_cannot_answer_stops_the_study_once_and_charges_nothing(offline):
    # "decision 1 of 6" is in every request, so no stored answer fits: no call is made.
    with pytest.raises(llm.NoStoredAnswer) as err:
        run_study(offline / "six", campaigns=3, iterations=6)
    message = str(err.value)
    assert "-messages[0].content: Decision 1 of 4" in message
    assert "+messages[0].content: Decision 1 of 6" in message and "LAB_LIVE=1" in message
    lines = read(offline / "six" / "registry.jsonl")
    assert [line["kind"] for line in lines] == ["evaluation"]  # the baseline; no failed, charged call
    assert not (offline / "six" / "report.json").exists()


def test_the_cli_reports_a_replay_miss_as_one_error(offline, monkeypatch, capsys):
    monkeypatch.setenv("LAB_LIVE", "0")
    assert main(["campaign", "--iterations", "6", "--output", str(offline / "six")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Replay mode has no stored answer") and "Traceback" not in err
    assert "Decision 1 of 6" in err and err.count("\n") == 1, "one line, naming the request"
    assert "--iterations 4" in err and "--live" in err and "notebook" not in err, "advice for the command"


def test_the_cli_says_what_a_live_study_spent(server, offline, capsys):
    assert main(["campaign", "--live", "--campaigns", "1", "--output", str(offline / "live")]) == 0
    spent = json.loads((offline / "live" / "report.json").read_text(encoding="utf-8"))["spent_usd"]
    assert spent > 0 and f"4 model calls, USD {spent:.6f} of 0.50 spent; registry" in capsys.readouterr().out


def test_the_cli_reports_a_failure_of_the_model_layer_as_one_error(server, offline, capsys):
    server.behaviour = "overloaded"
    assert main(["campaign", "--live", "--output", str(offline / "live")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Live call to") and "529" in err and err.count("\n") == 1
    assert [line["kind"] for line in read(offline / "live" / "registry.jsonl")] == ["evaluation"]
