"""What the memory tool is asked to do: write a fact, answer a query, delete a key.

These are the events of a scenario file (COURSE.md §5) and the input of `TemporalMemory`.
The actor is the authenticated caller; the fact's own tenant/user is only a claim.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from .records import STRICT, FactContent, IsoDate, Text


class Actor(BaseModel):
    model_config = STRICT

    tenant: Text
    user: Text


class Fact(FactContent):
    """A proposed fact, as an extractor would hand it over; the writer decides its fate."""

    kind: Text


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


Event = Annotated[WriteEvent | QueryEvent | DeleteEvent, Field(discriminator="action")]
