"""Temporal memory (lesson 05): typed facts with validity intervals, a fixed write policy,
a tunable reader, and the evaluator that scores a configuration on scenario files.

    from lab_utils.temporal import Config, load_scenarios, evaluate
    report = evaluate(Config(filter_entity=True, time_aware=True), load_scenarios())
    report.totals.passed, report.failed_ids()
"""

from .config import Config, grid, parse_config
from .evaluator import HARD_CHECKS, Report, ScenarioResult, Step, evaluate
from .events import Actor, DeleteEvent, Fact, QueryEvent, WriteEvent
from .memory import TemporalMemory
from .records import MemoryRecord, valid_at
from .scenarios import HELDOUT, PUBLIC, Scenario, ScenarioError, load_scenarios
from .writer import ALLOWED_KEYS

__all__ = [
    "ALLOWED_KEYS", "HARD_CHECKS", "HELDOUT", "PUBLIC", "Actor", "Config", "DeleteEvent",
    "Fact", "MemoryRecord", "QueryEvent", "Report", "Scenario", "ScenarioError",
    "ScenarioResult", "Step", "TemporalMemory", "WriteEvent", "evaluate", "grid",
    "load_scenarios", "parse_config", "valid_at",
]
