"""Skills: one Markdown file per skill, with front matter, in the agent's work folder.

    ---
    name: "refund-amount-cents"
    description: "Issuing refunds through issue_refund"
    createdAt: "2026-03-02T12:00:00Z"
    updatedAt: "2026-03-05T12:00:00Z"
    patchCount: 1
    lastUsedAt: null
    ---

    ## Rules
    - When calling issue_refund, always pass the amount as integer cents.

Plain files, so a person can read and edit them. Each front-matter value is a JSON scalar
(quoted text, a number, null): YAML-like to the eye, and parsed by the standard library.
A file whose front matter is broken is reported, naming the file, and never overwritten.
Patching bumps patchCount and updatedAt; reading refreshes lastUsedAt; at SKILL_CAP skills
a new one evicts first a skill never read since its creation, then the least recently used.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pydantic import AwareDatetime, Field, ValidationError

from lab_utils.files import NotUTF8Error, atomic_write_text, read_utf8
from lab_utils.errors import describe
from lab_utils.reflection.records import Strict

SKILL_CAP = 200
SKILL_NAME = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"  # kebab-case: also a safe file name
FENCE = "---"
RULE = "- "


class SkillError(ValueError):
    """A skill operation that cannot be done; nothing was written."""


class SkillFileError(SkillError):
    """A skill file that cannot be parsed; the message names the file."""


class SkillMeta(Strict):
    name: str = Field(pattern=SKILL_NAME)
    description: str = Field(min_length=1)
    createdAt: AwareDatetime
    updatedAt: AwareDatetime
    patchCount: int = Field(ge=0)
    lastUsedAt: AwareDatetime | None  # None: never read since it was created


@dataclass(frozen=True)
class Skill:
    meta: SkillMeta
    body: str  # Markdown; its "- " lines are the rules

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def rules(self) -> list[str]:
        return [line[len(RULE):].strip() for line in self.body.splitlines() if line.startswith(RULE)]

    def render(self) -> str:
        fields = self.meta.model_dump(mode="json")
        head = "\n".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items())
        return f"{FENCE}\n{head}\n{FENCE}\n\n{self.body}"

    def _with(self, body: str | None = None, **meta: object) -> Skill:
        # Through the constructor, so a changed field is validated like a parsed one.
        return Skill(SkillMeta(**{**dict(self.meta), **meta}), self.body if body is None else body)

    def used(self, now: dt.datetime) -> Skill:
        return self._with(lastUsedAt=now)

    def patched(self, now: dt.datetime, add: Iterable[str] = (), remove: Iterable[str] = ()) -> Skill:
        """Remove rules (by their exact text) and add rules after the last one: a small edit."""
        add, remove = list(add), list(remove)
        if not add and not remove:
            raise SkillError(f"patch of {self.name} changes nothing")
        missing = [rule for rule in remove if rule not in self.rules]
        if missing:
            raise SkillError(f"skill {self.name} has no rule {missing}")
        kept = [rule for rule in self.rules if rule not in remove]
        repeated = [rule for rule in add if rule in kept]
        if repeated:
            raise SkillError(f"skill {self.name} already has rule {repeated}")
        lines = [line for line in self.body.splitlines()
                 if not (line.startswith(RULE) and line[len(RULE):].strip() in remove)]
        last_rule = max((i for i, line in enumerate(lines) if line.startswith(RULE)), default=len(lines) - 1)
        lines[last_rule + 1:last_rule + 1] = [RULE + rule for rule in add]
        return self._with("\n".join(lines) + "\n", updatedAt=now, patchCount=self.meta.patchCount + 1)


def new_skill(name: str, description: str, rules: Iterable[str], now: dt.datetime) -> Skill:
    meta = SkillMeta(name=name, description=description, createdAt=now, updatedAt=now,
                     patchCount=0, lastUsedAt=None)
    return Skill(meta, "## Rules\n" + "".join(f"{RULE}{rule}\n" for rule in rules))


def parse_skill(text: str, source: str) -> Skill:
    """A skill from its file text; `source` names the file in errors."""
    def broken(problem: str) -> SkillFileError:
        return SkillFileError(f"{source}: broken front matter: {problem}")

    lines = text.splitlines()
    if not lines or lines[0] != FENCE:
        raise broken(f"the file must start with a {FENCE!r} line")
    try:
        end = lines.index(FENCE, 1)
    except ValueError:
        raise broken(f"no closing {FENCE!r} line") from None
    fields: dict[str, object] = {}
    for number, line in enumerate(lines[1:end], 2):
        key, colon, value = (part.strip() for part in line.partition(":"))
        if not colon or not key:
            raise broken(f"line {number}: expected 'key: value', got {line!r}")
        if key in fields:
            raise broken(f"line {number}: {key} is given twice")
        try:
            fields[key] = json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: brackets nested too deeply
            raise broken(f"line {number}: the value of {key} is not a quoted text, number or null") from None
    try:
        meta = SkillMeta.model_validate_json(json.dumps(fields))  # JSON mode: ISO dates parse
    except ValidationError as error:
        raise broken(describe(error)) from None
    return Skill(meta, "\n".join(lines[end + 1:]).lstrip("\n") + "\n")


class SkillStore:
    """The skills of one agent: a folder of <name>.md files."""

    def __init__(self, folder: Path, cap: int = SKILL_CAP) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.cap = cap

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.md"

    def names(self) -> list[str]:
        return sorted(path.stem for path in self.folder.glob("*.md"))

    def __contains__(self, name: str) -> bool:
        return self.path(name).exists()

    def __len__(self) -> int:
        return len(self.names())

    def load(self, name: str) -> Skill:
        """A skill as it is on disk, without counting a use."""
        path = self.path(name)
        if not path.exists():
            raise SkillError(f"no skill {name!r} in {self.folder}")
        try:
            text = read_utf8(path)
        except NotUTF8Error as error:
            raise SkillFileError(str(error)) from None
        skill = parse_skill(text, str(path))
        if skill.name != name:
            raise SkillFileError(f"{path}: broken front matter: name is {skill.name!r}, "
                                 f"the file says {name!r}")
        return skill

    def all(self) -> list[Skill]:
        return [self.load(name) for name in self.names()]

    def read(self, name: str, now: dt.datetime) -> Skill:
        """The agent opens a skill: an invocation, which refreshes lastUsedAt."""
        skill = self.load(name).used(now)
        atomic_write_text(self.path(name), skill.render())
        return skill

    def eviction_order(self) -> list[str]:
        """Who leaves first: skills never read since creation (oldest first), then least recently used.

        A skill nobody ever opened was probably not distilled well; it makes room first.
        """
        def key(skill: Skill) -> tuple:
            used = skill.meta.lastUsedAt
            return (used is not None, used or skill.meta.createdAt, skill.name)
        return [skill.name for skill in sorted(self.all(), key=key)]

    def save(self, skill: Skill) -> list[str]:
        """Write a skill atomically; a new one evicts at the cap. Returns the evicted names."""
        evicted: list[str] = []
        if skill.name not in self:
            order = self.eviction_order()  # parses every file: a broken one stops us here
            evicted = order[:max(0, len(order) + 1 - self.cap)]
            for name in evicted:
                self.path(name).unlink()
        atomic_write_text(self.path(skill.name), skill.render())
        return evicted
