"""Proposers side by side at a matched evaluation budget, scored on public and held-out sets.

The LLM study runs first; its campaigns' evaluation count (baseline included) is the budget
every other proposer gets, unless one is given. The exhaustive grid is the reference: it
shows how many configurations reach every scenario and whether top_k ever matters. Each
final configuration is then scored on the held-out scenarios, which no proposer has seen:
a proposer that fits the public set by luck or by overfitting shows it there.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import mean
from pathlib import Path
from typing import Any

import anthropic

from lab_utils.temporal import HELDOUT, PUBLIC, load_scenarios

from .baselines import (SearchResult, grid_search, perfect_configs, random_search, record_search,
                        rule_search, top_k_matters)
from .campaign import CampaignResult, run_study
from .evaluation import Evaluator, config_key
from .registry import Registry, fingerprint


@dataclass(frozen=True)
class Row:
    proposer: str
    runs: int
    evaluations: int  # the most any run used, baseline included
    reached_all: int  # runs whose final configuration passes every public scenario
    final: dict[str, Any]  # the most common final configuration
    public_passed: float  # mean over runs
    mean_stored_records: float
    heldout_passed: float
    heldout_total: int
    cost_usd: float


def _row(proposer: str, runs: Sequence[SearchResult | CampaignResult], heldout: Evaluator,
         cost_usd: float = 0.0) -> Row:
    finals = [run.final for run in runs]
    held = [heldout(c.config).totals for c in finals]
    common = Counter(config_key(c.config) for c in finals).most_common(1)[0][0]
    return Row(proposer, len(runs), max(run.evaluations for run in runs),
               sum(c.totals["passed"] == c.totals["total"] for c in finals),
               next(c.config for c in finals if config_key(c.config) == common).model_dump(),
               mean(c.totals["passed"] for c in finals),
               mean(c.totals["mean_stored_records"] for c in finals),
               mean(h.passed for h in held), held[0].total, cost_usd)


def compare(output: str | Path, evaluations: int | None = None, seeds: int = 20,
            client: anthropic.Anthropic | None = None, budget_usd: float = 0.50) -> dict[str, Any]:
    """Run the LLM study and the search baselines into a new folder; write compare.md/.json."""
    study = run_study(output, client=client, budget_usd=budget_usd)
    budget = evaluations or max(c.evaluations for c in study.campaigns)
    public, heldout = Evaluator(load_scenarios(PUBLIC)), Evaluator(load_scenarios(HELDOUT))
    registry, stamp = Registry(study.registry), fingerprint([PUBLIC])
    rules = rule_search(public, budget)
    randoms = [random_search(public, budget, seed) for seed in range(seeds)]
    in_order = grid_search(public, budget)
    exhaustive = grid_search(public)
    for result in (rules, *randoms, in_order, exhaustive):
        record_search(registry, result, stamp)
    rows = [_row("llm", study.campaigns, heldout, study.cost_usd),
            _row("rules", [rules], heldout),
            _row(f"random ({seeds} seeds)", randoms, heldout),
            _row("grid, in order", [in_order], heldout),
            _row("grid, exhaustive", [exhaustive], heldout)]
    data = {"budget_evaluations": budget, "rows": [asdict(row) for row in rows],
            "grid": {"configurations": exhaustive.evaluations - 1,
                     "reach_all": len(perfect_configs(exhaustive)),
                     "top_k_matters": top_k_matters(exhaustive)}}
    output = Path(output)
    (output / "compare.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (output / "compare.md").write_text(markdown(data), encoding="utf-8")
    return data


def markdown(data: dict[str, Any]) -> str:
    g = data["grid"]
    out = ["# Proposers at a matched evaluation budget", "",
           f"Each proposer may evaluate {data['budget_evaluations']} configurations, the baseline "
           "included (the exhaustive grid is the reference, not a competitor). Means are over "
           "runs; held-out scenarios were never shown to any proposer.", "",
           "| proposer | runs | evaluations | runs reaching all public | final (most common) "
           "| public passed | mean stored records | held-out passed | model cost USD |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        final = ", ".join(f"{k}={json.dumps(v)}" for k, v in r["final"].items())
        out.append(f"| {r['proposer']} | {r['runs']} | {r['evaluations']} | {r['reached_all']}/"
                   f"{r['runs']} | {final} | {r['public_passed']:.2f} | "
                   f"{r['mean_stored_records']:.2f} | "
                   f"{r['heldout_passed']:.2f}/{r['heldout_total']} | {r['cost_usd']:.6f} |")
    out += ["", f"Grid: {g['reach_all']} of {g['configurations']} configurations pass every public "
                f"scenario; top_k {'matters' if g['top_k_matters'] else 'never matters'}."]
    return "\n".join(out) + "\n"
