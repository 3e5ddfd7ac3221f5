"""The proposer loop: evidence -> proposer -> validator -> runner -> selection -> next request.

A campaign starts from the baseline configuration and a fresh history. Each decision is one
model call: the model proposes a patch or stops. A valid patch is evaluated (once per
configuration) and the selection rule decides whether it becomes the next parent. A study
runs several independent campaigns under one budget and writes everything to a new folder.

The model only returns data. It cannot choose the parent, the candidate id, the scenarios,
the evaluator, the budget or an approval: the runner owns all of those.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic

from lab_utils import llm
from lab_utils.llm import canonical, text_of
from lab_utils.progress import progress
from lab_utils.temporal import PUBLIC, Config, load_scenarios

from .budget import Budget, RequestTooLarge
from .evaluation import Candidate, Evaluator, changed, config_key
from .evidence import build_evidence
from .prompt import Attempt, build_request
from .registry import Registry, fingerprint
from .report import write_report
from .selection import better
from .study import CampaignResult, Study
from .validator import Rejected, validate

TIMEOUT_S = 60.0


class OutputExists(FileExistsError):
    """A study never writes into a folder that already exists."""


def _usage(message) -> dict[str, Any]:
    return message.usage.model_dump(include={
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"})


class _Campaign:
    """One campaign's state; `run` drives it to an end and records every step."""

    def __init__(self, number: int, decisions: int, client: anthropic.Anthropic, budget: Budget,
                 registry: Registry, evaluator: Evaluator, stamp: dict[str, Any], timeout: float):
        self.number, self.decisions = number, decisions
        self.client, self.budget, self.registry = client, budget, registry
        self.evaluate, self.stamp, self.timeout = evaluator, stamp, timeout

    def record(self, kind: str, iteration: int, **fields: Any) -> None:
        self.registry.append({"kind": kind, "campaign": self.number, "iteration": iteration,
                              **fields, "fingerprint": self.stamp})

    def run(self) -> CampaignResult:
        baseline = Candidate("baseline", None, Config(), "human", self.evaluate(Config()))
        self.record("evaluation", 0, proposer="human", candidate_id=baseline.id, parent_id=None,
                    patch={}, config=baseline.config.model_dump(), result=baseline.totals,
                    selected=True, cost_usd=0.0)
        result = CampaignResult(self.number, baseline, candidates=[baseline])
        tested = {config_key(baseline.config): baseline.id}
        for n in range(1, self.decisions + 1):
            if not self.step(n, result, tested):
                break
        result.evaluations = self.evaluate.evaluations
        return result

    def call(self, n: int, body: dict[str, Any], result: CampaignResult,
             common: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
        """Reserve, call, settle. None (recorded; the campaign ends) if the budget refuses the call.

        A failure of the model layer itself (no server, a refused key, the spending cap, a rate
        limit, a timeout...) is not an answer to record: its error stops the study at this call.
        """
        try:
            reservation = self.budget.reserve(body)
        except RequestTooLarge as error:
            self.record("request_too_large", n, **common, error=str(error))
            result.stop_reason = "request_too_large"
            return None
        if reservation is None:
            self.record("budget_exhausted", n, **common, remaining_usd=self.budget.remaining_usd)
            result.stop_reason = "budget_exhausted"
            return None
        try:
            message = self.client.messages.create(**body, timeout=self.timeout)
        except Exception:
            self.budget.release(reservation)  # no answer arrived, so the meter counted nothing
            raise
        result.calls += 1
        charged = self.budget.settle(reservation, message.usage)
        result.cost_usd += charged
        return message, {"reserved_usd": reservation.usd, "cost_usd": charged,
                         "usage": _usage(message), "stop_reason": message.stop_reason}

    def step(self, n: int, result: CampaignResult, tested: dict[str, str]) -> bool:
        """One decision; False when the campaign ends here."""
        parent = result.final
        evidence = build_evidence(parent.report)
        body = build_request(parent, evidence, result.attempts, n, self.decisions)
        common = {"proposer": "llm", "parent_id": parent.id,
                  "request_sha256": hashlib.sha256(canonical(body).encode()).hexdigest()}
        called = self.call(n, body, result, common)
        if called is None:
            return False
        message, spent = called
        common |= spent
        answer = text_of(message)
        candidate_id = f"agent-{n:02d}"  # the runner names candidates, never the model
        try:
            accepted = validate(answer, evidence, parent.config, tested)
        except Rejected as error:
            self.record("rejected", n, **common, candidate_id=candidate_id, answer=answer,
                        rejection=str(error))
            result.attempts.append(Attempt(n, parent.id, candidate_id, answer=answer,
                                           rejection=str(error)))
            return True
        decision = accepted.decision.model_dump()
        if accepted.config is None:
            self.record("stop", n, **common, candidate_id=None, decision=decision)
            result.stop_reason = "stopped"
            return False
        child = Candidate(candidate_id, parent.id, accepted.config, "llm",
                          self.evaluate(accepted.config))
        tested[config_key(child.config)] = child.id
        selected = better(child.totals, parent.totals)
        patch = changed(parent.config, child.config)
        self.record("evaluation", n, **common, candidate_id=child.id, patch=patch,
                    config=child.config.model_dump(), result=child.totals, selected=selected,
                    decision=decision)
        result.attempts.append(Attempt(n, parent.id, child.id, patch, child.totals, selected))
        result.candidates.append(child)
        if selected:
            result.final = child
        return True


def new_output(output: str | Path) -> Path:
    output = Path(output)
    if output.exists():
        raise OutputExists(f"{output} already exists; every study writes to a new folder so "
                           "earlier evidence is never overwritten. Choose another --output.")
    output.mkdir(parents=True)
    return output


def fresh_folder(parent: str | Path, prefix: str = "study") -> Path:
    """The first unused parent/prefix-NNN: a new output for a notebook cell run again."""
    n = 1
    while (Path(parent) / f"{prefix}-{n:03d}").exists():
        n += 1
    return Path(parent) / f"{prefix}-{n:03d}"


def run_study(output: str | Path, campaigns: int = 3, iterations: int = 4,
              budget_usd: float = 0.50, client: anthropic.Anthropic | None = None,
              scenario_paths: Sequence[str | Path] = (PUBLIC,),
              timeout: float = TIMEOUT_S) -> Study:
    """Independent campaigns under one budget; writes registry.jsonl, report.md and report.json.

    Without a `client`, the model layer decides the mode: offline replay of stored answers
    unless LAB_LIVE=1 (see lab_utils.llm). Tests inject a client to simulate failures.
    """
    mode = llm.mode() if client is None else "injected client"
    # No silent retries, whatever client comes in: a retry is a second, unreserved call.
    client = (client or llm.make_client(timeout=timeout)).with_options(max_retries=0)
    output = new_output(output)
    scenarios = load_scenarios(scenario_paths)
    registry = Registry(output / "registry.jsonl")
    budget = Budget(budget_usd)
    stamp = fingerprint(scenario_paths)
    results = [_Campaign(n, iterations, client, budget, registry, Evaluator(scenarios), stamp,
                         timeout).run() for n in progress(range(1, campaigns + 1), "campaigns")]
    study = Study(output, mode, budget, results)
    write_report(study)
    return study
