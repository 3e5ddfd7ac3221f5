"""The runner's side of an experiment: a candidate configuration and its measured result.

The memory tool is deterministic, so a configuration is evaluated once and its report is
reused (by a later parent comparison, or by a proposer that asks again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lab_utils.llm import canonical
from lab_utils.temporal import Config, Report, Scenario, evaluate

Proposer = Literal["human", "llm", "search"]


def config_key(config: Config) -> str:
    """One string per distinct configuration: the cache and 'tested before' key."""
    return canonical(config.model_dump())


def changed(parent: Config, child: Config) -> dict[str, Any]:
    """The settings in which `child` differs from `parent`: the exact patch."""
    old, new = parent.model_dump(), child.model_dump()
    return {name: new[name] for name in new if new[name] != old[name]}


@dataclass(frozen=True)
class Candidate:
    id: str
    parent_id: str | None
    config: Config
    proposer: Proposer
    report: Report

    @property
    def totals(self) -> dict[str, Any]:
        return self.report.totals.to_json()


class Evaluator:
    """Evaluates configurations on a fixed scenario set, each configuration once."""

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        self.scenarios = list(scenarios)
        self._reports: dict[str, Report] = {}

    @property
    def evaluations(self) -> int:
        """How many distinct configurations were actually run."""
        return len(self._reports)

    def __call__(self, config: Config) -> Report:
        key = config_key(config)
        if key not in self._reports:
            self._reports[key] = evaluate(config, self.scenarios)
        return self._reports[key]
