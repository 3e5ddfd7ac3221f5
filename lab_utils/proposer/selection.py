"""The selection rule, fixed in code: which of two measured candidates becomes the parent.

1. every hard check must hold (a candidate with a violation is never selected);
2. then more scenarios passed wins;
3. at equal success, fewer stored records on average wins (less to keep, leak or delete).

Selection picks the next parent for an experiment, not a deployment: that is a human's
separate approval (see `registry.approve`).
"""

from __future__ import annotations

from typing import Any


def rank(totals: dict[str, Any]) -> tuple[int, float]:
    # Compared exactly, as lesson 06 teaches: equal stores give the same mean, computed the same way.
    return totals["passed"], -totals["mean_stored_records"]


def better(candidate: dict[str, Any], incumbent: dict[str, Any]) -> bool:
    """True if the candidate's totals should replace the incumbent's as parent."""
    if candidate["hard_check_violations"]:
        return False
    if incumbent["hard_check_violations"]:
        return True
    return rank(candidate) > rank(incumbent)
