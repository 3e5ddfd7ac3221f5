"""Signals: a handful of counts and flags per run, computed locally at zero model cost.

Nothing here calls a model: every signal is read off the run record itself, so watching
every run costs nothing and only the rare reflection pays for a model call.
Transient errors (timeouts, dropped connections, rate limits) never feed any signal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from lab_utils.reflection.records import RunRecord

# English phrases match as whole words ("factually" is not "actually"), but "wrongly"
# counts as "wrong": "you wrongly closed it" is a correction too.
CORRECTION_EN = re.compile(r"\b(?:wrong(?:ly)?|actually|instead)\b", re.IGNORECASE)
# Chinese has no spaces between words, so these match anywhere. "重新" also means "again"
# ("请重新发送", please resend): a false positive the trigger weighs with everything else.
CORRECTION_ZH = ("不对", "应该是", "重新")

COMPLEX_TOOL_CALLS = 6  # a run this busy is worth a second look, though not alone

SIGNALS = ("correction", "complexity", "recovered", "skill_ineffective", "known_weakness")


def is_correction(text: str) -> bool:
    """Does this message read like the user correcting the agent? A hint, not a verdict."""
    return bool(CORRECTION_EN.search(text)) or any(phrase in text for phrase in CORRECTION_ZH)


def corrected(run: RunRecord) -> bool:
    """A user message after the agent's first answer reads like a correction.

    The opening request is not a correction even if it says "wrong" ("the export is wrong"):
    the agent has not said anything yet.
    """
    answered = False
    for turn in run.messages:
        if turn.role == "assistant":
            answered = True
        elif answered and is_correction(turn.text):
            return True
    return False


@dataclass(frozen=True)
class Signals:
    tool_calls: int  # calls that did not fail transiently: a call that timed out is not work, its retry is
    real_errors: int
    transient_errors: int  # kept for the record; no signal below depends on it
    correction: bool  # the user corrected the agent
    complexity: bool  # a busy run
    recovered: bool  # a real error, and the run still completed
    skill_ineffective: bool  # a skill was read and the run failed for real
    known_weakness: bool  # a real error with a tool that failed for real in an earlier run

    def fired(self) -> list[str]:
        return [name for name in SIGNALS if getattr(self, name)]


def extract_signals(run: RunRecord, weak_tools: Iterable[str] = ()) -> Signals:
    """The signals of one run; `weak_tools` are tools that already failed for real before."""
    real = [call for call in run.tool_calls if call.real_error]
    transient = sum(call.transient for call in run.tool_calls)
    work = len(run.tool_calls) - transient
    weak = set(weak_tools)
    return Signals(
        tool_calls=work,
        real_errors=len(real),
        transient_errors=transient,
        correction=corrected(run),
        complexity=work >= COMPLEX_TOOL_CALLS,
        recovered=bool(real) and run.outcome == "completed",
        skill_ineffective=bool(run.skills_read) and run.real_failure,
        known_weakness=any(call.name in weak for call in real),
    )


def signal_history(runs: Iterable[RunRecord]) -> dict[str, Signals]:
    """Signals of every run by run_id, each agent's known weaknesses growing as its runs end."""
    weak: dict[str, set[str]] = {}
    signals: dict[str, Signals] = {}
    for run in sorted(runs, key=lambda r: (r.ended_at, r.run_id)):
        tools = weak.setdefault(run.agent, set())
        signals[run.run_id] = extract_signals(run, tools)
        tools.update(call.name for call in run.tool_calls if call.real_error)
    return signals
