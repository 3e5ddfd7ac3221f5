"""The weighted trigger: reflect on a run only when its fired signals weigh enough.

Counting events ("reflect after N of them") treats three timeouts like three corrections.
Here every signal carries a weight, the fired ones are summed, and a run triggers a
reflection when the sum reaches THRESHOLD. "Reaches" means >=: a signal weighted exactly
at the threshold is meant to trigger on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from lab_utils.reflection.signals import Signals

THRESHOLD = 0.7

WEIGHTS = {
    # The user said the agent was wrong: the clearest feedback there is (source's figure).
    "correction": 0.9,
    # A skill was followed and the run still failed for real: the skill itself may be wrong,
    # and every later run will follow it again, so this triggers on its own.
    "skill_ineffective": 0.8,
    # The agent got past a real error: maybe a workaround worth keeping, maybe luck,
    # so alone it stays under the threshold; with any other signal it passes.
    "recovered": 0.6,
    # A busy run alone is not a lesson (source's figure); busy and corrected is.
    "complexity": 0.5,
    # Tripped again on a tool that failed before: it raises another signal over the line,
    # but a repeat of something already seen is not news by itself.
    "known_weakness": 0.4,
}


@dataclass(frozen=True)
class Score:
    total: float
    fired: dict[str, float]  # the fired signals and their weights
    threshold: float

    @property
    def reflect(self) -> bool:
        return self.total >= self.threshold

    def explain(self) -> str:
        """'correction 0.9 + complexity 0.5 = 1.40 >= 0.7', for tables and timelines."""
        terms = " + ".join(f"{name} {weight:g}" for name, weight in self.fired.items()) or "no signal"
        sign = ">=" if self.reflect else "<"
        return f"{terms} = {self.total:.2f} {sign} {self.threshold:g}"


def score(signals: Signals, weights: Mapping[str, float] = WEIGHTS,
          threshold: float = THRESHOLD) -> Score:
    fired = {name: weights[name] for name in signals.fired()}
    # Rounded so that the order of the additions cannot move a sum across the threshold.
    return Score(round(sum(fired.values()), 6), fired, threshold)


# Choosing the threshold from runs a person labelled "worth a reflection" (True) or not.
# A miss lets the agent repeat its mistake; a false alarm costs one cheap call that may save
# nothing. So a miss counts twice.
MISS_COST = 2


def threshold_cost(scores: Mapping[str, float], labels: Mapping[str, bool], threshold: float) -> int:
    """MISS_COST x misses + false alarms of `threshold` on labelled runs (both keyed by run id)."""
    if scores.keys() != labels.keys():
        raise ValueError(f"scores and labels must cover the same runs; only in one of them: "
                         f"{sorted(scores.keys() ^ labels.keys())}")
    misses = sum(labels[run] and scores[run] < threshold for run in scores)
    false_alarms = sum(not labels[run] and scores[run] >= threshold for run in scores)
    return MISS_COST * misses + false_alarms


def choose_threshold(scores: Mapping[str, float], labels: Mapping[str, bool], candidates) -> float:
    """The candidate of lowest cost; at equal cost the highest (fewer reflections)."""
    if not candidates:
        raise ValueError("no candidate thresholds to choose from")
    return min(candidates, key=lambda t: (threshold_cost(scores, labels, t), -t))
