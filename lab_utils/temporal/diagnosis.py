"""Read a scenario's trace and say, for each wrong answer, which record gave it and why.

The causes map onto the settings that can remove them, which is how a failing run turns
into a next change to try (lesson 05's exercise 3; lesson 06 hands the same traces to an agent):

no answer           nothing eligible had the asked key: a fact never got in (min_confidence?)
other entity        the answer came from another entity's record (filter_entity)
not valid on as_of  the answering record does not hold on the day asked about (time_aware)
wrong value stored  a record of the right entity, valid that day, holds a value that should
                    never have been stored (min_confidence?)
"""

from __future__ import annotations

from typing import Literal

from .evaluator import ScenarioResult
from .records import valid_at

Cause = Literal["no answer", "other entity", "not valid on as_of", "wrong value stored"]


def wrong_answers(result: ScenarioResult) -> list[tuple[int, str | None, Cause]]:
    """(step, id of the answering record or None, cause) for every wrong answer, in trace order."""
    found: list[tuple[int, str | None, Cause]] = []
    for step in result.traces:
        if step.action != "query" or step.result.answer == step.detail["expect"]:
            continue
        record_id = step.result.record_id
        if record_id is None:
            found.append((step.step, None, "no answer"))
            continue
        record = next(r for r in step.before if r.id == record_id)
        if record.entity != step.detail["entity"]:
            cause: Cause = "other entity"
        elif not valid_at(record, step.detail["as_of"]):
            cause = "not valid on as_of"
        else:
            cause = "wrong value stored"
        found.append((step.step, record_id, cause))
    return found
