"""The study's write policy. Fixed code: only `min_confidence` and `deduplicate` come from the config.

The rules run in order and the first that applies decides. Nothing is changed until the
new record (and the closed version of the one it replaces) have been built and validated,
so a rejected write leaves the store exactly as it was.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .config import Config
from .events import Fact, WriteEvent
from .records import STRICT, MemoryRecord, Records, owner, scope

# The durable vocabulary of this small domain. Anything else (a password, an API key) is
# refused by name, not by guessing whether a value looks secret.
ALLOWED_KEYS = frozenset({"city", "language", "timezone", "delivery", "color", "plan"})

Update = Literal["store", "reuse", "conflict", "backfill"]


class WriteResult(BaseModel):
    model_config = STRICT

    status: Literal["stored", "reused", "rejected", "abstained"]
    reason: str
    record_id: str | None = None  # the record stored or reused
    closed_id: str | None = None  # the record whose interval this write ended

    @property
    def retained(self) -> bool:
        """Did the store end up holding this fact?"""
        return self.status in ("stored", "reused")


def prohibited(fact: Fact) -> str | None:
    """Why this fact may never be stored, whatever the configuration; None if it may."""
    if fact.kind != "fact":
        return f"kind {fact.kind!r} is not a fact (instructions are never stored)"
    if fact.source != "user":
        return f"source {fact.source!r} is not the user (retrieved or tool text is not a fact)"
    if fact.key not in ALLOWED_KEYS:
        return f"key {fact.key!r} is not one of the allowed keys {sorted(ALLOWED_KEYS)}"
    return None


def _rejected(reason: str) -> WriteResult:
    return WriteResult(status="rejected", reason=reason)


def _closed(record: MemoryRecord, end: str) -> MemoryRecord:
    # model_copy would skip validation; re-validating enforces a non-empty interval.
    return MemoryRecord.model_validate({**record.model_dump(), "valid_to": end})


def classify_update(active: MemoryRecord | None, fact: Fact, deduplicate: bool = False) -> Update:
    """What an admitted fact does to its slot's active record (rule 5 of the policy)."""
    if active is None:
        return "store"
    if fact.valid_from < active.valid_from:
        return "backfill"
    if fact.valid_from == active.valid_from:
        return "reuse" if fact.value == active.value else "conflict"
    if deduplicate and fact.value == active.value:
        return "reuse"
    return "store"


def admit(event: WriteEvent, config: Config) -> WriteResult | None:
    """Rules 1-4, the same for both writers: why the fact stays out, or None if it may go on."""
    fact = event.fact
    if event.source_event_id is None:
        return _rejected("unsourced: the write names no source_event_id")
    if owner(fact) != owner(event.actor):
        return _rejected(
            f"owner mismatch: actor {'/'.join(owner(event.actor))} "
            f"cannot write a fact owned by {'/'.join(owner(fact))}")
    if reason := prohibited(fact):
        return _rejected(f"prohibited write: {reason}")
    if fact.confidence < config.min_confidence:
        return WriteResult(
            status="abstained",
            reason=f"confidence {fact.confidence} below min_confidence {config.min_confidence}")
    return None


def write(records: Records, event: WriteEvent, config: Config,
          new_id: str) -> tuple[Records, WriteResult]:
    """Apply one write event to `records`; return the new records and what happened."""
    if refused := admit(event, config):
        return records, refused
    fact = event.fact
    if fact.valid_to is not None:
        return records, _rejected(
            f"unsupported: the study's writer takes no valid_to ({fact.valid_to}); "
            "facts end only when a later one supersedes them")

    active = next((r for r in records if scope(r) == scope(fact) and r.valid_to is None), None)
    decision = classify_update(active, fact, config.deduplicate)
    if decision == "backfill":
        return records, _rejected(
            f"backfill: valid_from {fact.valid_from} is earlier than active {active.id} "
            f"(from {active.valid_from}); late history is not reconstructed")
    if decision == "conflict":
        return records, _rejected(
            f"conflict: {active.id} already holds {active.value!r} from {active.valid_from}")
    if decision == "reuse":
        reason = ("same value, same date" if fact.valid_from == active.valid_from
                  else f"deduplicated: confirms active {active.id}")
        return records, WriteResult(status="reused", reason=reason, record_id=active.id)

    new = MemoryRecord(
        tenant=fact.tenant, user=fact.user, entity=fact.entity, key=fact.key,
        value=fact.value, confidence=fact.confidence, source=fact.source,
        valid_from=fact.valid_from, id=new_id, source_event_id=event.source_event_id,
        observed_at=event.at, supersedes_memory_id=active.id if active else None)
    if active is None:
        return records + (new,), WriteResult(status="stored", reason="admitted", record_id=new.id)
    closed = _closed(active, fact.valid_from)
    updated = tuple(closed if r is active else r for r in records) + (new,)
    return updated, WriteResult(
        status="stored", reason=f"supersedes {active.id}", record_id=new.id, closed_id=active.id)
