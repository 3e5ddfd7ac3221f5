"""The scheduler: which agents reflect in a background cycle, and why the others do not.

Reflection runs in the background on a fixed cadence, never in the middle of a turn.
Each cycle looks at every agent in this order:

1. dirty gate: nothing new since its last reflection -> skip ("clean"), no model call;
2. cooldown: it reflected less than `cooldown_hours` ago -> skip ("cooldown");
3. due: a new run passed the trigger ("triggered"), or it has gone `force_after_hours`
   without a reflection ("forced"); otherwise skip ("below_threshold");
4. cap: at most `max_agents` due agents reflect; the rest wait ("deferred") and stay due.

Everything is a function of the statuses and the simulated clock, so a timeline is
reproducible to the minute.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from lab_utils.reflection.trigger import Score

Reason = Literal["clean", "cooldown", "below_threshold", "triggered", "forced", "deferred"]


@dataclass(frozen=True)
class Schedule:
    cycle_hours: float = 12  # a cycle twice a day
    cooldown_hours: float = 18  # longer than a cycle, so an agent never reflects in two cycles running
    force_after_hours: float = 7 * 24  # a week without a reflection forces one
    max_agents: int = 2  # per cycle, so one cycle never spends on everyone at once


@dataclass(frozen=True)
class AgentStatus:
    """What the scheduler knows about one agent when a cycle starts."""

    agent: str
    last_reflection: dt.datetime | None  # None: never reflected
    first_run: dt.datetime | None  # when its first run ended: the forced clock of a new agent
    new_runs: int  # runs ended since the last reflection
    best: Score | None  # the highest-scoring of those runs (None if there are none)


@dataclass(frozen=True)
class Decision:
    """One agent in one cycle: a row of the timeline."""

    cycle: int
    at: dt.datetime
    agent: str
    reflect: bool
    reason: Reason
    detail: str
    new_runs: int
    best_score: float
    outcome: str | None = None  # filled in when a reflection ran: applied, rejected, ...
    changes: str = ""


def _hours(delta: dt.timedelta) -> float:
    return delta.total_seconds() / 3600


def plan_cycle(cycle: int, now: dt.datetime, statuses: list[AgentStatus],
               schedule: Schedule = Schedule()) -> list[Decision]:
    """The decisions of one cycle, one per status, in the order given."""
    decided: dict[str, Decision] = {}
    due: list[tuple[AgentStatus, Reason, str]] = []

    def skip(status: AgentStatus, reason: Reason, detail: str) -> None:
        best = status.best.total if status.best else 0.0
        decided[status.agent] = Decision(cycle, now, status.agent, False, reason, detail,
                                         status.new_runs, best)

    for status in statuses:
        last = status.last_reflection
        if status.best is None:  # no new runs
            skip(status, "clean", "nothing new since the last reflection")
        elif last is not None and _hours(now - last) < schedule.cooldown_hours:
            skip(status, "cooldown", f"reflected {_hours(now - last):g} h ago, "
                                     f"cooldown {schedule.cooldown_hours:g} h")
        elif status.best.reflect:
            due.append((status, "triggered", status.best.explain()))
        elif _hours(now - (last or status.first_run)) >= schedule.force_after_hours:
            waited = _hours(now - (last or status.first_run)) / 24
            due.append((status, "forced", f"{waited:.1f} days without a reflection"))
        else:
            skip(status, "below_threshold", status.best.explain())

    # Forced first, so an agent that never triggers cannot be starved; then the strongest case.
    due.sort(key=lambda d: (d[1] != "forced", -d[0].best.total, d[0].agent))
    for rank, (status, reason, detail) in enumerate(due):
        if rank < schedule.max_agents:
            decided[status.agent] = Decision(cycle, now, status.agent, True, reason, detail,
                                             status.new_runs, status.best.total)
        else:
            skip(status, "deferred", f"{reason} ({detail}), but the cap of "
                                     f"{schedule.max_agents} agents per cycle is reached")
    return [decided[status.agent] for status in statuses]
