"""The bi-temporal writer: facts can be corrected, ended and back-dated, and nothing is forgotten
by accident. It sits beside the study's writer (writer.py), which stays as published.

Each record has valid time (`valid_from`, `valid_to`: when the fact holds) and transaction time
(`observed_at`, `retracted_at`: when the memory believed it). A record is never edited: a later
statement retracts it (sets `retracted_at`) and, where needed, adds a new version.

The answer rule (`believed`): of the records the memory believed on `known_at`, the one holding on
`as_of` is the one that started last on or before `as_of`, unless its own `valid_to` has come.
So a later start ends every earlier record, and history told late never overrides what the later
records say. On top of rules 1-4 (`writer.admit`), a write is, in this order:

reuse        the same start, the same value (normalized) and the same end as a believed record
correction   the same start, another value: the earlier record is retracted, the new one takes
             the days it claimed
plan         believed records that start after the write's `at` (not yet in effect) and whose
             start the new fact covers are retracted; records already in effect never are
dedupe       with `deduplicate`, a fact whose value equals the record in effect on its start
             confirms that record (the first spelling stays)
store        otherwise, including late history (an earlier start than the records in effect)

`end` closes the actor's own record in effect on its `valid_to`; delete is the study's (erasure).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from itertools import groupby
from typing import Literal

from pydantic import BaseModel

from .config import Config
from .events import EndEvent, WriteEvent
from .records import STRICT, BitemporalRecord, Records, scope
from .writer import WriteResult, admit


class EndResult(BaseModel):
    model_config = STRICT

    status: Literal["ended", "nothing to end", "unsupported"]
    reason: str
    record_id: str | None = None  # the closed version that was added
    closed_id: str | None = None  # the record it replaces (now retracted)


def normalized(value: str) -> str:
    """The form two spellings of one value share: NFKC, case folded, whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value).casefold())
    return " ".join(folded.split())


def known(records: Iterable[BitemporalRecord], on: str) -> list[BitemporalRecord]:
    """The records the memory believed at the end of day `on`: told by then, not yet retracted."""
    return [r for r in records
            if r.observed_at <= on and (r.retracted_at is None or r.retracted_at > on)]


def believed(records: Iterable[BitemporalRecord], as_of: str,
             known_at: str) -> BitemporalRecord | None:
    """The record of one slot (owner, entity, key) that held on `as_of`, as known on `known_at`."""
    started = [r for r in known(records, known_at) if r.valid_from <= as_of]
    if not started:
        return None
    latest = max(started, key=lambda r: r.valid_from)
    return latest if latest.valid_to is None or as_of < latest.valid_to else None


def view(records: Records, known_at: str) -> Records:
    """What the memory believed on `known_at`, each record ending where the next one starts:
    the records the reader ranks, so its filters and top_k apply as they do for the study."""
    shown: list[BitemporalRecord] = []
    for _, slot in groupby(sorted(known(records, known_at), key=scope), key=scope):
        ordered = sorted(slot, key=lambda r: r.valid_from)
        for record, following in zip(ordered, [*ordered[1:], None]):
            ends = [end for end in (record.valid_to, following and following.valid_from) if end]
            shown.append(record.model_copy(update={"valid_to": min(ends, default=None)}))
    order = {r.id: n for n, r in enumerate(records)}
    return tuple(sorted(shown, key=lambda r: order[r.id]))  # store order, as the study's reader sees


def _retracted(record: BitemporalRecord, at: str) -> BitemporalRecord:
    return BitemporalRecord.model_validate({**record.model_dump(), "retracted_at": at})


def _replace(records: Records, retract: set[str], at: str) -> Records:
    return tuple(_retracted(r, at) if r.id in retract else r for r in records)


def write(records: Records, event: WriteEvent, config: Config,
          new_id: str) -> tuple[Records, WriteResult]:
    """Apply one write event; return the new records and what happened."""
    if refused := admit(event, config):
        return records, refused
    fact, at = event.fact, event.at
    slot = known((r for r in records if scope(r) == scope(fact)), at)
    same_start = next((r for r in slot if r.valid_from == fact.valid_from), None)
    if (same_start and normalized(same_start.value) == normalized(fact.value)
            and same_start.valid_to == fact.valid_to):
        return records, WriteResult(status="reused", reason="same value, same dates",
                                    record_id=same_start.id)

    end = fact.valid_to
    plans = {r.id for r in slot if r.valid_from > at and fact.valid_from <= r.valid_from
             and (end is None or r.valid_from < end)}
    corrected = {same_start.id} if same_start else set()
    retract = plans | corrected
    notes = [f"retracts plan {', '.join(sorted(plans - corrected))}"] if plans - corrected else []
    in_effect = believed([r for r in slot if r.id not in retract], fact.valid_from, at)
    if (config.deduplicate and in_effect and normalized(in_effect.value) == normalized(fact.value)
            and in_effect.valid_to == end):
        return _replace(records, retract, at), WriteResult(
            status="reused", reason="; ".join([f"deduplicated: confirms {in_effect.id}", *notes]),
            record_id=in_effect.id)

    if same_start:
        end = end or same_start.valid_to  # a correction takes every day the earlier record claimed
        notes.insert(0, f"corrects {same_start.id}")
    elif any(r.valid_from > fact.valid_from and r.valid_from <= at for r in slot):
        notes.insert(0, "late history")
    new = BitemporalRecord(
        tenant=fact.tenant, user=fact.user, entity=fact.entity, key=fact.key, value=fact.value,
        confidence=fact.confidence, source=fact.source, valid_from=fact.valid_from, valid_to=end,
        id=new_id, source_event_id=event.source_event_id, observed_at=at,
        supersedes_memory_id=(same_start or in_effect).id if (same_start or in_effect) else None)
    return _replace(records, retract, at) + (new,), WriteResult(
        status="stored", reason="; ".join(notes) or "admitted", record_id=new.id)


def end(records: Records, event: EndEvent, new_id: str) -> tuple[Records, EndResult]:
    """Close the actor's own record in effect on `valid_to` at that day, keeping it as history."""
    slot = [r for r in records if scope(r) == event.scope]
    target = believed(slot, event.valid_to, event.at)
    if target is None or target.valid_from == event.valid_to:
        return records, EndResult(
            status="nothing to end",
            reason=f"no record of {event.entity}.{event.key} holds before {event.valid_to}")
    closed = BitemporalRecord.model_validate({
        **target.model_dump(), "id": new_id, "valid_to": event.valid_to,
        "observed_at": event.at, "supersedes_memory_id": target.id})
    return _replace(records, {target.id}, event.at) + (closed,), EndResult(
        status="ended", reason=f"{target.id} ends on {event.valid_to}", record_id=closed.id,
        closed_id=target.id)
