"""Hostile input at every public entry point, in one table (COURSE.md §7, reliability).

Each row: the entry point, what is hostile about the input, what must happen (an exception
type, or a status the call reports) and a fragment of the message that names what is wrong.
After every row that does not accept the input, every file under tmp_path is byte-identical
and the in-memory state is unchanged: nothing already stored is lost or changed. A row that
accepts the input may only add: old files are prefixes of the new ones, old state a prefix
of the new state.

Single cases already tested elsewhere are not repeated here (e.g. a store line that is not
JSON or lacks `ts`: test_memory.py; remember() with source None: test_rules.py; the scenario
date 2026-1-10 through the CLI: test_temporal_cli.py); the rows pick other hostile values
of the same kinds. Rows marked xfail are bugs reported to the lead (BUG-n in the reason);
strict, so a fix turns them into a failure that asks for the mark to be removed.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from lab_utils.crystallize import CrystallizeError, crystallize
from lab_utils.memory import MemoryFileError, MemoryStore
from lab_utils.proposer import SETTINGS, Rejected, approve, build_evidence, run_study, validate, verify
from lab_utils.reflection import (RunRecordError, SelfMemo, SkillFileError, SkillStore, build_packet,
                                  load_runs, new_skill, save_memo)
from lab_utils.reflection.memo import MemoFileError, load_memo
from lab_utils.reflection.reflect import build_request, reflect
from lab_utils.rules import forget_source, remember
from lab_utils.session import SessionFileError, SessionState, load_session, pause
from lab_utils.temporal import PUBLIC, Config, TemporalMemory, evaluate, load_scenarios

ACCEPTED = "accepted"
Call = Callable[[], Any]
State = Callable[[], tuple]
NO_STATE: State = tuple  # rows whose only stored state is files


@dataclass(frozen=True)
class Row:
    setup: Callable[[Path], tuple[Call, State]]  # builds the stored state, returns the call
    expect: type[BaseException] | str  # an exception type, or the (status, message) status
    fragment: str  # must occur in the message: it names what is wrong
    new_files: bool = False  # the call legitimately creates a new output folder


def row(id_: str, setup, expect, fragment, *, bug: str | None = None, new_files=False, marks=()):
    marks = [*marks, pytest.mark.xfail(strict=True, reason=bug)] if bug else list(marks)
    return pytest.param(Row(setup, expect, fragment, new_files), id=id_, marks=marks)


# -- the stored state the rows start from ------------------------------------------------

def _line(id_="m-001", **fields) -> str:
    record = {"id": id_, "kind": "episode", "text": "t-8801: export empty, status filter fixed it.",
              "source": "t-8801", "ts": 1.0, "verified": True}
    return json.dumps({**record, **fields}, ensure_ascii=False)


def _drop(field: str) -> str:
    return json.dumps({k: v for k, v in json.loads(_line("m-002")).items() if k != field})


def store_file(tmp: Path, middle: str | bytes, then: Callable = MemoryStore):
    """memory.jsonl with a good line, the hostile line 2, and a good line 3; the call loads it."""
    path = tmp / "memory.jsonl"
    lines = [_line(), middle, _line("m-003", text="C-4471 is on the Pro plan.", kind="fact")]
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return lambda: then(path), NO_STATE


def whole_store_file(tmp: Path, content: bytes):
    path = tmp / "memory.jsonl"
    path.write_bytes(content)
    return lambda: MemoryStore(path), NO_STATE


def _loaded(store: MemoryStore) -> tuple[str, str]:
    return ACCEPTED, f"{len(store.items)} memories, longest {max(len(m.text) for m in store.items)} chars"


def _forget_after_load(path: Path):
    return forget_source(MemoryStore(path), "t-8801")


def _filled_store(tmp: Path) -> MemoryStore:
    store = MemoryStore(tmp / "memory.jsonl")
    remember(store, "t-8801: export empty, the status filter excluded every row.", "episode", "t-8801")
    remember(store, "C-4471 is on the Pro plan with 40 seats.", "fact", "t-8600", True)
    return store


def remembering(text: Any = "t-9310: export empty again.", kind: Any = "episode", source: Any = "t-9310",
                verified: Any = False):
    def setup(tmp: Path):
        store = _filled_store(tmp)
        return (lambda: (ACCEPTED, remember(store, text, kind, source, verified)),
                lambda: tuple(store.items))
    return setup


def _in_child(deadline_s: float, work: Callable[[], str]) -> str:
    """Run `work` in a forked process; a TimeoutError if it has no answer within the deadline."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=lambda: send.send(work()))
    child.start()
    try:
        if not receive.poll(deadline_s):
            raise TimeoutError(f"no answer within {deadline_s} s")
        return receive.recv()
    finally:
        child.kill()
        child.join()


def remembering_within(deadline_s: float, text: str):
    def setup(tmp: Path):
        store = _filled_store(tmp)
        def call():
            outcome = _in_child(deadline_s, lambda: remember(store, text, "episode", "t-9310"))
            store._read_new_lines()  # what the child appended, in this process too
            return ACCEPTED, outcome
        return call, lambda: tuple(store.items)
    return setup


# -- the model, answering over an httpx2 MockTransport -----------------------------------

def _client(handle) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-no-key", max_retries=0, timeout=5,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))


def answering(text: str | None, stop_reason: str = "end_turn") -> anthropic.Anthropic:
    """A client whose every Messages answer is `text` (None: no content block at all)."""
    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        return httpx2.Response(200, json={
            "id": "msg_hostile", "type": "message", "role": "assistant", "model": body["model"],
            "content": [] if text is None else [{"type": "text", "text": text}],
            "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10}})
    return _client(handle)


def failing(status: int, kind: str, message: str) -> anthropic.Anthropic:
    return _client(lambda request: httpx2.Response(
        status, json={"type": "error", "error": {"type": kind, "message": message}}))


def timing_out() -> anthropic.Anthropic:
    def handle(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)
    return _client(handle)


CANDIDATE = {"text": "t-8801: cause was the status filter.", "kind": "episode", "verified": True}


def crystallizing(client: Callable[[], anthropic.Anthropic], source: Any = "t-8801"):
    def setup(tmp: Path):
        store = MemoryStore(tmp / "memory.jsonl")
        remember(store, "C-4471 is on the Pro plan with 40 seats.", "fact", "t-8600", True)
        return lambda: crystallize("a closed session", source, store, client()), lambda: tuple(store.items)
    return setup


# -- session files -----------------------------------------------------------------------

def session_file(content: bytes):
    def setup(tmp: Path):
        path = tmp / "session.json"
        path.write_bytes(content)
        return lambda: load_session(path), NO_STATE
    return setup


def pausing_over_a_paused_session(state: Callable[[], SessionState], question: Any):
    def setup(tmp: Path):
        path = tmp / "session.json"
        pause(SessionState("t-9310", {"customer": "C-4471"}), "refund for order 5512?", path)
        return lambda: pause(state(), question, path), NO_STATE
    return setup


# -- the temporal writer and its CLI -----------------------------------------------------

def _write_event(**changes) -> dict:
    event = {"action": "write", "at": "2026-01-03", "actor": {"tenant": "north", "user": "ada"},
             "fact": {"tenant": "north", "user": "ada", "entity": "account", "key": "city",
                      "value": "Paris", "confidence": 0.95, "source": "user", "kind": "fact",
                      "valid_from": "2026-01-10"},
             "should_retain": True, "source_event_id": "hostile:event-2"}
    for path, value in changes.items():  # "fact__valid_from" sets event["fact"]["valid_from"]
        *parents, name = path.split("__")
        target = event
        for parent in parents:
            target = target[parent]
        if value is _DELETE:
            del target[name]
        else:
            target[name] = value
    return event


_DELETE = object()


def temporal(event: Any, method: str = "write"):
    def setup(tmp: Path):
        memory = TemporalMemory(Config())
        memory.write(_write_event(fact__value="Berlin", at="2026-01-01", fact__valid_from="2026-01-01"))
        def call():
            result = getattr(memory, method)(event)
            return result.status, result.reason
        return call, lambda: memory.records
    return setup


def _cli(*args: str) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-m", "lab_utils.temporal", *args],
                          capture_output=True, text=True, timeout=60)
    return f"exit {done.returncode}", done.stderr


def cli_scenario(change: Callable[[dict], None] | bytes):
    """future-move.json broken by `change` (or replaced by raw bytes), run through the CLI."""
    def setup(tmp: Path):
        path = tmp / "future-move.json"
        if isinstance(change, bytes):
            path.write_bytes(change)
        else:
            scenario = json.loads((PUBLIC / "future-move.json").read_text(encoding="utf-8"))
            change(scenario)
            path.write_text(json.dumps(scenario), encoding="utf-8")
        return lambda: _cli("--scenarios", str(path)), NO_STATE
    return setup


def cli_config_file(content: bytes):
    def setup(tmp: Path):
        path = tmp / "final.json"
        path.write_bytes(content)
        return lambda: _cli("--config", str(path)), NO_STATE
    return setup


# -- the proposer ------------------------------------------------------------------------

_EVIDENCE = []  # built once, on first use: an evaluation of the public scenarios


def _evidence():
    if not _EVIDENCE:
        _EVIDENCE.append(build_evidence(evaluate(Config(), load_scenarios())))
    return _EVIDENCE[0]


def _decision(patch=None, **changes) -> dict:
    return {"observations": [{"scenario_id": "future-move", "step": 3, "seen": "answered Paris"}],
            "hypothesis": "the reader ignores validity dates", "predicted_effect": "temporal passes",
            "action": "propose", "patch": {**dict.fromkeys(SETTINGS), **(patch or {})}, **changes}


def proposing(answer: str):
    def setup(tmp: Path):
        return lambda: validate(answer, _evidence(), Config(), {}), NO_STATE
    return setup


REFUSAL = "I can't help with changing this configuration."


def _refused_study(output: Path):
    return run_study(output, campaigns=1, iterations=1, client=answering(REFUSAL, "refusal"))


def studying_with_a_refusing_model(tmp: Path):
    def call():
        study = _refused_study(tmp / "study")
        line = next(json.loads(x) for x in study.registry.read_text(encoding="utf-8").splitlines()
                    if json.loads(x)["kind"] != "evaluation")
        return line["kind"], f"stop_reason={line['stop_reason']}; {line['rejection']}"
    return call, NO_STATE


def on_a_registry(act: Callable[[Path], Any], damage: Callable[[bytes], bytes] = lambda b: b):
    def setup(tmp: Path):
        path = _refused_study(tmp / "study").registry
        path.write_bytes(damage(path.read_bytes()))
        return lambda: act(path), NO_STATE
    return setup


def _verified(path: Path) -> tuple[str, str]:
    result = verify(path)
    return ("verified" if result.ok else "broken"), str(result)


def _second_line_byte_replaced(data: bytes) -> bytes:
    first_end = data.index(b"\n") + 1
    return data[:first_end] + b"\xff" + data[first_end + 1:]


# -- reflection --------------------------------------------------------------------------

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 6, 12, tzinfo=UTC)
RULE = "When a customer reports an empty export, always check the status filter first."
RUN = {"run_id": "r-1", "agent": "support-en", "started_at": "2026-03-02T09:00:00Z",
       "ended_at": "2026-03-02T09:10:00Z", "messages": [{"role": "user", "text": "hi"}],
       "tool_calls": [{"name": "read_ticket"}], "outcome": "completed"}


def runs_file(line: str | bytes):
    def setup(tmp: Path):
        path = tmp / "runs.jsonl"
        second = line if isinstance(line, bytes) else line.encode()
        path.write_bytes(json.dumps(RUN).encode() + b"\n" + second + b"\n")
        return lambda: load_runs(path), NO_STATE
    return setup


def _run(**changes) -> str:
    record = {k: v for k, v in {**RUN, "run_id": "r-2", **changes}.items() if v is not _DELETE}
    return json.dumps(record, ensure_ascii=False)


def reflecting(answer: dict | str, *, broken_skill: str | None = None, memo_text: str | None = None):
    """reflect() on a store with skill `existing` and a memo, the model answering `answer`."""
    def setup(tmp: Path):
        store = SkillStore(tmp / "skills")
        store.save(new_skill("existing", "Empty exports", ["When a, always b."], NOW - dt.timedelta(days=3)))
        memo = tmp / "memo.md"
        save_memo(memo, SelfMemo(strengths_and_trips=["I trip on customer ids."]))
        if broken_skill is not None:
            store.path("broken").write_text(broken_skill, encoding="utf-8")
        if memo_text is not None:
            memo.write_text(memo_text, encoding="utf-8")
        text = answer if isinstance(answer, str) else json.dumps(answer)
        request = build_request("support-en", build_packet([]), SelfMemo(), [])
        def call():
            outcome = reflect(answering(text), request, store, memo, NOW)
            return outcome.status, outcome.summary()
        return call, NO_STATE
    return setup


def skill_file(content: str | bytes):
    def setup(tmp: Path):
        store = SkillStore(tmp / "skills")
        path = store.path("s")
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return lambda: store.load("s"), NO_STATE
    return setup


FRONT = ('name: "s"\ndescription: "d"\ncreatedAt: "2026-03-01T12:00:00Z"\n'
         'updatedAt: "2026-03-01T12:00:00Z"\npatchCount: 0\nlastUsedAt: null\n')


def skill_text(front: str = FRONT) -> str:
    return f"---\n{front}---\n\n## Rules\n- When a, always b.\n"


def memo_file(content: str):
    def setup(tmp: Path):
        path = tmp / "memo.md"
        path.write_text(content, encoding="utf-8")
        return lambda: load_memo(path), NO_STATE
    return setup


# -- the table ---------------------------------------------------------------------------

WIDE = "word " * 200_000  # 1 MB of ordinary text
TOKEN = "a" * 256_000  # 256 KB without a space: a pasted blob, a long URL, base64

ROWS = [
    # -- store: MemoryStore(path) loading memory.jsonl
    row("store-torn-record-mid-file", lambda t: store_file(t, '{"id": "m-002", "kind": "epis'),
        MemoryFileError, "line 2: not valid JSON"),
    row("store-null-line", lambda t: store_file(t, "null"), MemoryFileError, "line 2: expected a JSON object"),
    row("store-missing-text", lambda t: store_file(t, _drop("text")), MemoryFileError, "line 2: missing field 'text'"),
    row("store-text-is-a-list", lambda t: store_file(t, _line("m-002", text=["a", "b"])),
        MemoryFileError, "line 2: field 'text' has the wrong type (list)"),
    row("store-ts-is-a-bool", lambda t: store_file(t, _line("m-002", ts=True)),
        MemoryFileError, "line 2: field 'ts' has the wrong type (bool)"),
    row("store-cp1252-bytes-mid-file", lambda t: store_file(t, _line("m-002", text="Müller called").encode("cp1252")),
        MemoryFileError, "line 2: not UTF-8 text"),
    row("store-file-saved-as-utf16", lambda t: whole_store_file(t, (_line() + "\n").encode("utf-16")),
        MemoryFileError, "line 1: not UTF-8 text"),
    row("store-bad-line-and-no-final-newline",
        lambda t: whole_store_file(t, f"{_line()}\nnot json\n{_line('m-003')}".encode()),
        MemoryFileError, "line 2: not valid JSON"),
    row("store-utf8-bom", lambda t: whole_store_file(t, ("\ufeff" + _line() + "\n").encode()),
        MemoryFileError, "line 1: not valid JSON"),
    row("store-1mb-line", lambda t: store_file(t, _line("m-002", text=WIDE), then=lambda p: _loaded(MemoryStore(p))),
        ACCEPTED, "3 memories, longest 1000000 chars"),
    row("store-superscript-id", lambda t: store_file(t, _line("m-²")), MemoryFileError, "line 2: field 'id'"),
    row("store-deep-nesting", lambda t: store_file(t, "[" * 100_000 + "]" * 100_000),
        MemoryFileError, "line 2"),
    row("store-lone-surrogate-then-forget", lambda t: store_file(t, _line("m-002", text="x SURROGATE y").replace(
        "SURROGATE", "\\ud800"), then=_forget_after_load), MemoryFileError, "line 2: field 'text'"),

    # -- rules.remember
    row("remember-kind-capitalised", remembering(kind="Fact", verified=True), ValueError, "kind must be one of"),
    row("remember-kind-none", remembering(kind=None), ValueError, "kind must be one of"),
    row("remember-text-newline-tab", remembering(text="\n\t  "), ValueError, "text must be a non-empty string"),
    row("remember-text-int", remembering(text=42), ValueError, "text must be a non-empty string, not 42"),
    row("remember-text-bytes", remembering(text=b"C-4471 export"), ValueError, "text must be a non-empty string"),
    row("remember-source-int", remembering(source=8801), ValueError, "source (the ticket a memory comes from)"),
    row("remember-verified-1", remembering(kind="fact", verified=1), ValueError,
        "verified must be True or False, not 1"),
    row("remember-verified-none", remembering(verified=None), ValueError, "verified must be True or False"),
    # A fact whose verified is false in any way is an unverified claim, as lesson 03 states the gate.
    row("remember-fact-verified-none", remembering(kind="fact", verified=None), ACCEPTED, "rejected: unverified claim"),
    row("remember-fact-verified-0", remembering(kind="fact", verified=0), ACCEPTED, "rejected: unverified claim"),
    row("remember-1mb-text", remembering(text=WIDE), ACCEPTED, "stored m-003"),
    row("remember-256kb-token", remembering_within(1.0, TOKEN), ACCEPTED, "stored m-003"),
    row("remember-lone-surrogate", remembering(text="t-9310: export \ud800 empty"), ValueError, "text"),

    # -- crystallize (the model's answer over an httpx2 MockTransport)
    row("crystallize-fact-with-empty-text",
        crystallizing(lambda: answering(json.dumps({"memories": [{"text": "", "kind": "fact", "verified": True}]}))),
        CrystallizeError, "memories[0].text: a memory needs some text"),
    row("crystallize-bare-list", crystallizing(lambda: answering(json.dumps([CANDIDATE]))),
        CrystallizeError, "does not fit the schema"),
    row("crystallize-memories-is-an-object", crystallizing(lambda: answering(json.dumps({"memories": CANDIDATE}))),
        CrystallizeError, "memories: Input should be a valid array"),
    row("crystallize-extra-top-level-field",
        crystallizing(lambda: answering(json.dumps({"memories": [CANDIDATE], "notes": "also remember"}))),
        CrystallizeError, "notes: unknown field"),
    row("crystallize-refusal", crystallizing(lambda: answering("I can't help with that.", "refusal")),
        CrystallizeError, "stop_reason='refusal'"),
    row("crystallize-no-content-block", crystallizing(lambda: answering(None)), CrystallizeError, "Invalid JSON"),
    row("crystallize-api-overloaded", crystallizing(lambda: failing(529, "overloaded_error", "Overloaded")),
        anthropic.APIStatusError, "overloaded_error"),
    row("crystallize-timeout", crystallizing(timing_out), anthropic.APITimeoutError, "timed out"),
    row("crystallize-source-none", crystallizing(lambda: answering(json.dumps({"memories": [CANDIDATE]})), None),
        ValueError, "source"),

    # -- session files
    row("session-empty-file", session_file(b""), SessionFileError, "Invalid JSON"),
    row("session-fact-value-int", session_file(b'{"ticket_id": "t-9310", "facts": {"seats": 40}}'),
        SessionFileError, "facts.seats"),
    row("session-awaiting-a-list", session_file(b'{"ticket_id": "t-9310", "awaiting": ["q"]}'),
        SessionFileError, "awaiting"),
    row("session-null", session_file(b"null"), SessionFileError, "is not a valid session"),
    row("session-cp1252-bytes", session_file('{"ticket_id": "t-9310", "facts": {"name": "Müller"}}'.encode("cp1252")),
        SessionFileError, "session.json"),
    row("session-pause-unloadable-state",
        pausing_over_a_paused_session(lambda: SessionState("t-9310", {"seats": 40}), "approve?"),
        ValueError, "facts.seats"),
    row("session-pause-question-none", pausing_over_a_paused_session(lambda: SessionState("t-9310"), None),
        ValueError, "waiting for"),

    # -- temporal writer: TemporalMemory.write / apply
    row("temporal-at-2026-1-5", temporal(_write_event(at="2026-1-5")), "rejected", "malformed: at: '2026-1-5'"),
    row("temporal-valid-from-feb-29-2026", temporal(_write_event(fact__valid_from="2026-02-29")),
        "rejected", "fact.valid_from: '2026-02-29' is not a real calendar date"),
    row("temporal-valid-from-leading-space", temporal(_write_event(fact__valid_from=" 2026-01-10")),
        "rejected", "fact.valid_from"),
    row("temporal-confidence-bool", temporal(_write_event(fact__confidence=True)), "rejected", "fact.confidence"),
    row("temporal-actor-user-int", temporal(_write_event(actor__user=7)), "rejected", "actor.user"),
    row("temporal-missing-fact", temporal(_write_event(fact=_DELETE)), "rejected", "fact: Field required"),
    row("temporal-extra-fact-field", temporal(_write_event(fact__email="ada@example.com")),
        "rejected", "fact.email: unknown field"),
    row("temporal-extra-event-field", temporal(_write_event(priority="high")), "rejected", "priority: unknown field"),
    row("temporal-value-201-chars", temporal(_write_event(fact__value="P" * 201)), "rejected", "fact.value"),
    row("temporal-event-none", temporal(None), "rejected", "malformed: input"),
    row("temporal-apply-none", temporal(None, "apply"), ValueError, "action"),
    row("temporal-apply-action-list", temporal({"action": ["write"]}, "apply"), ValueError, "action"),

    # -- temporal CLI: python -m lab_utils.temporal with a malformed scenario or config file
    row("cli-extra-field", cli_scenario(lambda s: s["events"][1]["fact"].update(email="ada@example.com")),
        "exit 2", "future-move.json: event 2, field fact.email: unknown field"),
    row("cli-missing-field", cli_scenario(lambda s: s["events"][2].pop("as_of")),
        "exit 2", "future-move.json: event 3, field as_of: Field required"),
    row("cli-wrong-type", cli_scenario(lambda s: s["events"][0].update(should_retain="yes")),
        "exit 2", "future-move.json: event 1, field should_retain"),
    row("cli-month-13", cli_scenario(lambda s: s["events"][3].update(as_of="2026-13-01")),
        "exit 2", "future-move.json: event 4, field as_of: '2026-13-01'"),
    row("cli-scenario-in-utf16", cli_scenario('{"id": "future-move"}'.encode("utf-16")),
        "exit 2", "future-move.json: cannot read a JSON scenario"),
    row("cli-config-not-utf8", cli_config_file('{"top_k": 3, "note": "Müller"}'.encode("cp1252")),
        "exit 2", "final.json"),

    # -- proposer: validate(answer), a refusing model in a study, the registry
    row("proposer-bare-list", proposing("[]"), Rejected, "does not fit the decision form"),
    row("proposer-action-apply", proposing(json.dumps(_decision({"time_aware": True}, action="apply"))),
        Rejected, "action: Input should be 'propose' or 'stop'"),
    row("proposer-setting-case-variant", proposing(json.dumps(_decision({"time_aware": True, "Top_K": 5}))),
        Rejected, "'Top_K': not one of the five settings"),
    row("proposer-nested-permission", proposing(json.dumps(_decision(
        {"time_aware": True, "evaluator": {"owner_isolation": False}}))),
        Rejected, "'evaluator': not one of the five settings"),
    row("proposer-nan-threshold", proposing(json.dumps(_decision({"min_confidence": float("nan")}))),
        Rejected, "out of bounds: min_confidence"),
    row("proposer-step-as-text", proposing(json.dumps(_decision(
        {"time_aware": True}, observations=[{"scenario_id": "future-move", "step": "3", "seen": "x"}]))),
        Rejected, "observations[0].step"),
    row("proposer-refusal-in-a-study", studying_with_a_refusing_model, "rejected",
        "stop_reason=refusal; the answer does not fit the decision form", new_files=True),
    row("proposer-approve-unknown-candidate", on_a_registry(lambda p: approve(p, 1, "agent-07", "ada")),
        ValueError, "no evaluated candidate 'agent-07'"),
    row("proposer-verify-non-utf8-byte", on_a_registry(_verified, _second_line_byte_replaced),
        "broken", "broken at line 2"),

    # -- reflection: run records, the reflection answer, skill and memo files
    row("runs-epoch-start", runs_file(_run(started_at=1772442000)), RunRecordError, "runs.jsonl line 2: started_at"),
    row("runs-missing-messages", runs_file(_run(messages=_DELETE)), RunRecordError,
        "runs.jsonl line 2: messages: Field required"),
    row("runs-null-line", runs_file("null"), RunRecordError, "runs.jsonl line 2: input"),
    row("runs-cp1252-bytes", runs_file(_run(agent="Müller").encode("cp1252")), RunRecordError, "runs.jsonl"),
    row("reflect-memo-part-unknown", reflecting({"summary": "s", "actions": [
        {"action": "update_memo", "part": "secrets", "lines": [RULE]}]}),
        "rejected", "schema: actions[0].update_memo.part"),
    row("reflect-summary-missing", reflecting({"actions": [{"action": "nothing_to_save", "reason": "r"}]}),
        "rejected", "schema: summary: Field required"),
    row("reflect-playbook-fails-lint", reflecting({"summary": "s", "actions": [
        {"action": "update_memo", "part": "playbooks",
         "lines": ["Maybe check the status filter when exports are empty."]}]}),
        "rejected", "vague wording 'Maybe'"),
    row("reflect-patch-rule-is-a-description", reflecting({"summary": "s", "actions": [
        {"action": "patch_skill", "name": "existing", "add_rules": ["The user seems to prefer CSV."],
         "remove_rules": []}]}),
        "rejected", "not an executable imperative"),
    row("reflect-hand-broken-memo", reflecting({"summary": "s", "actions": [
        {"action": "update_memo", "part": "playbooks", "lines": [RULE]}]}, memo_text="stray line\n"),
        "rejected", "memo.md line 1"),
    row("reflect-broken-other-skill", reflecting({"summary": "s", "actions": [
        {"action": "patch_skill", "name": "existing", "add_rules": [RULE], "remove_rules": []},
        {"action": "create_skill", "name": "empty-export", "description": "d", "rules": [RULE]}]},
        broken_skill='---\nname: "broken"\n---\n'),
        "rejected", "broken.md: broken front matter"),
    row("skill-key-twice", skill_file(skill_text(FRONT + 'name: "t"\n')), SkillFileError,
        "s.md: broken front matter: line 8: name is given twice"),
    row("skill-naive-created-at", skill_file(skill_text(FRONT.replace('12:00:00Z"\nupdated', '12:00:00"\nupdated'))),
        SkillFileError, "s.md: broken front matter: createdAt"),
    row("skill-unknown-key", skill_file(skill_text(FRONT + 'tags: "export"\n')), SkillFileError,
        "s.md: broken front matter: tags: unknown field"),
    row("skill-bom", skill_file("\ufeff" + skill_text()), SkillFileError,
        "s.md: broken front matter: the file must start"),
    row("skill-cp1252-bytes", skill_file(skill_text(FRONT.replace('"d"', '"Müller"')).encode("cp1252")),
        SkillFileError, "s.md"),
    row("memo-part-over-the-cap", memo_file("## Playbooks for this user and domain\n" + f"- {RULE}\n" * 8),
        MemoFileError, "memo.md: playbooks: "),
]


def _files(folder: Path) -> dict[str, bytes]:
    """Every stored file with its bytes; a store's empty .lock side file holds no data."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix != ".lock"}


@pytest.mark.parametrize("case", ROWS)
def test_hostile_input_is_named_and_nothing_stored_is_lost(tmp_path, case: Row):
    call, state = case.setup(tmp_path)
    files, before = _files(tmp_path), state()
    if isinstance(case.expect, type):
        with pytest.raises(case.expect) as raised:
            call()
        status, message = type(raised.value).__name__, str(raised.value)
    else:
        status, message = call()
        assert status == case.expect, message
    assert case.fragment in message, f"{status}: {message[:500]}"

    after_files, after = _files(tmp_path), state()
    if case.expect == ACCEPTED:  # only additions: old bytes and old state are prefixes
        assert all(after_files.get(name, b"")[:len(old)] == old for name, old in files.items())
        assert after[:len(before)] == before
    else:
        assert after == before
        kept = {name: after_files.get(name) for name in files}
        assert kept == files, "a refused input changed or removed a stored file"
        if not case.new_files:
            assert after_files.keys() == files.keys(), "a refused input wrote a new file"
