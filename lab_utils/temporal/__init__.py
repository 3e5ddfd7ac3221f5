"""Temporal memory (lesson 05): typed facts with validity intervals, a fixed write policy,
a tunable reader, and the evaluator that scores a configuration on scenario files.

    from lab_utils.temporal import Config, load_scenarios, evaluate
    report = evaluate(Config(filter_entity=True, time_aware=True), load_scenarios())
    report.totals.passed, report.failed_ids()
    evaluate(Config(), load_scenarios(BITEMPORAL), writer="bitemporal")  # the second writer
"""

from .config import Config, grid, parse_config
from .evaluator import HARD_CHECKS, Report, ScenarioResult, Step, evaluate
from .events import Actor, DeleteEvent, EndEvent, Fact, QueryEvent, WriteEvent
from .memory import WRITERS, TemporalMemory
from .records import BitemporalRecord, MemoryRecord, valid_at
from .scenarios import (BITEMPORAL, BITEMPORAL_HELDOUT, HELDOUT, PUBLIC, Scenario, ScenarioError,
                        load_scenarios)
from .writer import ALLOWED_KEYS

__all__ = [
    "ALLOWED_KEYS", "BITEMPORAL", "BITEMPORAL_HELDOUT", "HARD_CHECKS", "HELDOUT", "PUBLIC",
    "WRITERS", "Actor", "BitemporalRecord", "Config", "DeleteEvent", "EndEvent", "Fact",
    "MemoryRecord", "QueryEvent", "Report", "Scenario", "ScenarioError", "ScenarioResult", "Step",
    "TemporalMemory", "WriteEvent", "evaluate", "grid", "load_scenarios", "parse_config", "valid_at",
]
