"""The slow loop on a simulated clock: runs -> signals -> scheduler -> (reflection).

`simulate` replays recorded runs cycle by cycle. Without `reflect` it only decides, for
free; with a Reflector it also reflects whenever the scheduler says so and writes the
outcome into the timeline. The result is a list of Decisions, one per agent and cycle,
which `pandas.DataFrame(timeline)` turns into a table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Callable, Iterable, Mapping

from lab_utils.progress import progress
from lab_utils.reflection.records import RunRecord
from lab_utils.reflection.reflect import Outcome
from lab_utils.reflection.scheduler import AgentStatus, Decision, Schedule, plan_cycle
from lab_utils.reflection.signals import signal_history
from lab_utils.reflection.trigger import THRESHOLD, WEIGHTS, score

Reflect = Callable[[str, list[RunRecord], dt.datetime], Outcome]


def _midnight(at: dt.datetime) -> dt.datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def simulate(runs: Iterable[RunRecord], schedule: Schedule = Schedule(), *,
             reflect: Reflect | None = None, weights: Mapping[str, float] = WEIGHTS,
             threshold: float = THRESHOLD, start: dt.datetime | None = None,
             end: dt.datetime | None = None) -> list[Decision]:
    """Every cycle's decisions from `start` (default: midnight before the first run) to `end`
    (default: midnight after the last run); cycles fall every `schedule.cycle_hours` after start.
    """
    runs = sorted(runs, key=lambda r: (r.ended_at, r.run_id))
    if not runs:
        raise ValueError("simulate needs at least one run")
    signals = signal_history(runs)
    scores = {run.run_id: score(signals[run.run_id], weights, threshold) for run in runs}
    agents = sorted({run.agent for run in runs})
    start = start or _midnight(min(run.started_at for run in runs))
    end = end or _midnight(runs[-1].ended_at) + dt.timedelta(days=1)
    step = dt.timedelta(hours=schedule.cycle_hours)
    last: dict[str, dt.datetime | None] = dict.fromkeys(agents)
    timeline: list[Decision] = []
    cycles = (end - start) // step
    for cycle in progress(range(1, cycles + 1), "reflection cycles"):
        now = start + cycle * step
        new: dict[str, list[RunRecord]] = {}
        statuses = []
        for agent in agents:
            ended = [run for run in runs if run.agent == agent and run.ended_at <= now]
            new[agent] = [run for run in ended if last[agent] is None or run.ended_at > last[agent]]
            best = max((scores[run.run_id] for run in new[agent]), key=lambda s: s.total, default=None)
            first = ended[0].ended_at if ended else None
            statuses.append(AgentStatus(agent, last[agent], first, len(new[agent]), best))
        for decision in plan_cycle(cycle, now, statuses, schedule):
            if decision.reflect:
                if reflect is not None:
                    outcome = reflect(decision.agent, new[decision.agent], now)
                    decision = replace(decision, outcome=outcome.status, changes=outcome.summary())
                last[decision.agent] = now
            timeline.append(decision)
    return timeline
