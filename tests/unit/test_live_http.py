"""Live mode over real HTTP: the course talks to a local Messages API server through
ANTHROPIC_BASE_URL, as it would to the API or any Anthropic-compatible server."""

import anthropic
import pytest

from lab_utils import crystallize, llm
from lab_utils.memory import MemoryStore
from live_server import KEY, RETRY_AFTER, reply, serve

HELLO = {"model": llm.MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Say hi"}]}


@pytest.fixture
def server(offline, monkeypatch):
    """Live mode pointed at a local server, with a fresh spending meter."""
    with serve() as running:
        monkeypatch.setenv("LAB_LIVE", "1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.url)
        monkeypatch.setattr(llm, "METER", llm.Meter())
        yield running


def test_a_lesson_calls_the_model_live(server, tmp_path):
    """Lesson 03's crystallize step, live: the answer arrives and the meter counts its cost."""
    request = crystallize.crystal_request(crystallize.load_transcript("t-9044"))
    store = MemoryStore(tmp_path / "memory.jsonl")
    outcomes = crystallize.crystallize(crystallize.load_transcript("t-9044"), "t-9044", store)
    assert server.requests == [request], "one call, exactly the lesson's request"
    assert outcomes and any(o.startswith("stored") for o in outcomes)
    assert llm.METER.calls == 1
    assert llm.METER.usd == pytest.approx(llm.cost_usd(reply(request)["usage"]))


def test_record_mode_stores_the_answer_and_the_next_replay_uses_it(server, monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_RECORD", "1")
    live = llm.text_of(llm.make_client(responses_dir=tmp_path).messages.create(**HELLO))
    entry = llm.stored_answer(HELLO, tmp_path)
    assert entry["provenance"] == "recorded" and KEY not in (tmp_path / "recorded.json").read_text()

    monkeypatch.delenv("LAB_LIVE")
    replayed = llm.text_of(llm.make_client(responses_dir=tmp_path).messages.create(**HELLO))
    assert replayed == live == "an answer from the local server"
    assert len(server.requests) == 1, "the replay made no call"


FAILURES = {
    # behaviour: (the SDK's error class, what the message must say)
    "wrong key": (anthropic.AuthenticationError, ["401", "authentication_error", "check ANTHROPIC_API_KEY"]),
    "rate_limited": (anthropic.RateLimitError, ["429", f"wait {RETRY_AFTER} s", "run the cell again"]),
    "overloaded": (anthropic.OverloadedError, ["529", "overloaded", "wait a minute"]),
    "malformed": (anthropic.APIResponseValidationError, ["not a Messages API answer", "ANTHROPIC_BASE_URL"]),
    "stall": (anthropic.APITimeoutError, ["no answer within 0.5 s", "make_client(timeout=...)"]),
}


@pytest.mark.parametrize("behaviour", FAILURES)
def test_a_failed_call_says_why_and_what_to_do_and_stores_nothing(behaviour, server, monkeypatch, tmp_path):
    error_class, phrases = FAILURES[behaviour]
    monkeypatch.setenv("LAB_RECORD", "1")
    if behaviour == "wrong key":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-this-one")
    else:
        server.behaviour = behaviour
    client = llm.make_client(timeout=0.5, responses_dir=tmp_path)
    with pytest.raises(error_class) as failed:
        client.messages.create(**HELLO)
    message = str(failed.value)
    assert all(p in message for p in phrases), message
    assert "unset LAB_LIVE to run offline" in message and "\n" not in message, "one message, one line"
    assert len(server.requests) == 1, "no silent retry"
    assert not (tmp_path / "recorded.json").exists(), "a failed call stores nothing"
    assert (llm.METER.calls, llm.METER.usd) == (0, 0.0), "a failed call counts no spending"


def test_the_spending_cap_holds_after_failures(server, monkeypatch):
    client = llm.make_client(timeout=0.5)
    server.behaviour = "overloaded"
    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(**HELLO)
    server.behaviour = "answer"
    client.messages.create(**HELLO)
    monkeypatch.setenv("LAB_MAX_USD", str(llm.METER.usd))  # the cap is now spent
    with pytest.raises(anthropic.RateLimitError, match="Spending cap reached.*no call was made"):
        client.messages.create(**HELLO)
    assert len(server.requests) == 2, "a call over the cap never reaches the server"
