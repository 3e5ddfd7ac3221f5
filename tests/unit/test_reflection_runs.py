"""Lesson 07, the cheap half of the slow loop: run records, signals, trigger, scheduler,
packet, metrics and the two-week simulation (no model calls here)."""

from __future__ import annotations

import datetime as dt
import json
import re
import time

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab_utils.reflection import (AgentStatus, RunRecord, RunRecordError, Schedule, Score,
                                  build_packet, estimate_tokens, extract_signals, is_correction,
                                  load_runs, plan_cycle, score, signal_history,
                                  skill_metrics, choose_threshold, threshold_cost)
from lab_utils.reflection.loop import simulate
from lab_utils.reflection.records import TRANSIENT_ERRORS

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 2, 9, tzinfo=UTC)


def make_run(*turns: str, run_id: str = "r-1", agent: str = "a", at: dt.datetime = T0,
             minutes: int = 10, tools: tuple[str, ...] = (), outcome: str = "completed",
             shown: tuple[str, ...] = (), read: tuple[str, ...] = (), edited: bool = False) -> RunRecord:
    """Turns alternate user / assistant, starting with the user; a tool is 'name' or 'name!error'."""
    calls = [dict(zip(("name", "error"), spec.split("!"))) for spec in tools]
    return RunRecord.model_validate({
        "run_id": run_id, "agent": agent, "started_at": at, "ended_at": at + dt.timedelta(minutes=minutes),
        "messages": [{"role": ("user", "assistant")[i % 2], "text": t} for i, t in enumerate(turns or ("hi",))],
        "tool_calls": calls, "outcome": outcome, "skills_shown": list(shown or read),
        "skills_read": list(read), "user_edited": edited})


@pytest.fixture(scope="module")
def runs() -> list[RunRecord]:
    return load_runs()


# -- run records -------------------------------------------------------------------------

def test_the_two_week_data_loads_in_order(runs):
    assert len(runs) >= 50
    assert {r.agent for r in runs} == {"support-en", "support-zh", "billing-ops", "reports"}
    assert [r.ended_at for r in runs] == sorted(r.ended_at for r in runs)
    assert max(r.ended_at for r in runs) - min(r.started_at for r in runs) >= dt.timedelta(days=13)
    errors = [c.error for r in runs for c in r.tool_calls if c.error]
    assert set(errors) & TRANSIENT_ERRORS and set(errors) - TRANSIENT_ERRORS
    assert any(r.user_edited for r in runs) and any(r.outcome == "aborted" for r in runs)


GOOD = {"run_id": "x", "agent": "a", "started_at": "2026-03-02T09:00:00Z", "ended_at": "2026-03-02T09:10:00Z",
        "messages": [{"role": "user", "text": "hi"}], "tool_calls": [{"name": "t"}], "outcome": "completed"}


@pytest.mark.parametrize("change, field", [
    ({"tool_calls": [{"name": "t", "error": "timout"}]}, "tool_calls[0].error"),  # a typo is not a real error
    ({"outcome": None}, "outcome"),
    ({"user_edited": "yes"}, "user_edited"),  # strict: no coercion
    ({"started_at": "2026-03-02T09:00:00"}, "started_at"),  # times need a zone
    ({"colour": "red"}, "colour"),  # unknown fields are refused
    ({"messages": [{"role": "customer", "text": "hi"}]}, "messages[0].role"),
    ({"skills_read": ["s"]}, "skills_read"),  # read without being shown
    ({"ended_at": "2026-03-02T08:00:00Z"}, "ended_at"),
])
def test_a_malformed_record_is_refused_naming_file_line_and_field(tmp_path, change, field):
    record = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(RunRecordError, match=r"runs\.jsonl line 2: .*" + re.escape(field)):
        load_runs(path)


def test_broken_json_and_repeated_ids_are_refused(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps(GOOD) + "\n{\"run_id\": \n", encoding="utf-8")
    with pytest.raises(RunRecordError, match="a.jsonl line 2: input: Invalid JSON"):
        load_runs(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    with pytest.raises(RunRecordError, match=r"more than once.*\['x'\]"):
        load_runs(tmp_path)


# -- signals -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("That's wrong.", True), ("WRONG invoice", True), ("You wrongly closed my ticket", True),
    ("Actually, we have exports", True), ("Send the CSV instead", True),
    ("不对，发票应该是人民币", True), ("应该是第一季度", True), ("可以重新发送吗？", True),
    ("That is factually correct", False), ("a wrongful act", False), ("Thanks, all good", False),
    ("收到，谢谢。", False),
])
def test_correction_phrases_in_english_match_whole_words_and_in_chinese_anywhere(text, expected):
    assert is_correction(text) is expected


def test_only_a_user_message_after_the_agents_answer_counts_as_a_correction():
    assert not extract_signals(make_run("The export is wrong again", "Fixed.", "Thanks")).correction
    assert extract_signals(make_run("Export?", "Done.", "Actually, it is still empty")).correction
    # The agent's own "重新" (re-issued) is not the user correcting it.
    assert not extract_signals(make_run("发票", "已重新开具。", "谢谢")).correction


def test_complexity_counts_tool_calls_but_not_transient_retries():
    assert extract_signals(make_run(tools=("t",) * 6)).complexity
    assert not extract_signals(make_run(tools=("t",) * 5)).complexity
    retries = make_run(tools=("t!timeout",) * 5 + ("t",) * 3)
    assert extract_signals(retries).tool_calls == 3 and not extract_signals(retries).complexity


def test_recovery_and_an_ineffective_skill_need_a_real_error():
    assert extract_signals(make_run(tools=("t!bad_request", "t"))).recovered
    assert not extract_signals(make_run(tools=("t!timeout", "t"))).recovered
    failed = dict(outcome="failed", read=("s",))
    assert extract_signals(make_run(tools=("t!permission_denied",), **failed)).skill_ineffective
    assert extract_signals(make_run(**failed)).skill_ineffective  # failed with no error logged: not the network
    assert not extract_signals(make_run(tools=("t!bad_request", "t!timeout"), **failed)).skill_ineffective
    assert not extract_signals(make_run(tools=("t!bad_request",), outcome="aborted", read=("s",))).skill_ineffective
    assert not extract_signals(make_run(tools=("t!bad_request",), outcome="failed")).skill_ineffective


def test_a_known_weakness_is_a_tool_that_failed_for_real_before_for_the_same_agent():
    history = signal_history([
        make_run(run_id="1", tools=("refund!timeout",)),
        make_run(run_id="2", at=T0 + dt.timedelta(hours=1), tools=("refund!bad_request",)),
        make_run(run_id="3", at=T0 + dt.timedelta(hours=2), tools=("refund!bad_request",)),
        make_run(run_id="4", at=T0 + dt.timedelta(hours=3), tools=("refund!bad_request",), agent="b"),
        make_run(run_id="5", at=T0 + dt.timedelta(hours=4), tools=("refund!rate_limited",)),
    ])
    assert [history[i].known_weakness for i in "12345"] == [False, False, True, False, False]


# -- the trigger -------------------------------------------------------------------------

def test_the_worked_figures():
    both = score(extract_signals(make_run("Export?", "Done.", "That's wrong", tools=("t",) * 6)))
    assert both.total == 1.4 and both.reflect
    assert both.explain() == "correction 0.9 + complexity 0.5 = 1.40 >= 0.7"
    alone = score(extract_signals(make_run(tools=("t",) * 6)))
    assert alone.total == 0.5 and not alone.reflect


def test_reaching_the_threshold_is_enough_whatever_the_float_sum():
    weights = {"correction": 0.9, "complexity": 0.5, "recovered": 0.3, "skill_ineffective": 0.8,
               "known_weakness": 0.4}
    s = score(signal_history([make_run(run_id="1", tools=("t!not_found", "t")),
                              make_run(run_id="2", at=T0 + dt.timedelta(hours=1),
                                       tools=("t!not_found", "t"))])["2"], weights)
    assert s.fired == {"recovered": 0.3, "known_weakness": 0.4} and s.total == 0.7 and s.reflect


def test_a_threshold_costs_two_per_miss_and_one_per_false_alarm_and_reaching_it_reflects():
    scores, labels = {"a": 0.9, "b": 0.5, "c": 0.0}, {"a": True, "b": False, "c": False}
    assert [threshold_cost(scores, labels, t) for t in (0.0, 0.5, 0.9, 1.0)] == [2, 1, 0, 2]
    with pytest.raises(ValueError, match=r"same runs.*\['d'\]"):
        threshold_cost(scores, {**labels, "d": True}, 0.7)


def test_the_cheapest_threshold_wins_and_a_tie_goes_to_the_highest():
    scores, labels = {"a": 0.9, "b": 0.5}, {"a": True, "b": False}
    assert choose_threshold(scores, labels, [0.5, 0.7, 0.9, 1.0]) == 0.9
    assert choose_threshold(scores, labels, [1.0, 0.5]) == 0.5  # a miss (2) costs more than a false alarm (1)
    with pytest.raises(ValueError, match="no candidate"):
        choose_threshold(scores, labels, [])


@given(calls=st.lists(st.tuples(st.sampled_from(["query", "refund", "send"]), st.sampled_from(sorted(TRANSIENT_ERRORS))),
                      min_size=1, max_size=40),
       good=st.integers(0, 5), outcome=st.sampled_from(["completed", "failed", "aborted"]),
       read=st.booleans())
def test_transient_errors_alone_never_trigger(calls, good, outcome, read):
    tools = tuple(f"{name}!{kind}" for name, kind in calls) + ("query",) * good
    run = make_run("Digest?", "Sent.", "Thanks", tools=tools, outcome=outcome, read=("s",) if read else ())
    earlier = make_run(run_id="0", at=T0 - dt.timedelta(days=1), tools=tools)  # makes no tool "weak"
    s = score(signal_history([earlier, run])[run.run_id])
    assert s.fired == {} and not s.reflect


# -- the scheduler -----------------------------------------------------------------------

def status(agent="a", *, hours_since: float | None = None, new: int = 1, total: float = 0.9,
           first_days_ago: float = 1, now=T0) -> AgentStatus:
    last = now - dt.timedelta(hours=hours_since) if hours_since is not None else None
    best = Score(total, {"x": total}, 0.7) if new else None
    return AgentStatus(agent, last, now - dt.timedelta(days=first_days_ago), new, best)


def decide(*statuses: AgentStatus, schedule=Schedule()) -> list[tuple[str, bool, str]]:
    return [(d.agent, d.reflect, d.reason) for d in plan_cycle(1, T0, list(statuses), schedule)]


def test_the_dirty_gate_skips_an_agent_with_nothing_new_even_when_overdue():
    assert decide(status(new=0, hours_since=30 * 24)) == [("a", False, "clean")]


def test_cooldown_holds_a_triggered_agent_until_it_has_passed():
    assert decide(status(hours_since=12)) == [("a", False, "cooldown")]
    assert decide(status(hours_since=18)) == [("a", True, "triggered")]
    assert decide(status(hours_since=None)) == [("a", True, "triggered")]


def test_a_week_without_reflection_forces_one():
    assert decide(status(total=0.5, hours_since=7 * 24)) == [("a", True, "forced")]
    assert decide(status(total=0.5, hours_since=7 * 24 - 1)) == [("a", False, "below_threshold")]
    assert decide(status(total=0.0, first_days_ago=7)) == [("a", True, "forced")]  # never reflected


def test_the_cap_takes_forced_agents_first_then_the_strongest_and_defers_the_rest():
    got = decide(status("low", total=0.9), status("high", total=1.4), status("mid", total=1.1))
    assert got == [("low", False, "deferred"), ("high", True, "triggered"), ("mid", True, "triggered")]
    got = decide(status("old", total=0.2, hours_since=8 * 24), status("high", total=1.4), status("mid", total=1.1))
    assert got == [("old", True, "forced"), ("high", True, "triggered"), ("mid", False, "deferred")]
    assert [r for _, r, _ in decide(*(status(str(i)) for i in range(5)), schedule=Schedule(max_agents=3))] \
        == [True, True, True, False, False]


# -- the packet --------------------------------------------------------------------------

def test_estimate_tokens_counts_cjk_per_character_and_the_rest_per_four():
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("不对") == 2
    assert estimate_tokens("不对, ok") == 2 + 1


def test_the_packet_is_chronological_keeps_recent_conversations_and_all_events():
    runs = [make_run("q", "a", run_id=f"r{i}", at=T0 + dt.timedelta(hours=i), tools=("t!timeout", "t!bad_request"))
            for i in range(10)]
    packet = build_packet(runs, max_conversations=3)
    assert [i.at for i in packet.items] == sorted(i.at for i in packet.items)
    assert [i.run_id for i in packet.items if i.kind == "conversation"] == ["r7", "r8", "r9"]
    assert sum(i.kind == "event" for i in packet.items) == 20
    assert "1 transient error (timeout x1): the environment, not the agent" in packet.render()
    assert packet.dropped == 0


def test_over_the_token_cap_the_oldest_items_go_first():
    runs = [make_run("q" * 200, "a", run_id=f"r{i}", at=T0 + dt.timedelta(hours=i)) for i in range(6)]
    full = build_packet(runs)
    cap = full.tokens // 2
    capped = build_packet(runs, token_cap=cap)
    assert capped.tokens <= cap < full.tokens
    assert capped.items == full.items[capped.dropped:] and capped.dropped > 0
    assert capped.items[-1].run_id == "r5"


# -- metrics -----------------------------------------------------------------------------

def test_skill_metrics_exclude_aborts_and_transient_failures_from_the_ineffective_rate():
    hour = dt.timedelta(hours=1)
    runs = [make_run(run_id=f"s{i}", at=T0 + i * hour, shown=("s",)) for i in range(6)] + [
        make_run(run_id="ok", at=T0 + 6 * hour, read=("s",), edited=True),
        make_run(run_id="real", at=T0 + 7 * hour, read=("s",), outcome="failed", tools=("t!tool_failure",)),
        make_run(run_id="net", at=T0 + 8 * hour, read=("s",), outcome="failed", tools=("t!timeout",)),
        make_run(run_id="stop", at=T0 + 9 * hour, read=("s",), outcome="aborted", tools=("t!bad_request",)),
    ]
    [row] = skill_metrics(runs)
    assert (row["impressions"], row["invocations"], row["judged"], row["ineffective"]) == (10, 4, 3, 1)
    assert (row["invocation_rate"], row["edit_after_hit_rate"]) == (0.4, 0.25)
    assert row["ineffective_rate"] == pytest.approx(1 / 3)
    assert row["suggestion"] == "revise"


def test_the_two_weeks_metrics_and_suggestions(runs):
    table = pd.DataFrame(skill_metrics(runs)).set_index("skill")
    assert table.loc["refund-amount-cents", ["invocations", "judged", "ineffective"]].tolist() == [9, 8, 1]
    assert table.suggestion.to_dict() == {
        "customer-id-prefix": "keep", "empty-export-status-filter": "keep", "invoice-copy-period": "revise",
        "invoice-currency-cny": "revise", "refund-amount-cents": "keep", "report-date-range": "wait",
        "weekly-report-order": "retire"}


# -- the two-week simulation (decisions only) ---------------------------------------------

def test_the_two_week_simulation_is_fast_and_deterministic(runs):
    started = time.perf_counter()
    timeline = simulate(runs)
    assert time.perf_counter() - started < 1.0
    assert timeline == simulate(runs)
    assert len({d.cycle for d in timeline}) == 28 and len(timeline) == 28 * 4
    reasons = pd.DataFrame(timeline).reason.value_counts().to_dict()
    assert (reasons["triggered"], reasons["forced"], reasons["deferred"]) == (10, 1, 1)
    assert reasons["cooldown"] > 0 and reasons["clean"] > 0
    first, second = ([(d.agent, d.reason) for d in timeline if d.cycle == c] for c in (1, 2))
    assert ("support-zh", "deferred") in first and ("support-zh", "triggered") in second


def test_a_burst_of_network_failures_changes_no_decision(runs):
    weekend = dt.datetime(2026, 3, 7, 9, tzinfo=UTC)
    burst = [make_run("Refund order 5599.", "The provider timed out.", "OK", run_id=f"burst-{i}",
                      agent="billing-ops", at=weekend + dt.timedelta(minutes=20 * i), outcome="failed",
                      tools=("get_order", "issue_refund!timeout", "issue_refund!connection_dropped",
                             "issue_refund!rate_limited"), read=("refund-amount-cents",))
             for i in range(12)]
    def reflections(timeline):
        return [(d.cycle, d.agent, d.reason, d.best_score) for d in timeline if d.reflect]
    assert reflections(simulate(runs + burst)) == reflections(simulate(runs))
