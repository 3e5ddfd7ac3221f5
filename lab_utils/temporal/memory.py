"""TemporalMemory: the in-memory store that ties a writer, the reader and deletion together.

Each method takes an event (a model from `events`, or a dict in the scenario-file shape)
and returns a result model that goes into the evaluator's trace as it is. The writer is the
study's (default, as published) or the bi-temporal one; the reader and deletion are shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from . import bitemporal, deletion, reader, writer
from .bitemporal import EndResult
from .config import Config
from .deletion import DeleteResult
from lab_utils.errors import describe
from .events import DeleteEvent, EndEvent, QueryEvent, WriteEvent
from .reader import QueryResult
from .records import Records
from .writer import WriteResult

Result = WriteResult | QueryResult | DeleteResult | EndResult
Writer = Literal["study", "bitemporal"]
WRITERS: tuple[str, ...] = get_args(Writer)
M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], event: M | Mapping[str, Any]) -> M:
    return event if isinstance(event, model) else model.model_validate(event)


class TemporalMemory:
    """One owner-partitioned store of versioned facts, read and written under one Config."""

    def __init__(self, config: Config | None = None, writer: Writer = "study") -> None:
        if writer not in WRITERS:
            raise ValueError(f"writer: expected one of {', '.join(WRITERS)} (got {writer!r})")
        self.config = config or Config()
        self.writer = writer
        self._records: Records = ()
        self._stored = 0  # ids are never reused, even after a delete

    def _next_id(self) -> str:
        return f"m{self._stored + 1:03d}"

    @property
    def records(self) -> Records:
        """Every stored version, oldest first. Immutable: a snapshot, safe to keep."""
        return self._records

    def write(self, event: WriteEvent | Mapping[str, Any]) -> WriteResult:
        try:
            event = _parse(WriteEvent, event)
        except ValidationError as error:
            return WriteResult(status="rejected", reason=f"malformed: {describe(error)}")
        write = bitemporal.write if self.writer == "bitemporal" else writer.write
        self._records, result = write(self._records, event, self.config, new_id=self._next_id())
        if result.status == "stored":
            self._stored += 1
        return result

    def query(self, event: QueryEvent | Mapping[str, Any]) -> QueryResult:
        try:
            event = _parse(QueryEvent, event)
        except ValidationError as error:
            raise ValueError(f"malformed query: {describe(error)}") from None
        if self.writer == "bitemporal":  # what the memory believed then, each record's end derived
            return reader.query(bitemporal.view(self._records, event.believed_on), event, self.config)
        return reader.query(self._records, event, self.config)  # the study's: known_at not read

    def delete(self, event: DeleteEvent | Mapping[str, Any]) -> DeleteResult:
        try:
            event = _parse(DeleteEvent, event)
        except ValidationError as error:
            raise ValueError(f"malformed delete: {describe(error)}") from None
        self._records, result = deletion.delete(self._records, event)
        return result

    def end(self, event: EndEvent | Mapping[str, Any]) -> EndResult:
        try:
            event = _parse(EndEvent, event)
        except ValidationError as error:
            raise ValueError(f"malformed end: {describe(error)}") from None
        if self.writer != "bitemporal":
            return EndResult(status="unsupported",
                             reason="the study's writer cannot end a fact; nothing changed")
        self._records, result = bitemporal.end(self._records, event, new_id=self._next_id())
        if result.status == "ended":
            self._stored += 1
        return result

    def apply(self, event: WriteEvent | QueryEvent | DeleteEvent | EndEvent | Mapping[str, Any]) -> Result:
        """Dispatch any event on its action."""
        action = event.get("action") if isinstance(event, Mapping) else getattr(event, "action", None)
        handlers = {"write": self.write, "query": self.query, "delete": self.delete, "end": self.end}
        # None or any non-event has no action; an unhashable action (a list) cannot be looked up.
        if not isinstance(action, str) or action not in handlers:
            raise ValueError(f"action: expected one of {sorted(handlers)} (got {action!r})")
        return handlers[action](event)
