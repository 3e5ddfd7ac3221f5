"""The mutants `make grading-strength` plants: one spot each, only in the solution's part of a cell."""

import sys

from lab_utils.paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from grading_strength import mutants  # noqa: E402

CELL = '''LIMIT = 3


def keep(scores, k, floor):
    """Given to the student: nothing here is mutated."""
    ### BEGIN SOLUTION
    ranked = [s for s in scores if s >= floor and not s < 0]
    return ranked[:min(k, LIMIT)]
    ### END SOLUTION
'''


def test_each_mutant_changes_one_spot_of_the_solution():
    found = dict(mutants(CELL))
    assert set(found) == {
        "line 7: s >= floor: >= -> <", "line 7: s >= floor: >= -> >",
        "line 7: s < 0: < -> >=", "line 7: s < 0: < -> <=", "line 7: 0 -> 1", "line 7: 0 -> -1",
        "line 7: not s < 0: drop not", "line 7: s >= floor and (not s < 0): and <-> or",
        "line 8: [:min(k, LIMIT)]: upper bound +1", "line 8: [:min(k, LIMIT)]: upper bound -1",
        "line 8: min -> max"}
    assert "if s >= floor or not s < 0" in found["line 7: s >= floor and (not s < 0): and <-> or"]
    assert "ranked[:min(k, LIMIT) + 1]" in found["line 8: [:min(k, LIMIT)]: upper bound +1"]
    for source in found.values():
        assert "LIMIT = 3" in source, "code outside BEGIN/END SOLUTION is the student's given code"
        compile(source, "mutant", "exec")
