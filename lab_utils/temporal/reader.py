"""The read path: which stored records may answer a question, in what order, and the answer.

Owner isolation is unconditional; the two filters and top_k are the tunable part.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from .config import Config
from .events import QueryEvent
from .records import STRICT, MemoryRecord, Records, owner, valid_at


class QueryResult(BaseModel):
    model_config = STRICT

    answer: str | None
    record_id: str | None  # the record that supplied the answer
    kept_ids: list[str]  # the top_k records handed to the answerer, best first


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _rank(record: MemoryRecord, event: QueryEvent, asked: set[str]) -> tuple:
    # Relevance first (the asked key, then words the question shares with the record),
    # then the newest observation, then the newest id; sorted in reverse, best first.
    # Records with the asked key always lead, so top_k trims the context, never the answer.
    shared = len(asked & _words(f"{record.entity} {record.key} {record.value}"))
    return record.key == event.key, shared, record.observed_at, int(record.id[1:])


def query(records: Records, event: QueryEvent, config: Config) -> QueryResult:
    eligible = [r for r in records if owner(r) == owner(event.actor)]
    if config.filter_entity:
        eligible = [r for r in eligible if r.entity == event.entity]
    if config.time_aware:
        eligible = [r for r in eligible if valid_at(r, event.as_of)]
    asked = _words(event.text)
    kept = sorted(eligible, key=lambda r: _rank(r, event, asked), reverse=True)[: config.top_k]
    # The answerer is deliberately simple: the first kept record with the asked key.
    chosen = next((r for r in kept if r.key == event.key), None)
    return QueryResult(
        answer=chosen.value if chosen else None,
        record_id=chosen.id if chosen else None,
        kept_ids=[r.id for r in kept])
