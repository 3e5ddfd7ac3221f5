"""Scenario files: load them strictly, so a typo fails loudly instead of changing a score.

A scenario is one story told to an empty memory (COURSE.md §5). A malformed file raises
`ScenarioError` naming the file, the event (1-based, as in "future-move:event-2") and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints, ValidationError, model_validator

from ..paths import DATA_DIR
from lab_utils.errors import field_path, message
from lab_utils.files import json_files, read_json
from .events import Event, QueryEvent
from .records import STRICT

PUBLIC = DATA_DIR / "scenarios"
HELDOUT = DATA_DIR / "scenarios_heldout"
BITEMPORAL = DATA_DIR / "scenarios_bitemporal"  # corrections, ends, late history, known_at
BITEMPORAL_HELDOUT = DATA_DIR / "scenarios_bitemporal_heldout"


class ScenarioError(ValueError):
    """A scenario file that cannot be used as it is."""


class Scenario(BaseModel):
    model_config = STRICT

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    role: Literal["search", "evaluation", "adversarial"]
    family: Annotated[str, StringConstraints(pattern=r"^[a-z]+(_[a-z]+)*$")]
    description: Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]
    events: list[Event] = Field(min_length=1)

    @model_validator(mode="after")
    def _playable(self) -> Scenario:
        if not any(isinstance(event, QueryEvent) for event in self.events):
            raise ValueError("events: no query, so nothing in this scenario can be scored")
        # observed_at comes from `at` and ranks records, so the story must move forward.
        for n, (previous, event) in enumerate(pairwise(self.events), start=2):
            if event.at < previous.at:
                raise ValueError(
                    f"event {n}, field at: {event.at} is earlier than event {n - 1} "
                    f"({previous.at}); events must be in time order")
        return self


def _located(error: dict) -> str:
    loc = list(error["loc"])
    if not loc:  # a whole-scenario rule; its message already says where
        return message(error)
    if loc[0] != "events" or len(loc) < 2:
        return f"field {field_path(loc)}: {message(error)}"
    where = f"event {loc[1] + 1}"
    if error["type"] == "union_tag_not_found":
        return f"{where}, field action: missing (expected write, query, delete or end)"
    if error["type"] == "union_tag_invalid":
        return f"{where}, field action: {message(error)}"
    return f"{where}, field {field_path(loc[3:])}: {message(error)}"  # loc[2] is the action


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    data = read_json(path, "scenario", ScenarioError)
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(_located(e) for e in error.errors())
        raise ScenarioError(f"{path}: {problems}") from None


def load_scenarios(paths: str | Path | Iterable[str | Path] = PUBLIC) -> list[Scenario]:
    """Scenarios from files and folders (each *.json inside, by name); default: the public set."""
    scenarios: list[Scenario] = []
    seen: dict[str, Path] = {}
    for file in json_files(paths, "scenario", ScenarioError):
        scenario = load_scenario(file)
        if scenario.id in seen:
            raise ScenarioError(
                f"{file}: id {scenario.id!r} is already used by {seen[scenario.id]}")
        seen[scenario.id] = file
        scenarios.append(scenario)
    return scenarios
