"""The memory record: one version of one fact, with its owner, provenance and validity.

Dates are canonical YYYY-MM-DD strings, so comparing the text compares the calendar:
`valid_at` and the writer rely on that instead of parsing dates on every read.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Literal, Protocol

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StringConstraints,
                      model_validator)


def _calendar_date(text: str) -> str:
    # Only the canonical spelling sorts right as text: 2026-1-9, 20260109 and 2026-W02-5 are
    # real days written another way, and 2026-02-30 is no day at all.
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        raise ValueError(f"{text!r} is not in canonical YYYY-MM-DD form (e.g. 2026-01-09)")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a real calendar date") from None
    return text


IsoDate = Annotated[str, AfterValidator(_calendar_date)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"\S")]
Confidence = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
RecordId = Annotated[str, StringConstraints(pattern=r"^m\d{3,}$")]

STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


class FactContent(BaseModel):
    """What a fact says and who it is about: shared by a proposed fact and a stored record."""

    model_config = STRICT

    tenant: Text
    user: Text
    entity: Text
    key: Text
    value: Text
    confidence: Confidence
    source: Text
    valid_from: IsoDate


class MemoryRecord(FactContent):
    """A stored fact. Frozen: a change (closing an interval) is a new, re-validated record."""

    schema_version: Literal[1] = 1
    memory_type: Literal["fact"] = "fact"
    id: RecordId
    source_event_id: Text
    observed_at: IsoDate
    valid_to: IsoDate | None = None  # None: still valid, no end known yet
    supersedes_memory_id: RecordId | None = None

    @model_validator(mode="after")
    def _interval_not_empty(self) -> MemoryRecord:
        # Half-open [valid_from, valid_to): ending on the start day would be valid on no day.
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise ValueError(
                f"valid_to {self.valid_to} must be after valid_from {self.valid_from}")
        return self


class BitemporalRecord(MemoryRecord):
    """A record of the bi-temporal writer: valid time as above, transaction time from
    `observed_at` (when the memory was told) to `retracted_at` (when a later statement replaced
    it; None: still believed). A retracted record is kept, so past beliefs can be asked about."""

    schema_version: Literal[2] = 2
    retracted_at: IsoDate | None = None

    @model_validator(mode="after")
    def _retracted_after_observed(self) -> BitemporalRecord:
        if self.retracted_at is not None and self.retracted_at < self.observed_at:
            raise ValueError(
                f"retracted_at {self.retracted_at} is before observed_at {self.observed_at}")
        return self


class Owned(Protocol):
    tenant: str
    user: str


class Scoped(Owned, Protocol):
    entity: str
    key: str


Records = tuple[MemoryRecord, ...]  # a store's state: immutable, so a snapshot costs nothing


def owner(item: Owned) -> tuple[str, str]:
    """Who a record, fact or actor belongs to."""
    return item.tenant, item.user


def scope(item: Scoped) -> tuple[str, str, str, str]:
    """The versioned slot a fact lives in: one owner's key of one entity."""
    return item.tenant, item.user, item.entity, item.key


def valid_at(record: MemoryRecord, at: str) -> bool:
    """True if the record holds on day `at`: start inclusive, end exclusive."""
    return record.valid_from <= at and (record.valid_to is None or at < record.valid_to)
