"""Lesson 07, the expensive half of the slow loop: the rule lint, skill files, the self-memo,
and the reflection call with everything that must not write a file when it fails."""

from __future__ import annotations

import datetime as dt
import json
import os

import anthropic
import pytest
from pydantic import ValidationError

from lab_utils import llm
from lab_utils.reflection import (RUNS_DIR, SelfMemo, SkillError, SkillFileError, SkillStore, build_packet,
                                  lint_rule, load_memo, load_runs, new_skill, save_memo, system_prompt)
from lab_utils.reflection.loop import simulate
from lab_utils.reflection.reflect import SCHEMA, Reflection, Reflector, build_request, reflect
from lab_utils.files import atomic_write_text
from lab_utils.reflection.memo import MEMO_PART_CHARS, MemoFileError
import live_server
from live_server import LAYER_FAILURES, fail_live_calls

UTC = dt.timezone.utc
T = [dt.datetime(2026, 3, day, 12, tzinfo=UTC) for day in range(1, 16)]  # T[d] is March d+1


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.delenv("LAB_LIVE", raising=False)


def snapshot(folder) -> dict[str, bytes]:
    """Every file under `folder`, with its bytes: 'nothing changed' means equal snapshots."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the rule lint -----------------------------------------------------------------------

@pytest.mark.parametrize("rule", [
    "When answering a family-office question, never exceed 5 bullet points.",
    "When answering in the family-office context, always give the bottom line first, then the reasons.",
    "When the status filter excludes every row, then send the kb-101 reset steps.",
    "Always pass the amount as integer cents when calling issue_refund.",
    "Never promise a refund date before the approval arrives.",
    "If a refund exceeds USD 500, do not call issue_refund without an approval id.",
])
def test_executable_imperatives_with_a_concrete_trigger_pass(rule):
    assert lint_rule(rule) == []


@pytest.mark.parametrize("rule, problem", [
    ("Agent output is sometimes too verbose; be careful.", "vague wording 'sometimes'"),
    ("The user seems to prefer concise output.", "not an executable imperative"),
    ("Always be careful.", "vague wording 'careful'"),
    ("Check the status filter.", "not an executable imperative"),
    ("When a customer reports an empty export, check the filter.", "not an executable imperative"),
    ("When needed, always double-check the filters.", "trigger too vague"),
    ("When exporting, always check the filters.", "trigger too vague"),
    ("When a customer reports an empty export, always try to check the filter.", "vague wording 'try to'"),
])
def test_descriptions_and_vague_rules_are_rejected(rule, problem):
    assert any(problem in p for p in lint_rule(rule))


# -- skills ------------------------------------------------------------------------------

def test_a_skill_file_round_trips_with_its_front_matter(tmp_path):
    store = SkillStore(tmp_path)
    skill = new_skill("weekly-report", "Compile the weekly report", ["When it is Monday, always send it."], T[0])
    store.save(skill)
    text = store.path("weekly-report").read_text(encoding="utf-8")
    assert text.startswith('---\nname: "weekly-report"\ndescription: "Compile the weekly report"\n'
                           'createdAt: "2026-03-01T12:00:00Z"\nupdatedAt: "2026-03-01T12:00:00Z"\n'
                           'patchCount: 0\nlastUsedAt: null\n---\n\n## Rules\n- When it is Monday')
    assert store.load("weekly-report") == skill


def test_a_patch_bumps_the_count_and_updated_at_and_edits_only_the_rules_named(tmp_path):
    store = SkillStore(tmp_path)
    store.save(new_skill("s", "d", ["When a, always b.", "When c, always d."], T[0]))
    store.save(store.load("s").patched(T[1], add=["When e, always f."]))
    store.save(store.load("s").patched(T[2], add=["When g, always h."], remove=["When a, always b."]))
    skill = store.load("s")
    assert (skill.meta.patchCount, skill.meta.updatedAt, skill.meta.createdAt) == (2, T[2], T[0])
    assert skill.rules == ["When c, always d.", "When e, always f.", "When g, always h."]
    with pytest.raises(SkillError, match="has no rule"):
        skill.patched(T[3], remove=["When x, always y."])
    with pytest.raises(SkillError, match="already has rule"):
        skill.patched(T[3], add=["When c, always d."])


def test_reading_a_skill_refreshes_last_used_at_only(tmp_path):
    store = SkillStore(tmp_path)
    store.save(new_skill("s", "d", ["When a, always b."], T[0]))
    store.read("s", T[4])
    meta = store.load("s").meta
    assert (meta.lastUsedAt, meta.updatedAt, meta.patchCount) == (T[4], T[0], 0)


def test_eviction_takes_never_used_skills_first_then_the_least_recently_used(tmp_path):
    store = SkillStore(tmp_path, cap=4)
    for day, name in enumerate(["used-late", "never-old", "never-new", "used-early"]):
        store.save(new_skill(name, "d", ["When a, always b."], T[day]))
    store.read("used-late", T[9])
    store.read("used-early", T[8])
    assert store.eviction_order() == ["never-old", "never-new", "used-early", "used-late"]
    assert store.save(new_skill("e1", "d", ["When a, always b."], T[10])) == ["never-old"]
    assert store.save(new_skill("e2", "d", ["When a, always b."], T[11])) == ["never-new"]
    store.read("e1", T[12])
    store.read("e2", T[12])
    assert store.save(new_skill("e3", "d", ["When a, always b."], T[13])) == ["used-early"]
    assert len(store) == 4 and store.save(store.load("e3").patched(T[14], add=["When c, always d."])) == []


@pytest.mark.parametrize("broken, problem", [
    ("patchCount: 2\n", "the file must start"),
    ('---\nname: "s"\npatchCount: two\n---\n', "line 3: the value of patchCount"),
    ('---\nname: "s"\n', "no closing"),
    ('---\nname "s"\n---\n', "line 2: expected 'key: value'"),
])
def test_broken_front_matter_is_reported_naming_the_file(tmp_path, broken, problem):
    store = SkillStore(tmp_path)
    store.path("s").write_text(broken, encoding="utf-8")
    with pytest.raises(SkillFileError, match=problem) as error:
        store.load("s")
    assert str(store.path("s")) in str(error.value)


def test_a_hand_edited_skill_with_a_wrong_field_is_reported_and_never_overwritten(tmp_path):
    store = SkillStore(tmp_path, cap=1)
    store.save(new_skill("s", "d", ["When a, always b."], T[0]))
    path = store.path("s")
    path.write_text(path.read_text(encoding="utf-8").replace("patchCount: 0", "patchCount: -1"), encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(SkillFileError, match=r"s\.md: broken front matter: patchCount"):
        store.read("s", T[1])
    with pytest.raises(SkillFileError):  # eviction reads every file before deleting any
        store.save(new_skill("t", "d", ["When a, always b."], T[1]))
    assert snapshot(tmp_path) == before


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "f.md"
    atomic_write_text(path, "old")
    def fail(*args):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        atomic_write_text(path, "new")
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"] and path.read_text() == "old"


# -- the self-memo -----------------------------------------------------------------------

def test_the_memo_round_trips_is_capped_and_goes_into_the_system_prompt(tmp_path):
    memo = SelfMemo(strengths_and_trips=["I trip on ids."], playbooks=["When C-4471 writes, always check filters."])
    save_memo(tmp_path / "m.md", memo)
    assert load_memo(tmp_path / "m.md") == memo and load_memo(tmp_path / "none.md") == SelfMemo()
    with pytest.raises(ValidationError, match="over the cap"):
        memo.updated("playbooks", ["x" * (MEMO_PART_CHARS + 1)])
    skill = new_skill("s", "When an export is empty", ["When a, always b."], T[0])
    prompt = system_prompt("You are a support agent.", memo, [skill])
    assert "## What I am good at, where I trip\n- I trip on ids." in prompt
    assert "## Playbooks for this user and domain\n- When C-4471" in prompt
    assert "- s: When an export is empty" in prompt


def test_a_broken_memo_file_is_reported_naming_file_and_line(tmp_path):
    (tmp_path / "m.md").write_text("## Playbooks for this user and domain\n- ok\nstray text\n", encoding="utf-8")
    with pytest.raises(MemoFileError, match=r"m\.md line 3"):
        load_memo(tmp_path / "m.md")


# -- the reflection call -----------------------------------------------------------------

def test_the_schema_comes_from_the_pydantic_model_and_the_request_uses_it():
    assert SCHEMA["additionalProperties"] is False and set(SCHEMA["required"]) == {"summary", "actions"}
    actions = {d["properties"]["action"]["const"] for d in SCHEMA["$defs"].values() if "action" in d["properties"]}
    assert actions == {"create_skill", "patch_skill", "update_memo", "nothing_to_save"}
    request = build_request("a", build_packet([]), SelfMemo(), [])
    assert request["model"] == llm.MODEL
    assert request["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}


@pytest.fixture
def demo_request():
    return build_request("support-en", build_packet(load_runs(RUNS_DIR / "t-9310.jsonl")), SelfMemo(), [])


def answer(tmp_path, request, text: str, stop_reason: str = "end_turn", **extra) -> anthropic.Anthropic:
    """A replay client whose only stored answer to `request` is `text`."""
    response = {"id": "msg_test", "type": "message", "role": "assistant", "model": request["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
                "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}, **extra}
    folder = tmp_path / "responses"
    folder.mkdir(exist_ok=True)
    llm.store_answer(request, response, "authored", folder / "test.json")
    return llm.make_client(responses_dir=folder)


@pytest.fixture
def work(tmp_path):
    """A store with one skill and a memo, to show that failures leave both as they were."""
    store = SkillStore(tmp_path / "work" / "skills")
    store.save(new_skill("existing", "d", ["When a, always b."], T[0]))
    save_memo(tmp_path / "work" / "memo.md", SelfMemo(strengths_and_trips=["I trip on ids."]))
    return store, tmp_path / "work" / "memo.md"


def run_reflection(tmp_path, request, work, text, **kwargs):
    store, memo_path = work
    before = snapshot(tmp_path / "work")
    outcome = reflect(answer(tmp_path, request, text, **kwargs), request, store, memo_path, T[5])
    return outcome, before == snapshot(tmp_path / "work")


GOOD_RULE = "When a customer reports an empty export, always check the status filter first."


@pytest.mark.parametrize("reply, problem", [
    ("this is not JSON", "schema: input: Invalid JSON"),
    (json.dumps({"summary": "s", "actions": [{"action": "create_skill", "name": "Bad Name", "description": "d",
                                              "rules": [GOOD_RULE]}]}), "schema: actions[0].create_skill.name"),
    (json.dumps({"summary": "s", "actions": []}), "schema: actions"),
    (json.dumps({"summary": "s", "actions": [{"action": "delete_everything"}]}), "schema: actions[0]"),
    (json.dumps({"summary": "s", "actions": [
        {"action": "create_skill", "name": "new", "description": "d", "rules": [GOOD_RULE]},
        {"action": "create_skill", "name": "vague", "description": "d", "rules": ["Be careful with exports."]}]}),
     "rule 'Be careful with exports.'"),
    (json.dumps({"summary": "s", "actions": [{"action": "nothing_to_save", "reason": "r"},
                                             {"action": "update_memo", "part": "playbooks", "lines": [GOOD_RULE]}]}),
     "nothing_to_save must be the only action"),
    (json.dumps({"summary": "s", "actions": [
        {"action": "patch_skill", "name": "existing", "add_rules": [GOOD_RULE], "remove_rules": []},
        {"action": "patch_skill", "name": "existing", "add_rules": [], "remove_rules": ["When a, always b."]}]}),
     "existing is changed by more than one action"),
    (json.dumps({"summary": "s", "actions": [{"action": "create_skill", "name": "existing", "description": "d",
                                              "rules": [GOOD_RULE]}]}), "exists already"),
    (json.dumps({"summary": "s", "actions": [{"action": "patch_skill", "name": "ghost", "add_rules": [GOOD_RULE],
                                              "remove_rules": []}]}), "no skill 'ghost'"),
    (json.dumps({"summary": "s", "actions": [{"action": "update_memo", "part": "strengths_and_trips",
                                              "lines": ["x" * 700]}]}), "over the cap"),
])
def test_a_failing_answer_is_reported_and_changes_no_file(tmp_path, demo_request, work, reply, problem):
    outcome, unchanged = run_reflection(tmp_path, demo_request, work, reply)
    assert outcome.status == "rejected" and problem in outcome.summary()
    assert unchanged


def test_a_refusal_and_a_cut_answer_change_no_file(tmp_path, demo_request, work):
    outcome, unchanged = run_reflection(tmp_path, demo_request, work, "", stop_reason="refusal",
                                        stop_details={"type": "refusal", "category": None, "explanation": "no"})
    assert (outcome.status, outcome.summary(), unchanged) == ("refused", "the model refused: no", True)
    outcome, unchanged = run_reflection(tmp_path, demo_request, work, '{"summary": "', stop_reason="max_tokens")
    assert outcome.status == "rejected" and "max_tokens" in outcome.summary() and unchanged


def test_a_request_without_a_stored_answer_stops_with_how_to_go_live_and_changes_no_file(
        tmp_path, demo_request, work):
    store, memo_path = work
    before = snapshot(tmp_path / "work")
    with pytest.raises(llm.NoStoredAnswer, match="LAB_LIVE=1"):  # not an "error" outcome the loop would skip
        reflect(llm.make_client(responses_dir=tmp_path), demo_request, store, memo_path, T[5])
    assert snapshot(tmp_path / "work") == before


@pytest.mark.parametrize("how", LAYER_FAILURES)
def test_a_failure_of_the_model_layer_stops_the_reflection_with_its_message_and_changes_no_file(
        server, monkeypatch, tmp_path, demo_request, work, how):
    fail_live_calls(how, server, monkeypatch)
    with pytest.raises(anthropic.AnthropicError) as direct:  # the same call made outside a reflection
        llm.make_client(timeout=0.5).messages.create(**demo_request)
    store, memo_path = work
    before = snapshot(tmp_path / "work")
    with pytest.raises(type(direct.value)) as failed:  # not an outcome the loop would write down and pass
        reflect(llm.make_client(timeout=0.5), demo_request, store, memo_path, T[5])
    assert str(failed.value) == str(direct.value) and "\n" not in str(failed.value), "the layer's own one line"
    assert snapshot(tmp_path / "work") == before


def test_a_patch_of_a_hand_broken_skill_is_rejected_and_the_file_kept(tmp_path, demo_request, work):
    store, _ = work
    store.path("existing").write_text("---\nname: existing\n---\n", encoding="utf-8")
    reply = json.dumps({"summary": "s", "actions": [
        {"action": "patch_skill", "name": "existing", "add_rules": [GOOD_RULE], "remove_rules": []}]})
    outcome, unchanged = run_reflection(tmp_path, demo_request, work, reply)
    assert outcome.status == "rejected" and "existing.md: broken front matter" in outcome.summary()
    assert unchanged


def test_a_good_answer_writes_skills_and_memo(tmp_path, demo_request, work):
    reply = json.dumps({"summary": "s", "actions": [
        {"action": "create_skill", "name": "empty-export", "description": "d", "rules": [GOOD_RULE]},
        {"action": "patch_skill", "name": "existing", "add_rules": [GOOD_RULE], "remove_rules": ["When a, always b."]},
        {"action": "update_memo", "part": "playbooks", "lines": [GOOD_RULE]}]})
    outcome, unchanged = run_reflection(tmp_path, demo_request, work, reply)
    store, memo_path = work
    assert outcome.status == "applied" and not unchanged
    assert store.names() == ["empty-export", "existing"]
    assert store.load("existing").rules == [GOOD_RULE] and store.load("existing").meta.patchCount == 1
    assert load_memo(memo_path) == SelfMemo(strengths_and_trips=["I trip on ids."], playbooks=[GOOD_RULE])


# -- replaying the stored answers (data/responses/reflection.json) -------------------------

def test_replay_of_a_stored_reflection_returns_the_sdks_message(tmp_path):
    runs = [r for r in load_runs() if r.run_id == "en-01"]
    request = Reflector(llm.make_client(), tmp_path).request("support-en", runs)
    message = llm.make_client().messages.create(**request)
    assert isinstance(message, anthropic.types.Message) and message.stop_reason == "end_turn"
    assert Reflection.model_validate_json(llm.text_of(message)).actions[0].name == "empty-export-status-filter"
    assert llm.stored_answers()[llm.request_key(request)]["provenance"] == "authored"


def test_the_lint_demo_is_rejected_and_writes_nothing(tmp_path):
    reflector = Reflector(llm.make_client(), tmp_path)
    outcome = reflector("support-en", load_runs(RUNS_DIR / "t-9310.jsonl"), T[12])
    assert outcome.status == "rejected" and "vague wording 'sometimes'" in outcome.summary()
    assert reflector.skills("support-en").names() == [] and not reflector.memo_path("support-en").exists()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    reflector = Reflector(llm.make_client(), root)
    runs = load_runs()
    return runs, simulate(runs, reflect=reflector), reflector


def test_the_two_week_simulation_replays_every_reflection_from_stored_answers(replayed):
    _, timeline, reflector = replayed
    done = [(d.at.strftime("%m-%d %H"), d.agent, d.outcome) for d in timeline if d.reflect]
    assert len(done) == 11 and {o for *_, o in done} == {"applied", "nothing_to_save"}
    assert ("03-04 12", "support-zh", "nothing_to_save") in done
    skills = {agent: reflector.skills(agent).names() for agent in ("support-en", "support-zh", "billing-ops", "reports")}
    assert skills == {"support-en": ["customer-id-prefix", "empty-export-status-filter", "invoice-copy-period"],
                      "support-zh": ["invoice-currency-cny"], "billing-ops": ["refund-amount-cents"],
                      "reports": ["report-date-range", "weekly-report-order"]}
    assert reflector.skills("billing-ops").load("refund-amount-cents").meta.patchCount == 2
    assert "order 5550" in load_memo(reflector.memo_path("billing-ops")).render()


def test_the_runs_show_exactly_the_skills_the_replayed_loop_had_written(replayed):
    runs, _, reflector = replayed
    created = {(agent, s.name): s.meta.createdAt for agent in {r.agent for r in runs}
               for s in reflector.skills(agent).all()}
    for run in runs:
        existing = sorted(name for (agent, name), at in created.items() if agent == run.agent and at <= run.started_at)
        assert sorted(run.skills_shown) == existing, run.run_id


def test_a_read_of_a_skill_the_store_does_not_hold_refreshes_nothing(tmp_path):
    root = tmp_path / "work"
    SkillStore(root / "skills" / "a").save(new_skill("existing", "d", ["When a, always b."], T[0]))
    [run] = load_runs(RUNS_DIR / "t-9310.jsonl")
    run = run.model_copy(update={"agent": "a", "skills_read": ["ghost", "existing"]})
    request = Reflector(llm.make_client(), root).request("a", [run])
    reply = json.dumps({"summary": "s", "actions": [{"action": "nothing_to_save", "reason": "r"}]})
    reflector = Reflector(answer(tmp_path, request, reply), root)
    assert reflector("a", [run], T[12]).status == "nothing_to_save"
    assert reflector.skills("a").names() == ["existing"]
    assert reflector.skills("a").load("existing").meta.lastUsedAt == run.ended_at


def test_the_fortnight_runs_live_to_its_end_when_the_model_names_no_skill_as_the_stored_answers_do(
        server, monkeypatch, tmp_path):
    """The recorded runs read the stored answers' skills; a live loop that wrote none of them still runs."""
    monkeypatch.setattr(live_server, "reply", lambda body: llm.authored_message(body, json.dumps(
        {"summary": "s", "actions": [{"action": "nothing_to_save", "reason": "r"}]})))
    reflector = Reflector(llm.make_client(), tmp_path)
    timeline = simulate(load_runs(), reflect=reflector)
    assert [d.outcome for d in timeline if d.reflect] == ["nothing_to_save"] * 11
    assert len(server.requests) == 11 and not list(tmp_path.glob("skills/*/*.md"))
