"""Evidence: the parent's traces, compacted into the text the proposer reads.

What the proposer sees is what it may cite. `Evidence.refs` holds every (scenario, step)
pair the text shows, so the validator can tell a real citation from an invented one.

Shown, in this order, until the size cap is reached:
- every failed scenario, all its steps, with the records kept for each query;
- from passing scenarios, only the writes worth knowing about: writes that were not stored
  (abstained or rejected) and repeated confirmations (a write that closed a record holding
  the same value). These are where storage and admission changes would show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lab_utils.temporal import MemoryRecord, Report, ScenarioResult, Step

# Caps the request size, and with it the budget's input bound (about 4 characters a token).
MAX_EVIDENCE_CHARS = 14_000

Ref = tuple[str, int]


@dataclass(frozen=True)
class Evidence:
    text: str
    refs: frozenset[Ref]  # every (scenario id, step) the text shows
    scenario_ids: frozenset[str]
    omitted: tuple[str, ...]  # scenarios left out by the size cap


def _who(item: dict[str, Any] | MemoryRecord) -> str:
    if isinstance(item, MemoryRecord):
        return f"{item.tenant}/{item.user}"
    return f"{item['tenant']}/{item['user']}"


def _record(r: MemoryRecord, actor: str) -> str:
    # The owner is shown only when it is not the asker: that is when it matters.
    owner = "" if _who(r) == actor else f" (owner {_who(r)})"
    validity = f"{r.valid_from}..{r.valid_to or 'open'}"
    return f"{r.id} {r.entity}.{r.key}={r.value} valid {validity}{owner}"


def _value(v: Any) -> str:
    return "null" if v is None else repr(v)


def describe_step(step: Step) -> str:
    """One line per event: what was asked, what the memory did, and for a query, why."""
    d, r = step.detail, step.result
    actor = _who(d["actor"])
    head = f"step {step.step} {step.action} at {d['at']} by {actor}:"
    if step.action == "write":
        f = d["fact"]
        unusual = [f"claimed owner {_who(f)}"] if _who(f) != actor else []
        unusual += [f"{name} {f[name]}" for name, usual in (("source", "user"), ("kind", "fact"))
                    if f[name] != usual]
        extra = f" ({', '.join(unusual)})" if unusual else ""
        return (f"{head} {f['entity']}.{f['key']}={f['value']} confidence {f['confidence']} "
                f"valid_from {f['valid_from']}{extra} -> "
                f"{' '.join(filter(None, (r.status, r.record_id)))} ({r.reason})")
    if step.action == "query":
        by_id = {rec.id: rec for rec in step.after}
        kept = "; ".join(_record(by_id[i], actor) for i in r.kept_ids) or "nothing"
        verdict = "ok" if r.answer == d["expect"] else "WRONG"
        return (f"{head} {d['entity']}.{d['key']} as_of {d['as_of']} \"{d['text']}\" -> "
                f"kept [{kept}]; answered {_value(r.answer)}, expected "
                f"{_value(d['expect'])}: {verdict}")
    return f"{head} {d['entity']}.{d['key']} -> {r.status} {r.deleted_ids}"


def notable(step: Step) -> bool:
    """A write not stored, or a repeated confirmation (it closed a record of the same value)."""
    if step.action != "write":
        return False
    result = step.result
    if result.status in ("abstained", "rejected"):
        return True
    closed = next((rec for rec in step.before if rec.id == result.closed_id), None)
    return closed is not None and closed.value == step.detail["fact"]["value"]


def _failed_block(s: ScenarioResult) -> tuple[str, list[Ref]]:
    failed_checks = [name for name, held in s.hard_checks.items() if not held]
    lines = [f"scenario {s.id} (role {s.role}, family {s.family}): FAILED; answers "
             f"{json.dumps(s.answers)}, expected {json.dumps(s.expected)}; hard checks failed: "
             f"{', '.join(failed_checks) or 'none'}; "
             f"records at the end: {s.stored_records}"]
    lines += [f"  {describe_step(step)}" for step in s.traces]
    return "\n".join(lines), [(s.id, step.step) for step in s.traces]


def _notable_block(s: ScenarioResult) -> tuple[str, list[Ref]] | None:
    steps = [step for step in s.traces if notable(step)]
    if not steps:
        return None
    lines = [f"scenario {s.id} (role {s.role}, family {s.family}): passed; "
             f"records at the end: {s.stored_records}"]
    lines += [f"  {describe_step(step)}" for step in steps]
    return "\n".join(lines), [(s.id, step.step) for step in steps]


def build_evidence(report: Report, max_chars: int = MAX_EVIDENCE_CHARS) -> Evidence:
    """The parent's failures first, then notable writes of passing scenarios, up to max_chars."""
    blocks = [(s.id, _failed_block(s)) for s in report.scenarios if not s.passed]
    blocks += [(s.id, block) for s in report.scenarios if s.passed
               if (block := _notable_block(s)) is not None]
    shown: list[str] = []
    refs: set[Ref] = set()
    ids: set[str] = set()
    omitted: list[str] = []
    size = 0
    for scenario_id, (text, block_refs) in blocks:
        if size + len(text) > max_chars:
            omitted.append(scenario_id)
            continue
        shown.append(text)
        refs.update(block_refs)
        ids.add(scenario_id)
        size += len(text) + 2
    if omitted:
        shown.append(f"({len(omitted)} more scenarios not shown: {', '.join(omitted)})")
    return Evidence("\n\n".join(shown), frozenset(refs), frozenset(ids), tuple(omitted))
