"""The proposer loop (lesson 06): an outer agent chooses the next configuration to test.

    from lab_utils.proposer import fresh_folder, run_study, verify
    study = run_study(fresh_folder(work_dir("proposer")))   # 3 campaigns x 4 decisions, offline
    study.calls, study.cost_usd, [c.final.id for c in study.campaigns]
    verify(study.registry)

The stored answers also hold a development run (run_study(..., campaigns=1, iterations=5)):
its second answer cites a candidate id as a scenario, is rejected, and is corrected.

Modules, one idea each: decision (the answer's form and schema), evidence (traces the model
reads), prompt (the request), validator, budget, evaluation (candidates, evaluated once),
selection (the fixed rule), registry (append-only, chained), campaign (the loop),
baselines (grid, random, rules, held-out), compare, report, __main__ (the CLI).
"""

from .baselines import SearchResult, diagnose, grid_search, random_search, rule_search
from .compare import compare
from .budget import Budget, RequestTooLarge, worst_case_usd
from .campaign import OutputExists, fresh_folder, run_study
from .decision import SCHEMA, SETTINGS, Decision, Observation, Patch
from .evaluation import Candidate, Evaluator, config_key
from .evidence import Evidence, build_evidence
from .prompt import Attempt, build_request
from .registry import Registry, approve, fingerprint, verify
from .selection import better
from .study import CampaignResult, Study
from .validator import Accepted, Rejected, validate

__all__ = [
    "SCHEMA", "SETTINGS", "Accepted", "Attempt", "Budget", "CampaignResult", "Candidate",
    "Decision", "Evaluator", "Evidence", "Observation", "OutputExists", "Patch", "Registry",
    "Rejected", "RequestTooLarge", "SearchResult", "Study", "approve", "better",
    "build_evidence", "build_request", "compare", "config_key", "diagnose", "fingerprint",
    "fresh_folder",
    "grid_search", "random_search", "rule_search", "run_study", "validate", "verify",
    "worst_case_usd",
]
