"""The request the proposer receives: instructions, the parent's results, the campaign so far,
and the evidence; plus the JSON schema its answer must follow.

A request is rebuilt from scratch for every decision (no chat history), so its size stays
bounded and the same situation always produces the same request: stored answers are found
by the request's canonical content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lab_utils.llm import MODEL, canonical

from .decision import SCHEMA
from .evaluation import Candidate
from .evidence import Evidence

PROMPT_VERSION = "proposer-v1"
MAX_TOKENS = 1024  # a decision record is a few hundred tokens

SYSTEM = """\
You tune a small memory tool by running experiments. The tool stores facts about users with \
validity dates and answers questions from them. Its code is fixed; five settings are not. \
Each of your decisions either proposes a patch of those settings, which the runner then \
evaluates on every scenario, or stops the campaign.

Rules:
- Read the evidence: traces of the parent configuration's failed scenarios, and notable \
writes from passing ones. Base every observation on a scenario id and step number exactly \
as the evidence shows them.
- A proposal changes one or two settings. Every other setting in the patch is null.
- Only the five settings exist for you. The scenarios, expected answers, owner isolation, \
deletion, the write policy, the evaluator, the budget and approval are not yours to change.
- Never propose a configuration that was already evaluated in this campaign.
- The runner keeps your candidate as the next parent only if every hard check holds and it \
passes more scenarios, or as many with fewer stored records on average. A parent is a \
starting point for the next experiment, not a deployment.
- Stop, with every patch field null, when the evidence supports no further change.
- State the hypothesis and the predicted effect so the result can confirm or refute them."""

MEANING = {
    "min_confidence": "a write whose confidence is below this is not stored (number, 0 to 1)",
    "filter_entity": "when true, a query considers only records of the asked entity",
    "time_aware": "when true, a query considers only records valid on its as_of date",
    "deduplicate": ("when true, a later write repeating the active value reuses that record "
                    "instead of storing a new version"),
    "top_k": "how many ranked records the answerer sees (integer, 1 to 8)",
}


@dataclass(frozen=True)
class Attempt:
    """An earlier decision of this campaign, as the next request reports it."""

    decision: int
    parent_id: str
    candidate_id: str | None = None
    changes: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, Any] | None = None  # the measured result, if it ran
    selected: bool = False
    answer: str | None = None  # the raw answer, kept when it was rejected
    rejection: str | None = None


def patch_text(changes: dict[str, Any]) -> str:
    return ", ".join(f"{name}={json.dumps(value)}" for name, value in changes.items())


def totals_text(totals: dict[str, Any], per_check: bool = False) -> str:
    text = (f"{totals['passed']}/{totals['total']} scenarios passed, mean stored records "
            f"{totals['mean_stored_records']:.2f}, hard-check violations "
            f"{totals['hard_check_violations']}")
    if per_check:
        text += " (" + ", ".join(f"{name} {c['violations']} of {c['checks']} checks"
                                 for name, c in totals["hard_checks"].items()) + ")"
    return text


def _attempt_line(a: Attempt) -> str:
    if a.rejection is not None:
        return f"- decision {a.decision}: rejected before it ran: {a.rejection}"
    line = (f"- decision {a.decision}: {a.candidate_id} from parent {a.parent_id}, "
            f"{patch_text(a.changes)} -> {totals_text(a.totals)}")
    return line + ("; selected as the new parent" if a.selected else "; not selected")


def user_message(parent: Candidate, evidence: Evidence, history: Sequence[Attempt],
                 decision: int, decisions: int) -> str:
    settings = "\n".join(f"- {name} = {json.dumps(value)}: {MEANING[name]}"
                         for name, value in parent.config.model_dump().items())
    earlier = "\n".join(map(_attempt_line, history)) or "(none yet)"
    parts = [
        f"Decision {decision} of {decisions} in this campaign.",
        f"Settings of the parent, {parent.id} (null in your patch keeps these values):\n{settings}",
        f"Parent {parent.id} measured: {totals_text(parent.totals, per_check=True)}.",
        f"Earlier decisions in this campaign:\n{earlier}",
    ]
    if history and history[-1].rejection is not None:
        parts.append(f"Your previous answer, rejected for the reason above, was:\n"
                     f"{history[-1].answer}\nCorrect the problem in this decision.")
    parts.append(f"Evidence from the run of {parent.id} (cite scenario ids and step numbers "
                 f"exactly as shown):\n{evidence.text}")
    return "\n\n".join(parts)


def build_request(parent: Candidate, evidence: Evidence, history: Sequence[Attempt],
                  decision: int, decisions: int, model: str = MODEL) -> dict[str, Any]:
    """The Messages request body: what the SDK sends, and what stored answers are keyed by."""
    return {
        "model": model,
        "max_tokens": MAX_TOKENS,
        "system": SYSTEM,
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        "messages": [{"role": "user",
                      "content": user_message(parent, evidence, history, decision, decisions)}],
    }


def prompt_hash() -> str:
    """SHA-256 of everything fixed in a request: instructions, schema, output cap, version."""
    fixed = {"version": PROMPT_VERSION, "system": SYSTEM, "schema": SCHEMA,
             "max_tokens": MAX_TOKENS, "meaning": MEANING}
    return hashlib.sha256(canonical(fixed).encode()).hexdigest()
