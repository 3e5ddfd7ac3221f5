"""The self-memo: what the agent knows about itself, in two short parts.

- strengths_and_trips: what I am good at, and where I trip;
- playbooks: what works for this user and this domain (imperative rules, linted).

Each part is capped at MEMO_PART_CHARS: the cap forces the memo to stay short and true
rather than long. The memo is a Markdown file a person can read and edit, and it goes
into the next system prompt together with the index of skills.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ValidationError, field_validator

from lab_utils.files import NotUTF8Error, atomic_write_text, read_utf8
from lab_utils.errors import describe
from lab_utils.reflection.records import Strict
from lab_utils.reflection.skills import Skill

MEMO_PART_CHARS = 600
MemoPart = Literal["strengths_and_trips", "playbooks"]
HEADINGS: dict[str, str] = {
    "strengths_and_trips": "What I am good at, where I trip",
    "playbooks": "Playbooks for this user and domain",
}


class MemoFileError(ValueError):
    """A memo file that cannot be parsed; the message names the file and line."""


class SelfMemo(Strict):
    strengths_and_trips: list[str] = []
    playbooks: list[str] = []

    @field_validator("strengths_and_trips", "playbooks")
    @classmethod
    def _short_lines(cls, lines: list[str]) -> list[str]:
        if any(not line.strip() or "\n" in line for line in lines):
            raise ValueError("every line must be one non-empty line of text")
        size = sum(len(line) for line in lines)
        if size > MEMO_PART_CHARS:
            raise ValueError(f"{size} characters, over the cap of {MEMO_PART_CHARS}")
        return lines

    def updated(self, part: MemoPart, lines: list[str]) -> SelfMemo:
        """The memo with one part rewritten; raises ValidationError if it breaks the cap."""
        return SelfMemo(**{**dict(self), part: lines})

    def render(self) -> str:
        sections = []
        for part, heading in HEADINGS.items():
            lines = getattr(self, part)
            sections.append(f"## {heading}\n" + "".join(f"- {line}\n" for line in lines))
        return "\n".join(sections)


def load_memo(path: Path) -> SelfMemo:
    """The memo in `path`; an agent without a memo file has an empty memo."""
    path = Path(path)
    if not path.exists():
        return SelfMemo()
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    by_heading = {f"## {heading}": part for part, heading in HEADINGS.items()}
    try:
        text = read_utf8(path)
    except NotUTF8Error as error:
        raise MemoFileError(str(error)) from None
    for number, line in enumerate(text.splitlines(), 1):
        if line in by_heading:
            current = parts.setdefault(by_heading[line], [])
        elif line.startswith("- ") and current is not None:
            current.append(line[2:])
        elif line.strip():
            raise MemoFileError(f"{path} line {number}: expected one of the two headings or a "
                                f"'- ' line under one, got {line!r}")
    try:
        return SelfMemo(**parts)
    except ValidationError as error:
        raise MemoFileError(f"{path}: {describe(error)}") from None


def save_memo(path: Path, memo: SelfMemo) -> None:
    atomic_write_text(Path(path), memo.render())


def system_prompt(base: str, memo: SelfMemo, skills: list[Skill]) -> str:
    """The next turn's system prompt: the base, the memo, and the skill index.

    Listing a skill here is one impression; opening it is one invocation.
    """
    index = "".join(f"- {skill.name}: {skill.meta.description}\n" for skill in skills) or "(none yet)\n"
    return f"{base}\n\n# About yourself\n{memo.render()}\n# Skills you can open\n{index}"
