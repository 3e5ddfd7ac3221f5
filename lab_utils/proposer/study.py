"""What a study is made of: the result of each campaign, and the study that holds them.

The campaign runner (campaign.py) fills these in; the report (report.py) reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .budget import Budget
from .evaluation import Candidate
from .prompt import Attempt


@dataclass
class CampaignResult:
    campaign: int
    final: Candidate  # the last selected parent
    stop_reason: str = "iterations_exhausted"
    calls: int = 0
    cost_usd: float = 0.0
    evaluations: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)  # evaluated, baseline first


@dataclass
class Study:
    output: Path
    mode: str
    budget: Budget
    campaigns: list[CampaignResult]

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self.campaigns)

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.campaigns)

    @property
    def registry(self) -> Path:
        return self.output / "registry.jsonl"
