"""Lesson 07's slow loop: observe runs cheaply, decide when to reflect, keep what is worth it.

    runs (records) -> signals -> trigger score -> scheduler -> packet -> reflection
        -> skills (Markdown files) + self-memo -> next system prompt -> metrics per skill

One idea per module: records, signals, trigger, scheduler, packet, lint, skills, memo,
reflect, metrics, loop (the simulation on a simulated clock).

reflect and loop load the model's SDK, the slowest import of the course: they are imported from
themselves (`from lab_utils.reflection.reflect import Reflector`), not from here, so that lesson 01's
tests, which reach `trigger` alone, and every kernel that grades lesson 01 load no SDK.
"""

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
