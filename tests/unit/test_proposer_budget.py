"""Budget reservations, and how a campaign ends when money runs out or a call fails."""

from __future__ import annotations

import json
import math

import anthropic
import httpx2
import pytest

from lab_utils.llm import RESPONSES_DIR, canonical, cost_usd, price
from lab_utils.proposer import Budget, RequestTooLarge, run_study, worst_case_usd
from lab_utils.proposer.budget import BYTES_PER_TOKEN, MAX_INPUT_TOKENS, OVERHEAD_TOKENS
from lab_utils.proposer.registry import read

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


def test_a_failed_call_keeps_its_reservation():
    budget = Budget(0.10)
    reservation = budget.reserve(body())
    assert budget.keep(reservation) == reservation.usd
    assert budget.spent_usd == pytest.approx(reservation.usd)


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


def _server_error(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(
        500, json={"type": "error", "error": {"type": "api_error", "message": "boom"}})


def _timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("read timed out", request=request)


@pytest.mark.parametrize(("handler", "error"), [(_server_error, "InternalServerError"),
                                                (_timeout, "APITimeoutError")])
def test_a_failed_call_is_recorded_charged_its_reservation_and_ends_the_campaign(
        offline, handler, error):
    sent = []
    counted = client(lambda request: sent.append(request) or handler(request), max_retries=3)
    study = run_study(offline / "study", campaigns=2, client=counted)
    assert [c.stop_reason for c in study.campaigns] == ["call_failed"] * 2
    assert len(sent) == 2 and [c.calls for c in study.campaigns] == [1, 1]  # no silent retry
    failed = [line for line in read(study.registry) if line["kind"] == "call_failed"]
    assert len(failed) == 2 and all(error in line["error"] for line in failed)
    assert all(line["cost_usd"] == line["reserved_usd"] > 0 for line in failed)
    assert study.budget.spent_usd == pytest.approx(sum(line["cost_usd"] for line in failed))
    assert study.budget.held_usd == pytest.approx(0)
