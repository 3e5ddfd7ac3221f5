"""The model layer: replay through the real SDK, clear misses, no live call without a key."""

import json

import anthropic
import httpx2
import pytest

from lab_utils import llm

REQUEST = {"max_tokens": 64, "messages": [{"role": "user", "content": "Say hi"}], "model": llm.MODEL}
ANSWER = {"id": "msg_01", "type": "message", "role": "assistant", "model": llm.MODEL,
          "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": None,
          "usage": {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 0}}


@pytest.fixture
def responses(tmp_path, offline):
    llm.store_answer(REQUEST, ANSWER, "authored", tmp_path / "hi.json", note="test answer")
    return tmp_path


def test_replay_returns_the_sdks_own_message(responses):
    client = llm.make_client(responses_dir=responses)
    message = client.messages.create(**REQUEST)
    assert isinstance(message, anthropic.types.Message)
    assert llm.text_of(message) == "hi"
    assert message.usage.cache_creation_input_tokens == 100


def test_a_request_is_found_by_its_content_not_its_key_order(responses):
    shuffled = {"model": llm.MODEL, "messages": REQUEST["messages"], "max_tokens": 64}
    assert llm.request_key(shuffled) == llm.request_key(REQUEST)
    assert llm.text_of(llm.make_client(responses_dir=responses).messages.create(**shuffled)) == "hi"


def test_a_miss_raises_once_with_a_diff_against_the_closest_stored_request(responses):
    client = llm.make_client(responses_dir=responses)
    changed = {**REQUEST, "messages": [{"role": "user", "content": "Say hello"}]}
    with pytest.raises(llm.NoStoredAnswer) as err:
        client.messages.create(**changed)
    assert not isinstance(err.value, anthropic.APIError)  # no call was made: nothing may charge it
    message = str(err.value)
    assert '-messages[0].content: "Say hi"' in message and '+messages[0].content: "Say hello"' in message
    assert "undo that change" in message
    assert "LAB_LIVE=1" in message and "ANTHROPIC_API_KEY" in message


def test_the_diff_names_only_the_changed_line_of_a_long_message(responses):
    long = {**REQUEST, "messages": [{"role": "user", "content": "\n".join(f"line {i}" for i in range(50))}]}
    llm.store_answer(long, ANSWER, "authored", responses / "long.json")
    edited = {**long, "messages": [{"role": "user", "content": long["messages"][0]["content"].replace(
        "line 7\n", "line seven\n")}]}
    with pytest.raises(llm.NoStoredAnswer) as err:
        llm.stored_answer(edited, responses)
    changes = [line.strip() for line in str(err.value).splitlines() if line.startswith("    ")]
    assert changes == ["-messages[0].content: line 7", "+messages[0].content: line seven"]


def test_a_long_diff_is_cut_short(responses):
    other = {**REQUEST, "max_tokens": 65, "messages": [{"role": "user", "content": "\n".join(
        f"new {i}" for i in range(40))}]}
    with pytest.raises(llm.NoStoredAnswer, match=r"and \d+ more changed lines"):
        llm.stored_answer(other, responses)


def test_a_miss_with_nothing_stored_says_so(offline, tmp_path):
    with pytest.raises(llm.NoStoredAnswer, match="no stored answers in"):
        llm.stored_answer(REQUEST, tmp_path / "empty")


def test_live_without_a_key_is_refused(offline, monkeypatch):
    monkeypatch.setenv("LAB_LIVE", "1")
    with pytest.raises(llm.LiveModeRefused, match="ANTHROPIC_API_KEY"):
        llm.make_client()


def test_grading_is_never_live(offline, monkeypatch):
    monkeypatch.setenv("LAB_LIVE", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert llm.mode() == "replay"


def test_modes_from_the_environment(offline, monkeypatch):
    assert llm.mode() == "replay"
    monkeypatch.setenv("LAB_LIVE", "1")
    assert llm.mode() == "live"
    monkeypatch.setenv("LAB_RECORD", "1")
    assert llm.mode() == "record"


def campaign_check(calls: int) -> None:
    """A check cell of a lesson: the text says a dozen calls, as the stored answers give."""
    with llm.stored_figures("the study"):
        assert calls == 12, f"a dozen calls (this run: {calls})"
        print("the next check")


def test_stored_figures_fail_a_replayed_check_as_strictly_as_a_plain_assert(offline, capsys):
    campaign_check(12)
    with pytest.raises(AssertionError, match=r"a dozen calls \(this run: 9\)"):
        campaign_check(9)
    assert "differ" not in capsys.readouterr().out


def test_stored_figures_fail_while_graded_even_with_live_switched_on(offline, monkeypatch):
    monkeypatch.setenv("LAB_LIVE", "1")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(AssertionError):
        campaign_check(9)


@pytest.mark.parametrize("switches", [("LAB_LIVE",), ("LAB_LIVE", "LAB_RECORD")])
def test_stored_figures_say_live_that_the_answers_differ_and_what_this_run_found(offline, monkeypatch, capsys,
                                                                                 switches):
    for name in switches:
        monkeypatch.setenv(name, "1")
    campaign_check(9)
    out = capsys.readouterr().out  # pytest adds the compared values to the message of an assert it rewrote
    assert out.startswith("the study: the live answers differ from the stored ones") and "this run: 9" in out
    assert "the next check" not in out, "a failed check ends the block"
    for failing, found in [(lambda: [][0], "IndexError("), (lambda: {}["agent-04"], "KeyError('agent-04')"),
                           (lambda: exec("assert False"), "AssertionError()")]:
        with llm.stored_figures("campaign 1"):
            failing()
        assert found in capsys.readouterr().out
    with pytest.raises(ZeroDivisionError), llm.stored_figures("a broken cell"):  # only a check's failure is said
        print(1 / 0)


@pytest.mark.parametrize("said", ["true", "yes", "on", "2", " 1"])
def test_a_live_switch_other_than_1_or_0_is_refused_before_any_client(offline, monkeypatch, said):
    monkeypatch.setenv("LAB_LIVE", said)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    for step in (llm.make_client, llm.describe_mode):
        with pytest.raises(llm.SettingRefused) as err:
            step()
        message = str(err.value)
        assert f"LAB_LIVE is {said!r}" in message and "LAB_LIVE=1" in message and "\n" not in message


def test_a_record_switch_other_than_1_or_0_is_refused(offline, monkeypatch):
    monkeypatch.setenv("LAB_LIVE", "1")
    monkeypatch.setenv("LAB_RECORD", "yes")
    with pytest.raises(llm.SettingRefused, match="LAB_RECORD is 'yes'.*LAB_RECORD=1"):
        llm.mode()


@pytest.mark.parametrize("said", ["0", ""])
def test_a_live_switch_of_0_or_empty_replays(offline, monkeypatch, said):
    monkeypatch.setenv("LAB_LIVE", said)
    assert llm.mode() == "replay"


def test_record_without_live_says_once_that_this_run_replays(offline, monkeypatch, capsys):
    monkeypatch.setattr(llm, "SAID", set())
    monkeypatch.setenv("LAB_RECORD", "1")
    assert llm.mode() == "replay"
    llm.describe_mode()
    llm.make_client()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and "LAB_RECORD=1" in lines[0] and "LAB_LIVE=1" in lines[0] and "replays" in lines[0]


def test_cost_counts_cache_writes():
    p = llm.price(llm.MODEL)
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_creation_input_tokens": 2000,
             "cache_read_input_tokens": 0}
    expected = (1000 * p.input + 100 * p.output + 2000 * p.cache_write) / 1e6
    assert llm.cost_usd(usage) == pytest.approx(expected)
    assert p.cache_write > p.input


def test_unknown_model_price_is_a_clear_error():
    with pytest.raises(KeyError, match="no price known"):
        llm.price("claude-unknown")


def test_record_mode_stores_the_answer_and_never_the_key(offline, monkeypatch, tmp_path):
    key = "sk-ant-secret-for-test"

    def upstream(request):
        assert key in str(request.headers.raw)  # the key travels in a header, nowhere else
        return httpx2.Response(200, json=ANSWER)

    transport = llm.LiveTransport(tmp_path / "recorded.json", inner=httpx2.MockTransport(upstream))
    client = anthropic.Anthropic(api_key=key, max_retries=0, http_client=httpx2.Client(transport=transport))
    assert llm.text_of(client.messages.create(**REQUEST)) == "hi"
    stored = (tmp_path / "recorded.json").read_text()
    assert key not in stored
    assert json.loads(stored)[0]["provenance"] == "recorded"
    assert llm.METER.calls >= 1


def test_live_spending_is_capped(offline, monkeypatch):
    monkeypatch.setenv("LAB_MAX_USD", "0")
    transport = llm.LiveTransport(None, inner=httpx2.MockTransport(lambda r: httpx2.Response(200, json=ANSWER)))
    client = anthropic.Anthropic(api_key="k", max_retries=0, http_client=httpx2.Client(transport=transport))
    with pytest.raises(anthropic.RateLimitError, match="Spending cap reached"):
        client.messages.create(**REQUEST)


def test_no_key_in_any_stored_answer():
    for path in llm.RESPONSES_DIR.glob("*.json"):
        assert "sk-ant" not in path.read_text(), path


def test_a_recorded_answer_is_replayed_before_the_shipped_one_whatever_the_files_names(responses):
    recorded = {**ANSWER, "content": [{"type": "text", "text": "recorded"}]}
    llm.store_answer(REQUEST, recorded, "recorded", responses / "recorded.json")
    llm.store_answer(REQUEST, ANSWER, "authored", responses / "shipped-later.json")  # sorts after recorded.json
    assert llm.text_of(llm.make_client(responses_dir=responses).messages.create(**REQUEST)) == "recorded"
