"""The reflection: one structured-output call, and code that checks the answer before any write.

The model reads the packet with the current self-memo and skills, and answers in the
schema of `Reflection`: create a skill, patch one, rewrite a part of the memo, or say
there is nothing to save. The prompt asks for executable rules; the code enforces them.
A schema failure, a lint failure or a refusal is reported in the Outcome and changes no
file: every change is prepared in memory first and written only when the whole answer has
passed. A failure of the model layer itself (no server, a refused key, the spending cap, a
rate limit...) is no answer at all: its error stops the reflection, and no file is touched.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import anthropic
from anthropic.types import Message
from pydantic import Field, ValidationError

from lab_utils.llm import MODEL, text_of
from lab_utils.paths import work_dir
from lab_utils.reflection.lint import lint_rule
from lab_utils.reflection.memo import MEMO_PART_CHARS, MemoFileError, MemoPart, SelfMemo, load_memo, save_memo
from lab_utils.reflection.packet import MAX_CONVERSATIONS, TOKEN_CAP, Packet, build_packet
from lab_utils.errors import describe
from lab_utils.reflection.records import RunRecord, Strict
from lab_utils.reflection.skills import SKILL_CAP, SKILL_NAME, Skill, SkillError, SkillStore, new_skill

MAX_TOKENS = 1500


class CreateSkill(Strict):
    action: Literal["create_skill"]
    name: str = Field(pattern=SKILL_NAME, description="kebab-case, e.g. refund-amount-cents")
    description: str = Field(min_length=1, description="one line saying when to open this skill")
    rules: list[str] = Field(min_length=1)


class PatchSkill(Strict):
    action: Literal["patch_skill"]
    name: str
    add_rules: list[str]
    remove_rules: list[str] = Field(description="the exact text of rules to remove")


class UpdateMemo(Strict):
    action: Literal["update_memo"]
    part: MemoPart
    lines: list[str] = Field(description=f"the whole new part, at most {MEMO_PART_CHARS} characters in all")


class NothingToSave(Strict):
    action: Literal["nothing_to_save"]
    reason: str


Action = Annotated[CreateSkill | PatchSkill | UpdateMemo | NothingToSave, Field(discriminator="action")]


class Reflection(Strict):
    summary: str = Field(description="what happened in this activity, in two sentences at most")
    actions: list[Action] = Field(min_length=1)


SCHEMA = anthropic.transform_schema(Reflection)

SYSTEM = f"""\
You review the recent work of a support agent and keep only what will change its next runs.
You get the agent's self-memo, its skills and its activity since the last review.
Answer in the JSON schema with one or more actions:
- create_skill: a new skill: a kebab-case name, a one-line description saying when to open it, its rules.
- patch_skill: add rules to an existing skill, or remove rules by their exact text. Prefer a patch to a new skill.
- update_memo: rewrite one part of the self-memo in full: "strengths_and_trips" (what the agent
  is good at, where it trips) or "playbooks" (what works for this user and this domain).
  At most {MEMO_PART_CHARS} characters a part.
- nothing_to_save: nothing here is worth keeping. It must be the only action. Saving nothing beats saving noise.
Every rule and every playbook line is an executable imperative with a concrete trigger:
"When <situation>, always|never|then <action>." or "Always|Never <action> when <situation>."
Not "be careful", not "the user seems to prefer ...": a note the agent cannot act on is noise.
Timeouts, dropped connections and rate limits are the environment, not the agent: never record
them as a weakness and never change a skill because of them.
A phrase like "actually" or "重新" is a hint of a correction, not proof: read the conversation."""


def build_request(agent: str, packet: Packet, memo: SelfMemo, skills: list[Skill],
                  model: str = MODEL) -> dict:
    """The exact Messages request body; stored answers are found by it."""
    known = "".join(f"## {skill.name}: {skill.meta.description}\n"
                    + "".join(f"- {rule}\n" for rule in skill.rules) for skill in skills) or "(none)\n"
    user = (f"Agent: {agent}\n\n# Self-memo now\n{memo.render()}\n"
            f"# Skills now\n{known}\n"
            f"# Activity since the last reflection ({len(packet.items)} items, oldest first; "
            f"{packet.dropped} older items left out for the token cap)\n{packet.render()}\n\n"
            "Reflect on this activity and answer in the schema.")
    return {
        "model": model,
        "max_tokens": MAX_TOKENS,
        "system": SYSTEM,
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        "messages": [{"role": "user", "content": user}],
    }


@dataclass(frozen=True)
class Outcome:
    status: Literal["applied", "nothing_to_save", "rejected", "refused"]
    changes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    reflection: Reflection | None = None
    message: Message | None = None

    def summary(self) -> str:
        return "; ".join(self.problems or self.changes)


@dataclass(frozen=True)
class Plan:
    """The files an answer would write, prepared without writing anything."""

    skills: list[Skill]
    memo: SelfMemo | None  # None: the memo stays as it is
    changes: list[str]
    problems: list[str]


def _lint(rules: list[str]) -> list[str]:
    return [f"rule {rule!r}: {'; '.join(issues)}" for rule in rules if (issues := lint_rule(rule))]


def plan(reflection: Reflection, store: SkillStore, memo: SelfMemo, now: dt.datetime) -> Plan:
    """Check a schema-valid answer against the rules and the current files; prepare its writes."""
    actions = reflection.actions
    problems: list[str] = []
    if len(actions) > 1 and any(isinstance(a, NothingToSave) for a in actions):
        problems.append("nothing_to_save must be the only action")
    targets = [a.name for a in actions if isinstance(a, CreateSkill | PatchSkill)]
    targets += [f"memo part {a.part}" for a in actions if isinstance(a, UpdateMemo)]
    problems += [f"{t} is changed by more than one action" for t in sorted(set(targets)) if targets.count(t) > 1]
    skills: list[Skill] = []
    changes: list[str] = []
    new_memo = None
    for action in actions:
        match action:
            case CreateSkill(name=name):
                problems += _lint(action.rules)
                if name in store:
                    problems.append(f"skill {name} exists already: patch it instead")
                else:
                    skills.append(new_skill(name, action.description, action.rules, now))
                    changes.append(f"created skill {name}")
            case PatchSkill(name=name):
                problems += _lint(action.add_rules)
                try:
                    skills.append(store.load(name).patched(now, action.add_rules, action.remove_rules))
                    changes.append(f"patched skill {name} (+{len(action.add_rules)} "
                                   f"-{len(action.remove_rules)} rules)")
                except SkillError as error:  # missing skill or rule, or a hand-broken file
                    problems.append(str(error))
            case UpdateMemo(part=part):
                if part == "playbooks":
                    problems += _lint(action.lines)
                try:
                    new_memo = (new_memo or memo).updated(part, action.lines)
                    changes.append(f"rewrote memo part {part}")
                except ValidationError as error:
                    problems.append(f"memo part {part}: {describe(error)}")
            case NothingToSave(reason=reason):
                changes.append(f"nothing to save: {reason}")
    if any(isinstance(a, CreateSkill) for a in actions):
        # Saving a new skill may evict one, which parses every skill file: a broken file must
        # stop the answer here, before any write, not in store.save() after a patch is saved.
        try:
            store.eviction_order()
        except SkillError as error:
            problems.append(str(error))
    return Plan(skills, new_memo, changes, problems)


def reflect(client: anthropic.Anthropic, request: dict, store: SkillStore, memo_path: Path,
            now: dt.datetime) -> Outcome:
    """Send the request, check the answer, and apply it only if all of it passes."""
    message = client.messages.create(**request)
    if message.stop_reason == "refusal":
        why = message.stop_details.explanation if message.stop_details else None
        return Outcome("refused", problems=(f"the model refused: {why or 'no reason given'}",), message=message)
    if message.stop_reason == "max_tokens":
        return Outcome("rejected", problems=(f"the answer was cut at max_tokens={request['max_tokens']}",),
                       message=message)
    try:
        reflection = Reflection.model_validate_json(text_of(message))
    except ValidationError as error:
        return Outcome("rejected", problems=(f"schema: {describe(error)}",), message=message)
    try:
        prepared = plan(reflection, store, load_memo(memo_path), now)
    except (SkillError, MemoFileError) as error:  # a hand-edited file is broken: touch nothing
        return Outcome("rejected", problems=(str(error),), reflection=reflection, message=message)
    if prepared.problems:
        return Outcome("rejected", problems=tuple(prepared.problems), reflection=reflection, message=message)
    changes = list(prepared.changes)
    for skill in prepared.skills:
        changes += [f"evicted skill {name}" for name in store.save(skill)]
    if prepared.memo is not None:
        save_memo(memo_path, prepared.memo)
    status = "nothing_to_save" if isinstance(reflection.actions[0], NothingToSave) else "applied"
    return Outcome(status, tuple(changes), reflection=reflection, message=message)


class Reflector:
    """The reflection step of the slow loop, for `simulate(runs, reflect=Reflector(client))`.

    Skills live in <root>/skills/<agent>/, memos in <root>/memo/<agent>.md; root defaults to
    the work folder. Replaying stored answers needs the state they were made from: start a
    simulation from an empty root.
    """

    def __init__(self, client: anthropic.Anthropic, root: Path | None = None, *,
                 max_conversations: int = MAX_CONVERSATIONS, token_cap: int = TOKEN_CAP,
                 skill_cap: int = SKILL_CAP) -> None:
        self.client = client
        self.root = Path(root) if root is not None else work_dir()
        self.max_conversations = max_conversations
        self.token_cap = token_cap
        self.skill_cap = skill_cap
        self.history: list[tuple[str, dt.datetime, Outcome]] = []

    def skills(self, agent: str) -> SkillStore:
        return SkillStore(self.root / "skills" / agent, self.skill_cap)

    def memo_path(self, agent: str) -> Path:
        folder = self.root / "memo"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{agent}.md"

    def request(self, agent: str, runs: list[RunRecord]) -> dict:
        packet = build_packet(runs, max_conversations=self.max_conversations, token_cap=self.token_cap)
        return build_request(agent, packet, load_memo(self.memo_path(agent)), self.skills(agent).all())

    def __call__(self, agent: str, runs: list[RunRecord], now: dt.datetime) -> Outcome:
        store = self.skills(agent)
        # The runs' skill reads happened before this cycle: record them first, so that
        # lastUsedAt is right before a new skill evicts anything. A recorded run may have read a
        # skill this loop never wrote (live, the model names its skills its own way): that read
        # refreshes nothing.
        for run in runs:
            for name in run.skills_read:
                if name in store:
                    store.read(name, run.ended_at)
        outcome = reflect(self.client, self.request(agent, runs), store, self.memo_path(agent), now)
        self.history.append((agent, now, outcome))
        return outcome
