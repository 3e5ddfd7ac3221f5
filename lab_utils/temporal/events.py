"""What the memory tool is asked to do: write a fact, answer a query, delete a key, end a fact.

These are the events of a scenario file (COURSE.md §5) and the input of `TemporalMemory`.
The actor is the authenticated caller; the fact's own tenant/user is only a claim.
A fact's `valid_to`, a query's `known_at` and the `end` action are read by the bi-temporal
writer; the study's writer refuses the first, ignores the second and changes nothing on the third.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from .records import STRICT, FactContent, IsoDate, Text


class Actor(BaseModel):
    model_config = STRICT

    tenant: Text
    user: Text


class Fact(FactContent):
    """A proposed fact, as an extractor would hand it over; the writer decides its fate."""

    kind: Text
    valid_to: IsoDate | None = None  # exclusive end, when the fact says when it stops holding

    @field_validator("valid_to")
    @classmethod
    def _ends_after_it_starts(cls, valid_to: str | None, info: ValidationInfo) -> str | None:
        start = info.data.get("valid_from")  # absent if valid_from itself was invalid
        if valid_to is not None and start is not None and valid_to <= start:
            raise ValueError(f"{valid_to} must be after valid_from {start} (the end is exclusive)")
        return valid_to


class WriteEvent(BaseModel):
    model_config = STRICT

    action: Literal["write"]
    at: IsoDate
    actor: Actor
    fact: Fact
    should_retain: bool  # the scenario author's label for measuring; the writer never reads it
    source_event_id: Text | None = None  # provenance; the evaluator fills in "<scenario>:event-<n>"


class QueryEvent(BaseModel):
    model_config = STRICT

    action: Literal["query"]
    at: IsoDate
    actor: Actor
    entity: Text
    key: Text
    as_of: IsoDate  # the day the question is about, which may differ from the day it is asked
    text: Text
    expect: Text | None  # None: the right answer is "nothing"
    known_at: IsoDate | None = None  # what the memory believed on this day; None: on `at`

    @field_validator("known_at")
    @classmethod
    def _known_by_then(cls, known_at: str | None, info: ValidationInfo) -> str | None:
        asked = info.data.get("at")
        if known_at is not None and asked is not None and known_at > asked:
            raise ValueError(f"{known_at} is after the question is asked ({asked}): "
                             "a memory cannot know what it has not been told yet")
        return known_at

    @property
    def believed_on(self) -> str:
        return self.known_at or self.at


class DeleteEvent(BaseModel):
    model_config = STRICT

    action: Literal["delete"]
    at: IsoDate
    actor: Actor
    entity: Text
    key: Text

    @property
    def scope(self) -> tuple[str, str, str, str]:
        """The slot to empty: always the actor's own, whatever the event claims."""
        return self.actor.tenant, self.actor.user, self.entity, self.key


class EndEvent(BaseModel):
    """The actor's own fact stops holding: "Bob left his job on Jan 8" ends the record at valid_to."""

    model_config = STRICT

    action: Literal["end"]
    at: IsoDate
    actor: Actor
    entity: Text
    key: Text
    valid_to: IsoDate  # exclusive: the first day the fact no longer holds

    @property
    def scope(self) -> tuple[str, str, str, str]:
        """The slot to end: always the actor's own, like a delete."""
        return self.actor.tenant, self.actor.user, self.entity, self.key


Event = Annotated[WriteEvent | QueryEvent | DeleteEvent | EndEvent, Field(discriminator="action")]
