"""Budget reservations, and how a study ends when money runs out or the model layer fails."""

from __future__ import annotations

import json
import math

import anthropic
import httpx2
import pytest

from lab_utils import llm
from lab_utils.llm import RESPONSES_DIR, canonical, cost_usd, price
from lab_utils.proposer import Budget, RequestTooLarge, campaign, run_study, worst_case_usd
from lab_utils.proposer.budget import BYTES_PER_TOKEN, MAX_INPUT_TOKENS, OVERHEAD_TOKENS
from lab_utils.proposer.registry import read
from live_server import LAYER_FAILURES, fail_live_calls

MODEL = "claude-haiku-5-5"


def body(text: str = "hello", max_tokens: int = 1000) -> dict:
    return {"model": MODEL, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": text}]}


def client(handler, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-no-key", max_retries=max_retries,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def test_reservation_is_bounded_input_at_the_dearer_price_plus_max_output():
    b = body("x" * 3000)
    tokens = math.ceil(len(canonical(b).encode()) / BYTES_PER_TOKEN) + OVERHEAD_TOKENS
    p = price(MODEL)
    expected = (tokens * max(p.input, p.cache_write) + 1000 * p.output) / 1e6
    assert worst_case_usd(b) == pytest.approx(expected)


def test_a_request_beyond_the_input_bound_cannot_be_reserved():
    with pytest.raises(RequestTooLarge):
        Budget(1.0).reserve(body("x" * BYTES_PER_TOKEN * MAX_INPUT_TOKENS))


def test_settle_replaces_the_reservation_by_the_real_cost_with_cache_writes():
    budget = Budget(0.10)
    reservation = budget.reserve(body())
    assert budget.remaining_usd == pytest.approx(0.10 - reservation.usd)
    usage = {"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 400,
             "cache_read_input_tokens": 0}
    real = budget.settle(reservation, usage)
    assert real == pytest.approx((100 * 1.00 + 50 * 5.00 + 400 * 1.25) / 1e6)
    assert budget.spent_usd == pytest.approx(real) and budget.held_usd == pytest.approx(0)


def test_a_released_reservation_adds_nothing_to_spent():
    budget = Budget(0.10)
    budget.release(budget.reserve(body()))
    assert (budget.spent_usd, budget.held_usd, budget.remaining_usd) == (0, 0, 0.10)


def test_a_call_that_does_not_fit_is_not_reserved():
    budget = Budget(worst_case_usd(body()) * 1.5)
    assert budget.reserve(body()) is not None
    assert budget.reserve(body()) is None  # the first is still held
    assert budget.held_usd == pytest.approx(worst_case_usd(body()))


def test_every_stored_answer_costs_less_than_its_reservation():
    entries = json.loads((RESPONSES_DIR / "proposer.json").read_text(encoding="utf-8"))
    for entry in entries:
        assert cost_usd(entry["response"]["usage"], MODEL) < worst_case_usd(entry["request"])


def test_a_budget_too_small_for_one_call_ends_cleanly_with_zero_calls(offline):
    calls = []
    study = run_study(offline / "study", budget_usd=0.001,
                      client=client(lambda request: calls.append(request)))
    assert calls == [] and study.calls == 0 and study.cost_usd == 0
    assert [c.stop_reason for c in study.campaigns] == ["budget_exhausted"] * 3
    assert [c.final.id for c in study.campaigns] == ["baseline"] * 3
    kinds = [line["kind"] for line in read(study.registry)]
    assert kinds == ["evaluation", "budget_exhausted"] * 3
    assert (offline / "study" / "report.md").exists()


@pytest.mark.parametrize("how", LAYER_FAILURES)
def test_a_failure_of_the_model_layer_stops_the_study_with_its_message_and_records_nothing(
        server, monkeypatch, offline, how):
    fail_live_calls(how, server, monkeypatch)
    with pytest.raises(anthropic.AnthropicError) as direct:  # the same call made outside a study
        llm.make_client(timeout=0.5).messages.create(**body())
    sent = len(server.requests)
    with pytest.raises(type(direct.value)) as failed:
        run_study(offline / "study", timeout=0.5)
    assert str(failed.value) == str(direct.value) and "\n" not in str(failed.value), "the layer's own one line"
    assert len(server.requests) - sent <= 1, "the study stops at its first call"
    assert [line["kind"] for line in read(offline / "study" / "registry.jsonl")] == ["evaluation"], \
        "the baseline only: nothing is recorded for a call that got no answer"
    assert not (offline / "study" / "report.json").exists()


def test_a_failed_call_adds_nothing_to_what_the_study_spent(offline, monkeypatch):
    """Campaign 1 gets its four answers; the first call of campaign 2 finds the server overloaded."""
    monkeypatch.setattr(llm, "METER", llm.Meter())
    budgets = []
    monkeypatch.setattr(campaign, "Budget", lambda limit: budgets.append(Budget(limit)) or budgets[-1])
    answers = llm.replay_handler()
    answered = []

    def four_then_overloaded(request: httpx2.Request) -> httpx2.Response:
        if len(answered) == 4:
            return httpx2.Response(529, json={"type": "error", "error": {"type": "overloaded_error",
                                                                         "message": "Overloaded"}})
        answered.append(request)
        return answers(request)

    live = anthropic.Anthropic(api_key="test-no-key", max_retries=0, http_client=httpx2.Client(
        transport=llm.LiveTransport(None, inner=httpx2.MockTransport(four_then_overloaded))))
    with pytest.raises(anthropic.OverloadedError):
        run_study(offline / "study", client=live)
    lines = read(offline / "study" / "registry.jsonl")
    assert [line["kind"] for line in lines] == ["evaluation"] * 4 + ["stop", "evaluation"]
    assert llm.METER.calls == 4
    assert budgets[0].spent_usd == pytest.approx(llm.METER.usd) == pytest.approx(
        sum(line["cost_usd"] for line in lines)), "spent is what the meter counted for the answers that arrived"
    assert budgets[0].held_usd == 0
