"""The structured-output crystallizer, its stored answers, and memory as tools."""

from __future__ import annotations

import json

import anthropic
import pytest

from lab_utils.crystallize import (CRYSTAL_SCHEMA, MEMORY_TOOLS, CrystallizeError, crystal_request,
                                   crystallize, load_transcript, run_memory_tool)
from lab_utils.llm import RESPONSES_DIR, NoStoredAnswer, make_client, request_key, store_answer
from lab_utils.memory import MemoryStore
from lab_utils.paths import DATA_DIR

TICKETS = ["t-8801", "t-9107", "t-8600", "t-9044"]


@pytest.fixture
def store(tmp_path):
    return MemoryStore(tmp_path / "memory.jsonl")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.delenv("LAB_LIVE", raising=False)


def test_transcripts_exist_for_every_ticket():
    files = {p.stem for p in (DATA_DIR / "support" / "transcripts").glob("*.txt")}
    assert set(TICKETS) <= files


def test_replayed_crystallization_goes_through_the_rules(store):
    outcomes = {t: crystallize(load_transcript(t), t, store) for t in TICKETS}
    assert outcomes == {
        "t-8801": ["stored m-001", "stored m-002", "stored m-003"],
        "t-9107": ["stored m-004", "duplicate of m-002, skipped"],
        "t-8600": ["stored m-005", "stored m-006"],
        "t-9044": ["stored m-007", "rejected: unverified claim", "stored m-008"],
    }
    assert store.items[2].text == "Customer [EMAIL] asked for a callback at [PHONE]."
    assert all(m.source in TICKETS for m in store.items)
    found = store.search("C-4471 export file is empty again", 2)
    assert {m.source for m in found} == {"t-8801", "t-9107"}


def test_stored_answers_are_authored_messages_for_the_exact_requests():
    entries = json.loads((RESPONSES_DIR / "crystallize.json").read_text(encoding="utf-8"))
    keys = {request_key(crystal_request(load_transcript(t))) for t in TICKETS}
    assert {e["key"] for e in entries} == keys
    for e in entries:
        assert e["provenance"] == "authored" and "authored" in e["note"]
        message = anthropic.types.Message.model_validate(e["response"])
        assert message.stop_reason == "end_turn" and message.stop_sequence is None
        usage = e["response"]["usage"]
        assert set(usage) == {"input_tokens", "output_tokens", "cache_creation_input_tokens",
                              "cache_read_input_tokens"}
        assert 300 < usage["input_tokens"] < 3000 and 20 < usage["output_tokens"] < 400


def test_schema_forbids_extra_fields_everywhere():
    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    found = list(objects(CRYSTAL_SCHEMA))
    assert len(found) == 2 and all(o["additionalProperties"] is False for o in found)
    candidate = CRYSTAL_SCHEMA["$defs"]["Candidate"]
    assert candidate["properties"]["kind"]["enum"] == ["episode", "fact"]
    assert set(candidate["required"]) == {"text", "kind", "verified"}


def _replying(tmp_path, text: str, stop_reason: str = "end_turn"):
    """A replay client whose only stored answer to the t-8801 request is `text`."""
    request = crystal_request(load_transcript("t-8801"))
    response = {"id": "msg_test", "type": "message", "role": "assistant", "model": request["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
                "stop_sequence": None, "usage": {"input_tokens": 900, "output_tokens": 60,
                                                 "cache_creation_input_tokens": 0,
                                                 "cache_read_input_tokens": 0}}
    store_answer(request, response, "authored", tmp_path / "bad.json", note="authored for a test")
    return make_client(responses_dir=tmp_path)


GOOD = {"text": "t-8801: cause was the status filter.", "kind": "episode", "verified": True}


@pytest.mark.parametrize("answer, stop_reason, problem", [
    ('{"memories": [', "end_turn", "schema"),
    (json.dumps({"memories": [GOOD, {**GOOD, "kind": "rumour"}]}), "end_turn", "kind"),
    (json.dumps({"memories": [GOOD, {"text": "x", "kind": "fact"}]}), "end_turn", "verified"),
    (json.dumps({"memories": [GOOD, {**GOOD, "confidence": 0.9}]}), "end_turn", "confidence"),
    (json.dumps({"memories": [GOOD, {**GOOD, "verified": "true"}]}), "end_turn", "verified"),
    (json.dumps({"memories": [GOOD, {**GOOD, "text": "  "}]}), "end_turn", "text"),
    (json.dumps({"memory": [GOOD]}), "end_turn", "memories"),
    ("I can't help with that.", "refusal", "refusal"),
    ('{"memories": [{"text": "t-8801: cause', "max_tokens", "max_tokens"),
])
def test_a_bad_answer_stores_nothing(tmp_path, store, answer, stop_reason, problem):
    client = _replying(tmp_path, answer, stop_reason)
    with pytest.raises(CrystallizeError, match=problem):
        crystallize(load_transcript("t-8801"), "t-8801", store, client)
    assert store.items == [] and not store.path.exists()


def test_crystallize_needs_a_source(store):
    with pytest.raises(ValueError, match="source"):
        crystallize(load_transcript("t-8801"), " ", store)


def test_an_unstored_request_fails_with_how_to_go_live(store):
    with pytest.raises(NoStoredAnswer, match="LAB_LIVE=1"):
        crystallize("a session nobody stored an answer for", "t-1", store)


# -- memory as tools -------------------------------------------------------------------------


def test_tool_definitions_follow_the_messages_api():
    assert [t["name"] for t in MEMORY_TOOLS] == ["recall", "remember"]
    for tool in MEMORY_TOOLS:
        assert set(tool) == {"name", "description", "input_schema"}
        assert tool["input_schema"]["type"] == "object"
        assert tool["input_schema"]["additionalProperties"] is False
    remember_schema = MEMORY_TOOLS[1]["input_schema"]
    assert set(remember_schema["required"]) == {"text", "kind", "source", "verified"}


def test_tools_run_the_rules_in_code(store):
    store.remember_raw("t-8600: C-2210 asked for an invoice copy.", "t-8600")
    store.remember_raw("t-9044: C-3302 webhooks failed on an expired certificate.", "t-9044")
    call = {"text": "t-9310: export empty a third time.", "kind": "episode", "source": "t-9310",
            "verified": True}
    assert run_memory_tool(store, "remember", call, "t-9310") == "stored m-003"
    assert run_memory_tool(store, "remember", {**call, "kind": "fact", "verified": False},
                           "t-9310") == "rejected: unverified claim"
    forged = run_memory_tool(store, "remember", {**call, "source": "t-8801"}, "t-9310")
    assert forged.startswith("rejected: source must be the current ticket t-9310")
    assert run_memory_tool(store, "recall", {"query": "export empty"}, "t-9310") == \
        "[m-003 <- t-9310] t-9310: export empty a third time."
    assert run_memory_tool(store, "recall", {"query": "refund approval"}, "t-9310") == "no relevant memories"
    with pytest.raises(ValueError, match="unknown memory tool"):
        run_memory_tool(store, "forget", {}, "t-9310")
    with pytest.raises(ValueError):
        run_memory_tool(store, "remember", {"text": "x"}, "t-9310")
    assert len(store.items) == 3
