"""Checks a proposer's answer must pass before anything runs.

The JSON schema only fixes the answer's shape. These rules need the context of the request:
- every observation cites a scenario and step the evidence actually showed;
- the patch names only the five settings (a field such as `expected_answers` or
  `owner_isolation` is rejected here, so a proposer cannot widen its own permissions);
- a proposal changes one or two settings, each to a new value within its bounds;
- the resulting configuration has not been evaluated before in this campaign;
- a stop carries an empty patch (every setting null).

A failure raises `Rejected`; its message goes back to the model as feedback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from lab_utils.temporal import Config
from lab_utils.errors import describe

from .decision import SETTINGS, Decision
from .evaluation import config_key
from .evidence import Evidence

MAX_CHANGES = 2


class Rejected(ValueError):
    """An answer that may not run. The message says what is wrong, for the model to fix."""


@dataclass(frozen=True)
class Accepted:
    decision: Decision
    config: Config | None  # the candidate to evaluate; None when the model stops


def parse(answer: str) -> Decision:
    try:
        return Decision.model_validate_json(answer)
    except ValidationError as error:
        outside = [str(e["loc"][-1]) for e in error.errors()
                   if e["type"] == "extra_forbidden" and e["loc"][:1] == ("patch",)]
        if outside:
            raise Rejected(
                f"patch names {', '.join(map(repr, outside))}: not one of the five settings "
                f"({', '.join(SETTINGS)}); everything else is fixed and outside the proposal"
            ) from None
        raise Rejected(f"the answer does not fit the decision form: {describe(error)}") from None


def check_citations(decision: Decision, evidence: Evidence, candidate_ids: frozenset[str]) -> None:
    if not decision.observations:
        raise Rejected("no observations: cite at least one scenario step from the evidence")
    for n, obs in enumerate(decision.observations, start=1):
        if obs.scenario_id not in evidence.scenario_ids:
            hint = (f" ({obs.scenario_id} is a candidate id, not a scenario)"
                    if obs.scenario_id in candidate_ids else "")
            raise Rejected(
                f"observation {n} cites scenario {obs.scenario_id!r}, which is not in the "
                f"evidence of this request{hint}; cite a scenario id and step shown there")
        if (obs.scenario_id, obs.step) not in evidence.refs:
            shown = sorted(step for sid, step in evidence.refs if sid == obs.scenario_id)
            raise Rejected(
                f"observation {n} cites step {obs.step} of {obs.scenario_id}, which the "
                f"evidence does not show (shown steps: {shown})")


def validate(answer: str, evidence: Evidence, parent: Config,
             tested: Mapping[str, str]) -> Accepted:
    """Parse and check one answer. `tested` maps each evaluated config's key to its candidate id."""
    decision = parse(answer)
    check_citations(decision, evidence, frozenset(tested.values()))
    changes = decision.patch.changes()
    if decision.action == "stop":
        if changes:
            raise Rejected(
                f"a stop must leave every setting null, but the patch sets {sorted(changes)}")
        return Accepted(decision, None)
    if not 1 <= len(changes) <= MAX_CHANGES:
        raise Rejected(f"a proposal changes 1 to {MAX_CHANGES} settings; this one changes "
                       f"{len(changes)} ({sorted(changes) or 'none'})")
    for name, value in changes.items():
        if getattr(parent, name) == value:
            raise Rejected(
                f"{name} is already {value!r} in the parent; leave it null when unchanged")
    try:
        config = Config(**{**parent.model_dump(), **changes})
    except ValidationError as error:
        raise Rejected(f"out of bounds: {describe(error)}") from None
    if (key := config_key(config)) in tested:
        raise Rejected(f"this configuration was already evaluated as {tested[key]}; "
                       "propose one that has not been tried")
    return Accepted(decision, config)
