"""Proposers to measure the LLM against, at matched evaluation budgets.

- grid: the retrospective grid of 384 configurations (6 thresholds x 3 switches x 8 top_k),
  in a fixed order; exhaustive when given no budget.
- random: configurations drawn from the same grid without repeats, seeded.
- rules: a diagnoser that reads which scenario families fail and flips the setting that
  family points to, one or two settings at a time, like the LLM.

Each starts from the baseline, evaluates at most `evaluations` configurations (the baseline
counts), keeps a parent with the same selection rule as the campaign, and returns its final
configuration, which `compare` then scores on held-out scenarios no proposer has seen.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lab_utils.progress import progress
from lab_utils.temporal import Config, Report, grid

from .evaluation import Candidate, Evaluator, changed, config_key
from .registry import Registry
from .selection import better

# Which setting a failing family points to. Threshold moves are steps of 0.1.
FAMILY_FIX: dict[str, tuple[str, Any]] = {
    "entity_grounding": ("filter_entity", True),
    "retrieval": ("filter_entity", True),
    "deletion": ("filter_entity", True),  # another entity's record answers a deleted key
    "temporal": ("time_aware", True),
    "update": ("time_aware", True),
    "useful_write": ("min_confidence", -0.1),  # a useful fact was not admitted
    "abstention": ("min_confidence", +0.1),  # an uncertain fact was admitted
    "conflict": ("min_confidence", +0.1),
    "deduplication": ("deduplicate", True),
}


@dataclass
class SearchResult:
    method: str
    label: str
    candidates: list[Candidate]
    final: Candidate
    selected: set[str] = field(default_factory=set)  # ids that became a parent

    @property
    def evaluations(self) -> int:
        return len(self.candidates)


class _Search:
    """Evaluate candidates one by one from the baseline, keeping the selected parent."""

    def __init__(self, method: str, label: str, evaluator: Evaluator) -> None:
        self.evaluate = evaluator
        baseline = Candidate("baseline", None, Config(), "human", evaluator(Config()))
        self.result = SearchResult(method, label, [baseline], baseline, {baseline.id})
        self.tested = {config_key(baseline.config)}

    def attempt(self, config: Config) -> None:
        parent = self.result.final
        child = Candidate(f"{self.result.method}-{len(self.result.candidates):03d}", parent.id,
                          config, "search", self.evaluate(config))
        self.result.candidates.append(child)
        self.tested.add(config_key(config))
        if better(child.totals, parent.totals):
            self.result.final = child
            self.result.selected.add(child.id)


def _limited(configs: Iterable[Config], search: _Search, evaluations: int | None) -> SearchResult:
    for config in configs:
        if evaluations is not None and search.result.evaluations >= evaluations:
            break
        if config_key(config) not in search.tested:
            search.attempt(config)
    return search.result


def grid_search(evaluator: Evaluator, evaluations: int | None = None) -> SearchResult:
    """The grid in its fixed order; every configuration when `evaluations` is None."""
    return _limited(progress(list(grid()), "grid"), _Search("grid", "grid", evaluator), evaluations)


def random_search(evaluator: Evaluator, evaluations: int, seed: int) -> SearchResult:
    configs = list(grid())
    random.Random(seed).shuffle(configs)
    return _limited(configs, _Search("random", f"random/seed-{seed}", evaluator), evaluations)


def diagnose(report: Report) -> list[dict[str, Any]]:
    """Patches the failing families suggest, most supported first (at most two settings each)."""
    config = report.config
    votes = Counter(FAMILY_FIX[s.family] for s in report.scenarios
                    if not s.passed and s.family in FAMILY_FIX)
    fixes: dict[str, Any] = {}
    for (name, value), _ in votes.most_common():
        if name == "min_confidence":
            value = min(1.0, max(0.0, round(config.min_confidence + value, 1)))
        if name not in fixes and getattr(config, name) != value:
            fixes[name] = value
    ranked = list(fixes.items())
    patches = [dict(ranked[:2])] if ranked else []
    patches += [dict([fix]) for fix in ranked]  # then each fix alone
    if not ranked and not config.deduplicate:
        patches.append({"deduplicate": True})  # all pass: try storing less
    return patches


def rule_search(evaluator: Evaluator, evaluations: int) -> SearchResult:
    """Diagnose the parent, try the first untested patch; stop when none is left."""
    search = _Search("rules", "rules", evaluator)
    while search.result.evaluations < evaluations:
        parent = search.result.final
        proposals = (Config(**{**parent.config.model_dump(), **patch})
                     for patch in diagnose(parent.report))
        config = next((c for c in proposals if config_key(c) not in search.tested), None)
        if config is None:
            break
        search.attempt(config)
    return search.result


def perfect_configs(result: SearchResult) -> list[Config]:
    """The evaluated configurations (baseline aside) that pass every scenario and hard check."""
    return [c.config for c in result.candidates[1:]
            if c.totals["passed"] == c.totals["total"] and not c.totals["hard_check_violations"]]


def top_k_matters(result: SearchResult) -> bool:
    """True if any two configurations differing only in top_k measured differently."""
    seen: dict[str, dict[str, Any]] = {}
    for c in result.candidates:
        rest = config_key(c.config.model_copy(update={"top_k": 1}))
        if seen.setdefault(rest, c.totals) != c.totals:
            return True
    return False


def record_search(registry: Registry, result: SearchResult, stamp: dict[str, Any]) -> None:
    """Append every attempt of a search run to the registry, as the campaign does for the LLM."""
    by_id = {c.id: c for c in result.candidates}
    registry.extend({
        "kind": "evaluation", "campaign": result.label, "iteration": n,
        "proposer": c.proposer, "method": result.method, "candidate_id": c.id,
        "parent_id": c.parent_id,
        "patch": changed(by_id[c.parent_id].config, c.config) if c.parent_id else {},
        "config": c.config.model_dump(), "result": c.totals,
        "selected": c.id in result.selected, "cost_usd": 0.0, "fingerprint": stamp}
        for n, c in enumerate(result.candidates))
