"""Deletion: forget every version of one key of one entity, for the asking owner only.

All versions go, not just the current one, so the history cannot answer a question about
the past either; a later write starts a fresh history with no link to the deleted one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .events import DeleteEvent
from .records import STRICT, Records, scope


class DeleteResult(BaseModel):
    model_config = STRICT

    status: Literal["deleted", "nothing to delete"]
    deleted_ids: list[str]


def delete(records: Records, event: DeleteEvent) -> tuple[Records, DeleteResult]:
    gone = [r.id for r in records if scope(r) == event.scope]
    kept = tuple(r for r in records if scope(r) != event.scope)
    return kept, DeleteResult(status="deleted" if gone else "nothing to delete", deleted_ids=gone)
