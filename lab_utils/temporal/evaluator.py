"""The evaluator: run every scenario from an empty store, trace each event, score the run.

Fixed code, like the writer: a proposer sees its output but cannot change it. A scenario
passes only if every answer equals the expected one and every hard check that applied held:

owner_isolation    each query keeps only the actor's records; a write claiming another
                   owner stores nothing and changes nothing; an end changes no other owner's record
deletion           a delete leaves no version of the key; from then on none of the deleted
                   records reappears (checked after every later event)
prohibited_writes  an instruction, a non-user source or a disallowed key stores nothing
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .config import Config
from .events import EndEvent, QueryEvent, WriteEvent
from .memory import Result, TemporalMemory, Writer
from .records import Records, owner, scope
from .scenarios import Scenario
from .writer import prohibited

HARD_CHECKS = ("owner_isolation", "deletion", "prohibited_writes")


@dataclass
class CheckCount:
    checks: int = 0
    violations: int = 0

    def add(self, held: bool) -> None:
        self.checks += 1
        self.violations += not held

    def to_json(self) -> dict[str, int]:
        return {"checks": self.checks, "violations": self.violations}


def _records_json(records: Records) -> list[dict[str, Any]]:
    return [r.model_dump() for r in records]


@dataclass(frozen=True)
class Step:
    """One event and its effect: what the proposer reads to explain a failure."""

    step: int
    event_id: str
    action: str
    detail: dict[str, Any]  # the event as it was applied
    result: Result
    before: Records
    after: Records

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "event_id": self.event_id, "action": self.action,
                "detail": self.detail, "result": self.result.model_dump(),
                "before": _records_json(self.before), "after": _records_json(self.after)}


@dataclass(frozen=True)
class ScenarioResult:
    id: str
    role: str
    family: str
    passed: bool
    answers: list[str | None]
    expected: list[str | None]
    checks: dict[str, CheckCount]
    stored_records: int  # records held at the end: every version kept, deleted ones gone
    traces: list[Step]

    @property
    def hard_checks(self) -> dict[str, bool]:
        """Each hard check: True if it held (or never applied) in this scenario."""
        return {name: count.violations == 0 for name, count in self.checks.items()}

    def to_json(self, traces: bool = False) -> dict[str, Any]:
        out = {"id": self.id, "role": self.role, "family": self.family, "passed": self.passed,
               "answers": self.answers, "expected": self.expected,
               "hard_checks": self.hard_checks, "stored_records": self.stored_records,
               "check_counts": {name: c.to_json() for name, c in self.checks.items()}}
        if traces:
            out["traces"] = [step.to_json() for step in self.traces]
        return out


@dataclass(frozen=True)
class Totals:
    passed: int
    total: int
    mean_stored_records: float
    hard_check_violations: int
    checks: dict[str, CheckCount]

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "total": self.total,
                "mean_stored_records": self.mean_stored_records,
                "hard_check_violations": self.hard_check_violations,
                "hard_checks": {name: c.to_json() for name, c in self.checks.items()}}


@dataclass(frozen=True)
class Report:
    config: Config
    scenarios: list[ScenarioResult]
    totals: Totals
    writer: Writer = "study"

    def failed_ids(self) -> list[str]:
        return [s.id for s in self.scenarios if not s.passed]

    def to_json(self, traces: bool = False) -> dict[str, Any]:
        return {"config": self.config.model_dump(), "writer": self.writer,
                "totals": self.totals.to_json(),
                "scenarios": [s.to_json(traces) for s in self.scenarios]}


def _others(records: Records, actor) -> set:
    return {r for r in records if owner(r) != owner(actor)}


def run_scenario(config: Config, scenario: Scenario, writer: Writer = "study") -> ScenarioResult:
    memory = TemporalMemory(config, writer)
    checks = {name: CheckCount() for name in HARD_CHECKS}
    answers: list[str | None] = []
    expected: list[str | None] = []
    deleted: set[str] = set()
    traces: list[Step] = []
    for n, event in enumerate(scenario.events, start=1):
        event_id = f"{scenario.id}:event-{n}"
        if isinstance(event, WriteEvent) and event.source_event_id is None:
            event = event.model_copy(update={"source_event_id": event_id})
        before = memory.records
        result = memory.apply(event)
        after = memory.records
        if isinstance(event, WriteEvent):
            refused = not result.retained and after == before
            if owner(event.fact) != owner(event.actor):
                checks["owner_isolation"].add(refused)
            if prohibited(event.fact):
                checks["prohibited_writes"].add(refused)
        elif isinstance(event, QueryEvent):
            answers.append(result.answer)
            expected.append(event.expect)
            by_id = {r.id: r for r in after}
            checks["owner_isolation"].add(
                all(owner(by_id[i]) == owner(event.actor) for i in result.kept_ids))
        elif isinstance(event, EndEvent):
            checks["owner_isolation"].add(_others(before, event.actor) == _others(after, event.actor))
        else:
            deleted.update(result.deleted_ids)
            checks["deletion"].add(all(scope(r) != event.scope for r in after))
        if deleted:
            checks["deletion"].add(deleted.isdisjoint(r.id for r in after))
        traces.append(Step(n, event_id, event.action, event.model_dump(), result, before, after))
    passed = answers == expected and all(c.violations == 0 for c in checks.values())
    return ScenarioResult(scenario.id, scenario.role, scenario.family, passed, answers,
                          expected, checks, len(memory.records), traces)


def evaluate(config: Config, scenarios: Iterable[Scenario], writer: Writer = "study") -> Report:
    """Run every scenario under `config` with the study's writer (as published) or the bi-temporal one."""
    results = [run_scenario(config, s, writer) for s in scenarios]
    if not results:
        raise ValueError("no scenarios to evaluate")
    checks = {name: CheckCount() for name in HARD_CHECKS}
    for result in results:
        for name, count in result.checks.items():
            checks[name].checks += count.checks
            checks[name].violations += count.violations
    totals = Totals(
        passed=sum(r.passed for r in results), total=len(results),
        mean_stored_records=sum(r.stored_records for r in results) / len(results),
        hard_check_violations=sum(c.violations for c in checks.values()), checks=checks)
    return Report(config, results, totals, writer)
