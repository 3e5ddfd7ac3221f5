"""Skill metrics: is a skill any use? Counted locally from the run records.

Per skill of each agent:
- invocation rate = invocations / impressions (read / offered in the system prompt);
- edit-after-hit rate = runs where a human edited the result / invocations;
- ineffective rate = runs that failed for real / invocations judged, where a run the user
  aborted is not judged and a failure caused by a transient error is not a failure:
  one network hiccup must not mark a good skill as broken.
From these, `suggest` says keep, revise, retire, or wait for more evidence.
"""

from __future__ import annotations

from typing import Iterable

from lab_utils.reflection.records import RunRecord

MIN_IMPRESSIONS = 8  # retiring needs a skill to have been offered often enough to be ignored
MIN_INVOCATIONS = 2  # revising needs more than one use to go on
INEFFECTIVE_LIMIT = 0.3
EDIT_LIMIT = 0.5
RETIRE_BELOW = 0.1  # invocation rate


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def suggest(row: dict) -> tuple[str, str]:
    """('keep' | 'revise' | 'retire' | 'wait', why) for one metrics row."""
    used, shown = row["invocations"], row["impressions"]
    if used >= MIN_INVOCATIONS and (row["ineffective_rate"] or 0) >= INEFFECTIVE_LIMIT:
        return "revise", f"failed for real in {row['ineffective']} of {row['judged']} judged uses"
    if used >= MIN_INVOCATIONS and (row["edit_after_hit_rate"] or 0) >= EDIT_LIMIT:
        return "revise", f"result edited by hand after {row['edited_after_hit']} of {used} uses"
    if shown >= MIN_IMPRESSIONS and (row["invocation_rate"] or 0) < RETIRE_BELOW:
        return "retire", f"offered {shown} times, opened {used}: useless or described so nobody knows when"
    if used < MIN_INVOCATIONS and shown < MIN_IMPRESSIONS:
        return "wait", f"too little evidence ({_counted(shown, 'impression')}, {_counted(used, 'invocation')})"
    return "keep", "used, and its results stand"


def skill_metrics(runs: Iterable[RunRecord]) -> list[dict]:
    """One row per (agent, skill) ever offered, ready for pandas.DataFrame."""
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for run in sorted(runs, key=lambda r: (r.ended_at, r.run_id)):
        for name in run.skills_shown:
            c = counts.setdefault((run.agent, name), dict.fromkeys(
                ("impressions", "invocations", "edited_after_hit", "judged", "ineffective"), 0))
            c["impressions"] += 1
            if name not in run.skills_read:
                continue
            c["invocations"] += 1
            c["edited_after_hit"] += run.user_edited
            if run.outcome != "aborted":
                c["judged"] += 1
                c["ineffective"] += run.real_failure
    rows = []
    for (agent, name), c in sorted(counts.items()):
        row = {"agent": agent, "skill": name, **c,
               "invocation_rate": _rate(c["invocations"], c["impressions"]),
               "edit_after_hit_rate": _rate(c["edited_after_hit"], c["invocations"]),
               "ineffective_rate": _rate(c["ineffective"], c["judged"])}
        row["suggestion"], row["why"] = suggest(row)
        rows.append(row)
    return rows
