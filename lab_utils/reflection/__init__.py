"""Lesson 07's slow loop: observe runs cheaply, decide when to reflect, keep what is worth it.

    runs (records) -> signals -> trigger score -> scheduler -> packet -> reflection
        -> skills (Markdown files) + self-memo -> next system prompt -> metrics per skill

One idea per module: records, signals, trigger, scheduler, packet, lint, skills, memo,
reflect, metrics, loop (the simulation on a simulated clock).

reflect and loop load the model's SDK, the slowest import of the course: import from them
(`from lab_utils.reflection.reflect import Reflector`). This package loads them only when one of their
names is asked of it (`LOADS_THE_SDK`, as lesson 07's notebooks handed out before did), so that lesson
01's tests, which reach `trigger` alone, and every kernel that grades lesson 01 load no SDK.
"""

from importlib import import_module

from lab_utils.reflection.lint import lint_rule
from lab_utils.reflection.memo import SelfMemo, load_memo, save_memo, system_prompt
from lab_utils.reflection.metrics import skill_metrics, suggest
from lab_utils.reflection.packet import Packet, build_packet, estimate_tokens
from lab_utils.reflection.records import RUNS_DIR, RunRecord, RunRecordError, ToolCall, Turn, load_runs
from lab_utils.reflection.scheduler import AgentStatus, Decision, Schedule, plan_cycle
from lab_utils.reflection.signals import Signals, extract_signals, is_correction, signal_history
from lab_utils.reflection.skills import Skill, SkillError, SkillFileError, SkillStore, new_skill
from lab_utils.reflection.trigger import THRESHOLD, WEIGHTS, Score, choose_threshold, score, threshold_cost

__all__ = [
    "AgentStatus", "Decision", "Packet", "RUNS_DIR", "RunRecord", "RunRecordError", "Schedule", "Score",
    "SelfMemo", "Signals", "Skill", "SkillError", "SkillFileError", "SkillStore", "THRESHOLD", "ToolCall", "Turn",
    "WEIGHTS", "build_packet", "choose_threshold", "estimate_tokens", "extract_signals", "is_correction",
    "lint_rule", "load_memo", "load_runs", "new_skill", "plan_cycle", "save_memo", "score", "signal_history",
    "skill_metrics", "suggest", "system_prompt", "threshold_cost",
]

# Names this package gave before reflect and loop left it, by the module that holds them now; not `reflect`,
# the function, whose name the package's attribute for its module takes once that is imported.
LOADS_THE_SDK = {"SCHEMA": "reflect", "Outcome": "reflect", "Reflection": "reflect", "Reflector": "reflect",
                 "build_request": "reflect", "simulate": "loop"}


def __getattr__(name: str):
    if name not in LOADS_THE_SDK:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{LOADS_THE_SDK[name]}"), name)
