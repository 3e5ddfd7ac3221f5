"""Attack files: data/attacks/<id>.json, one attack each, checked whole before anything runs.

    {"id": "a-...", "family": "query-injection", "description": "...", "source": "the paper",
     "candidates": [{"text": "...", "kind": "episode", "source": "t-9501", "verified": false}],
     "triggers": ["a query the attacker wants the payload recalled for"],
     "payload": "a string only the attacker's content contains"}

A malformed file is refused with an error that names the file and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lab_utils.errors import describe
from lab_utils.files import json_files, read_json
from lab_utils.paths import DATA_DIR

ATTACKS_DIR = DATA_DIR / "attacks"
FAMILIES = ("query-injection", "delayed-trigger", "retrieval-poisoning", "false-verification", "exfiltration")

_Text = Field(min_length=1, pattern=r"\S")


class AttackFileError(ValueError):
    """An attack file that cannot be used; nothing was run."""


class Candidate(BaseModel):
    """One write the attacker gets offered to memory (what crystallize or a tool would propose)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    text: str = _Text
    kind: Literal["episode", "fact"]
    source: str = Field(pattern=r"^t-\d+$", description="the ticket it comes from")
    verified: bool


class Attack(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str = Field(pattern=r"^a-[a-z0-9-]+$")
    family: Literal[FAMILIES]  # type: ignore[valid-type]
    description: str = _Text
    source: str = _Text
    candidates: list[Candidate] = Field(min_length=1)
    triggers: list[str] = Field(min_length=1)
    payload: str = _Text

    @model_validator(mode="after")
    def _payload_is_the_attackers(self) -> Attack:
        if not any(self.payload in c.text for c in self.candidates):
            raise ValueError(f"payload {self.payload!r} is in none of the candidates' texts")
        if any(not t.strip() for t in self.triggers):
            raise ValueError("triggers: every trigger must be a non-empty query")
        return self


def load_attack(path: str | Path) -> Attack:
    path = Path(path)
    data = read_json(path, "attack", AttackFileError)
    try:
        return Attack.model_validate(data)
    except ValidationError as error:
        raise AttackFileError(f"{path}: {describe(error)}") from None


def load_attacks(paths: str | Path | Iterable[str | Path] = ATTACKS_DIR) -> list[Attack]:
    """Every attack in the files and folders given (each *.json inside, by name), all checked
    before any is returned; default: the lesson's attacks."""
    attacks: list[Attack] = []
    seen: dict[str, Path] = {}
    for file in json_files(paths, "attack", AttackFileError):
        attack = load_attack(file)
        if attack.id in seen:
            raise AttackFileError(f"{file}: field id: {attack.id!r} is already used by {seen[attack.id]}")
        seen[attack.id] = file
        attacks.append(attack)
    return attacks
