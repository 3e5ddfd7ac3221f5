"""The decision record the proposer must return (Schema-Guided Reasoning).

The model fills in a fixed form: what it saw (each observation cites a scenario and a step
of the evidence it was given), what it thinks is wrong, what it expects the change to do,
and either a patch of the five settings or a stop. The form is a pydantic model; the JSON
schema sent with the request is derived from it, so the two cannot drift apart.

Bounds (min_confidence 0..1, top_k 1..8) are not in the schema: structured outputs do not
enforce numeric limits, so the validator checks them against the real `Config`.
"""

from __future__ import annotations

from typing import Any, Literal

import anthropic
from pydantic import BaseModel, ConfigDict, Field

# The whole tunable surface. Anything else a patch names is rejected before it runs.
SETTINGS = ("min_confidence", "filter_entity", "time_aware", "deduplicate", "top_k")

# Extra keys are errors, and JSON types are taken literally ("true" is not a boolean).
_FORM = ConfigDict(extra="forbid", strict=True, frozen=True)


class Observation(BaseModel):
    model_config = _FORM

    scenario_id: str = Field(description="a scenario id exactly as it appears in the evidence")
    step: int = Field(
        description="the step number of that scenario's trace, as shown in the evidence")
    seen: str = Field(description="what the trace shows at that step, in one sentence")


class Patch(BaseModel):
    """All five settings, always present; null leaves the parent's value unchanged."""

    model_config = _FORM

    min_confidence: float | None = Field(description="0 to 1; writes below it are not stored")
    filter_entity: bool | None = Field(description="keep only records of the asked entity")
    time_aware: bool | None = Field(description="keep only records valid on the asked date")
    deduplicate: bool | None = Field(description="reuse an active record a later write confirms")
    top_k: int | None = Field(description="1 to 8; how many ranked records the answerer sees")

    def changes(self) -> dict[str, Any]:
        """The settings this patch sets, by name."""
        return {name: value for name, value in self.model_dump().items() if value is not None}


class Decision(BaseModel):
    model_config = _FORM

    observations: list[Observation] = Field(description="evidence the decision rests on")
    hypothesis: str = Field(description="what in the current settings causes the failures")
    predicted_effect: str = Field(description="what the patch should change in the results")
    action: Literal["propose", "stop"] = Field(
        description="propose a patch, or stop when no change is supported by the evidence")
    patch: Patch


def _untitled(node: Any) -> Any:
    """Drop pydantic's generated titles: they repeat the field names and cost input tokens."""
    if isinstance(node, dict):
        return {k: _untitled(v) for k, v in node.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    return node


# The strict JSON schema for `output_config.format`: the SDK's own transform sets
# additionalProperties false on every object and keeps every field required.
SCHEMA: dict[str, Any] = _untitled(anthropic.transform_schema(Decision))
