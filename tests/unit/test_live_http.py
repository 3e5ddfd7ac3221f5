"""Live mode over real HTTP: the course talks to a local Messages API server through
ANTHROPIC_BASE_URL, as it would to the API or any Anthropic-compatible server."""

import json
import socket

import anthropic
import pytest

from lab_utils import crystallize, llm, paths
from lab_utils.memory import MemoryStore
from live_server import KEY, RETRY_AFTER, reply
from ports import unused_port

HELLO = {"model": llm.MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "Say hi"}]}


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



@pytest.fixture
def installed(monkeypatch, tmp_path):
    """The course as pip installs it: its shipped answers inside the package (here a copy of one)."""
    package = tmp_path / "site-packages" / "lab_utils"
    shipped = package / "data" / "responses"
    shipped.mkdir(parents=True)
    llm.store_answer(HELLO, {**reply({"model": llm.MODEL}), "content": [{"type": "text", "text": "shipped"}]},
                     "authored", shipped / "hello.json")
    monkeypatch.setattr(paths, "PACKAGE_DIR", package)
    return shipped


def test_an_installed_course_records_into_the_work_folder_and_replays_from_there(server, monkeypatch, installed,
                                                                                 tmp_path):
    before = sorted(installed.parent.parent.rglob("*"))
    monkeypatch.setenv("LAB_RECORD", "1")
    live = llm.text_of(llm.make_client(responses_dir=installed).messages.create(**HELLO))
    assert sorted(installed.parent.parent.rglob("*")) == before, "nothing written into the package"
    recorded = tmp_path / "work" / "responses" / "recorded.json"
    assert json.loads(recorded.read_text())[0]["provenance"] == "recorded"

    monkeypatch.delenv("LAB_LIVE")
    replayed = llm.text_of(llm.make_client(responses_dir=installed).messages.create(**HELLO))
    assert replayed == live != "shipped", "the recorded answer replaces the shipped one"
    assert len(server.requests) == 1, "the replay made no call"


def said_by_two_calls(responses_dir, capsys) -> list[str]:
    """The lines printed while one client makes the same call twice."""
    capsys.readouterr()
    client = llm.make_client(responses_dir=responses_dir)
    client.messages.create(**HELLO)
    client.messages.create(**HELLO)
    return capsys.readouterr().out.splitlines()


def test_record_mode_says_once_which_file_it_writes(server, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("LAB_RECORD", "1")
    assert said_by_two_calls(tmp_path, capsys) == [
        f"model layer: recording answers into {tmp_path / 'recorded.json'} (offline runs replay them before the "
        "course's own)"]


def test_a_replayed_recorded_answer_is_named_once_per_kernel(server, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("LAB_RECORD", "1")
    llm.make_client(responses_dir=tmp_path).messages.create(**HELLO)
    monkeypatch.delenv("LAB_LIVE")
    monkeypatch.delenv("LAB_RECORD")  # a plain offline run, which replays what was recorded
    assert said_by_two_calls(tmp_path, capsys) == [
        f"model layer: replaying an answer recorded in {tmp_path / 'recorded.json'}, not one the course ships; "
        "delete that file to replay the course's answers"]


def test_record_mode_that_cannot_write_says_so_before_any_call(server, monkeypatch, installed, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("LAB_WORK_DIR", str(blocked))
    monkeypatch.setenv("LAB_RECORD", "1")
    with pytest.raises(llm.RecordFileError) as failed:
        llm.make_client(responses_dir=installed)
    message = str(failed.value)
    assert str(blocked / "responses" / "recorded.json") in message and "LAB_WORK_DIR" in message, message
    assert "\n" not in message and server.requests == []


def test_an_answer_that_cannot_be_stored_stops_the_cell_with_the_file_named(server, monkeypatch, tmp_path):
    (tmp_path / "recorded.json").mkdir()  # not a file: the write fails after the call
    monkeypatch.setenv("LAB_RECORD", "1")
    with pytest.raises(llm.RecordFileError) as failed:
        llm.make_client(responses_dir=tmp_path).messages.create(**HELLO)
    message = str(failed.value)
    assert str(tmp_path / "recorded.json") in message and "LAB_WORK_DIR" in message, message
    assert "was made and counted" in message and "\n" not in message
    assert llm.METER.calls == 1


def test_an_answer_with_no_content_is_refused_and_stored_nowhere(server, monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_RECORD", "1")
    server.behaviour = "empty"
    with pytest.raises(anthropic.APIResponseValidationError) as failed:
        llm.make_client(responses_dir=tmp_path).messages.create(**HELLO)
    message = str(failed.value)
    assert "no text and no tool input" in message and "unset LAB_LIVE to run offline" in message, message
    assert "\n" not in message
    assert not (tmp_path / "recorded.json").exists()
    assert llm.METER.calls == 1, "the server reported its cost: counted, so the cap holds"


FAILURES = {
    # behaviour: (the SDK's error class, what the message must say)
    "wrong key": (anthropic.AuthenticationError, ["401", "authentication_error", "check ANTHROPIC_API_KEY"]),
    "rate_limited": (anthropic.RateLimitError, ["429", f"wait {RETRY_AFTER} s", "run the cell again"]),
    "overloaded": (anthropic.OverloadedError, ["529", "overloaded", "wait a minute"]),
    "malformed": (anthropic.APIResponseValidationError, ["not a Messages API answer", "ANTHROPIC_BASE_URL"]),
    "stall": (anthropic.APITimeoutError, ["no answer within 0.5 s", "make_client(timeout=...)"]),
    "usage_empty": (anthropic.APIResponseValidationError, ["does not report usage", "spending cap needs it"]),
    "usage_missing": (anthropic.APIResponseValidationError, ["does not report usage", "spending cap needs it"]),
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


UNREACHABLE = {
    # where ANTHROPIC_BASE_URL points: (the host:port the message names, what it must say)
    "a closed port": (lambda server: f"http://127.0.0.1:{unused_port()}", ["connection refused"]),
    "a host that does not resolve": (lambda server: "http://no-such-host.invalid:8080",
                                     ["no-such-host.invalid:8080", "does not resolve"]),
    "https to a plain-HTTP server": (lambda server: server.url.replace("http:", "https:"), ["TLS failed"]),
}


@pytest.fixture
def no_dns(monkeypatch):
    """A resolver that knows no name but 127.0.0.1's: no lookup leaves the machine."""
    real = socket.getaddrinfo

    def lookup(host, *args, **kwargs):
        if host != "127.0.0.1":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)


@pytest.mark.parametrize("where", UNREACHABLE)
def test_an_unreachable_server_is_named_with_the_cause_and_what_to_do(where, server, monkeypatch, no_dns, tmp_path):
    url_of, phrases = UNREACHABLE[where]
    url = url_of(server)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("LAB_RECORD", "1")
    with pytest.raises(anthropic.APIConnectionError) as failed:
        llm.make_client(timeout=5, responses_dir=tmp_path).messages.create(**HELLO)
    message = str(failed.value)
    host_port = url.split("//")[1]
    assert all(p in message for p in [f"Live call to {host_port}", *phrases, "ANTHROPIC_BASE_URL"]), message
    assert "unset LAB_LIVE to run offline" in message and "\n" not in message, "one message, one line"
    assert not (tmp_path / "recorded.json").exists() and llm.METER.calls == 0


@pytest.mark.parametrize("cap", ["1,00", "abc", "", "nan", "-1"])
def test_a_spending_cap_that_is_not_an_amount_is_refused_before_any_call(cap, server, monkeypatch):
    monkeypatch.setenv("LAB_MAX_USD", cap)
    with pytest.raises(llm.SettingRefused) as refused:
        llm.make_client().messages.create(**HELLO)
    message = str(refused.value)
    assert f"LAB_MAX_USD is {cap!r}" in message and "like 0.50" in message and "\n" not in message, message
    assert server.requests == []


def test_a_model_with_no_known_price_is_refused_before_any_call(server, monkeypatch):
    monkeypatch.setenv("LAB_MODEL", "claude-opus-9")
    monkeypatch.setattr(llm, "MODEL", "claude-opus-9")  # as a kernel started with LAB_MODEL set has it
    with pytest.raises(llm.SettingRefused) as refused:
        llm.make_client().messages.create(**{**HELLO, "model": llm.MODEL})
    message = str(refused.value)
    assert "LAB_MODEL" in message and "'claude-opus-9'" in message and all(m in message for m in llm.PRICES)
    assert "\n" not in message and server.requests == []


def test_a_request_naming_a_model_with_no_known_price_never_leaves(server):
    client = llm.make_client()
    with pytest.raises(llm.SettingRefused, match="'claude-opus-9'"):
        client.messages.create(**{**HELLO, "model": "claude-opus-9"})
    assert server.requests == [] and llm.METER.calls == 0
