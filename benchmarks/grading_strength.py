"""How well the tests grade: small mistakes planted in every solution's answers (`make grading-strength`).

Each mutant changes one spot of a solution's answer code (the part between BEGIN and END SOLUTION):
a comparison flipped or moved by one (`>=` to `<` or `>`), a number changed by one, True and
False swapped, a `not` dropped, `and`/`or`, `min`/`max`, `+`/`-` or `*`/`/` swapped, a slice
bound moved by one.
For each mutant:
- it loses points if a graded test cell of the SOLUTION notebook (hidden tests included, as at
  autograde) fails with the mutant in the answer cell;
- it fails Validate first if, in addition, a test cell of the released lesson (visible tests only)
  fails with it.
Goals (issue 10): at least 85% of the mutants lose points, and at least 60% of those fail a
visible test. A mutant that behaves exactly like the solution (an equivalent mutant) cannot lose
points; it counts as a survivor all the same. `--survivors` lists every survivor, and every mutant
only the hidden tests catch.

Each lesson runs in one kernel (tests/nbtools.py's run_trials): the notebook once, and each mutant
in place of the answer, with the cells after it up to the exercise's last test, once with the hidden
tests and once with the released ones; the solution is run again after every try.

    python benchmarks/grading_strength.py [--lesson NN_slug ...] [--survivors]
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

from lab_utils.paths import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from nbtools import LESSONS, Trial, exercises, notebook_path, run_trials  # noqa: E402

LOSE_GOAL, VISIBLE_GOAL = 0.85, 0.60
MUTANT_TIMEOUT = 30  # seconds per cell: a mutant can loop forever

FLIPPED = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SWAPPED_OPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
SWAPPED_NAMES = {"min": "max", "max": "min"}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
          ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}

Mutation = tuple[str, Callable[[ast.AST], ast.AST | None]]  # label; edits a node in place or returns its replacement


def _shifted(node: ast.expr, by: int) -> ast.expr:
    return ast.BinOp(node, ast.Add() if by > 0 else ast.Sub(), ast.Constant(1))


def mutations(node: ast.AST) -> Iterator[Mutation]:
    """The one-spot mistakes that can be planted at `node`."""
    src = ast.unparse(node) if isinstance(node, ast.expr) else ""
    if isinstance(node, ast.Compare):
        for j, op in enumerate(node.ops):
            for table in (FLIPPED, BOUNDARY):
                if type(op) in table:
                    new = table[type(op)]
                    yield (f"{src}: {SYMBOL[type(op)]} -> {SYMBOL[new]}",
                           lambda n, j=j, new=new: n.ops.__setitem__(j, new()))
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        for by in (1, -1):
            yield f"{src} -> {node.value + by!r}", lambda n, by=by: setattr(n, "value", n.value + by)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{src} -> {not node.value}", lambda n: setattr(n, "value", not n.value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield f"{src}: drop not", lambda n: n.operand
    elif isinstance(node, ast.BoolOp):
        yield f"{src}: and <-> or", lambda n: setattr(n, "op", ast.Or() if isinstance(n.op, ast.And) else ast.And())
    elif isinstance(node, ast.BinOp) and type(node.op) in SWAPPED_OPS:
        yield f"{src}: swap operator", lambda n: setattr(n, "op", SWAPPED_OPS[type(n.op)]())
    elif isinstance(node, ast.Name) and node.id in SWAPPED_NAMES:
        yield f"{node.id} -> {SWAPPED_NAMES[node.id]}", lambda n: setattr(n, "id", SWAPPED_NAMES[n.id])
    elif isinstance(node, ast.Slice):
        for bound in ("lower", "upper"):
            if getattr(node, bound) is not None and not isinstance(getattr(node, bound), ast.Constant):
                for by in (1, -1):
                    yield (f"[{src}]: {bound} bound {by:+d}",
                           lambda n, bound=bound, by=by: setattr(n, bound, _shifted(getattr(n, bound), by)))


def solution_lines(source: str) -> set[int]:
    """Line numbers (1-based) between `### BEGIN SOLUTION` and `### END SOLUTION`."""
    inside, lines = False, set()
    for number, line in enumerate(source.splitlines(), 1):
        marker = line.strip()
        if marker == "### BEGIN SOLUTION":
            inside = True
        elif marker == "### END SOLUTION":
            inside = False
        elif inside:
            lines.add(number)
    return lines


def _replace(tree: ast.AST, target: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, new)
            elif isinstance(value, list) and any(v is target for v in value):
                value[[v is target for v in value].index(True)] = new


def mutants(source: str) -> list[tuple[str, str]]:
    """(label, mutated source) for every one-spot mistake in the solution part of an answer cell."""
    tree = ast.parse(source)
    lines = solution_lines(source)
    original = ast.unparse(tree)
    found: dict[str, str] = {}
    for index, node in enumerate(ast.walk(tree)):
        if getattr(node, "lineno", None) not in lines:
            continue
        for label, mutate in mutations(node):
            mutated = copy.deepcopy(tree)
            target = next(n for i, n in enumerate(ast.walk(mutated)) if i == index)
            replacement = mutate(target)
            if replacement is not None:
                _replace(mutated, target, replacement)
            text = ast.unparse(ast.fix_missing_locations(mutated))
            if text != original and text not in found.values():
                found[f"line {node.lineno}: {label}"] = text
    return list(found.items())


@dataclass(frozen=True)
class Outcome:
    lesson: str
    grade_id: str
    mutant: str
    loses_points: bool
    fails_visible: bool


def grade_mutants(lesson: str, folder: Path) -> list[Outcome]:
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    # Each mutant twice: with the hidden tests (does it lose points?) and the released ones (does Validate see it?).
    planted = [(label, Trial(e.grade_id, mutant, f"the mutant {label!r}"),
                Trial(e.grade_id, mutant, f"the mutant {label!r}", released=True))
               for e in exercises(solution) for label, mutant in mutants(solution.cells[e.answer].source)]
    trials = [trial for _, *both in planted for trial in both]
    failed = run_trials(lesson, folder, trials, timeout=MUTANT_TIMEOUT).failed
    outcomes = []
    for label, hidden, released in planted:
        loses = bool(failed[hidden])
        outcomes.append(Outcome(lesson, hidden.grade_id, label, loses, loses and bool(failed[released])))
    return outcomes


def shares(outcomes: list[Outcome]) -> tuple[int, int, int]:
    """(mutants, of which lose points, of which also fail a visible test)."""
    lost = [o for o in outcomes if o.loses_points]
    return len(outcomes), len(lost), sum(o.fails_visible for o in lost)


def describe(total: int, lost: int, visible: int) -> str:
    lose_share = lost / total if total else 0.0
    visible_share = visible / lost if lost else 0.0
    return (f"{lost}/{total} = {lose_share:.1%} lose points; "
            f"{visible}/{lost} = {visible_share:.1%} of those fail a visible test")


def measure(lessons: list[str]) -> dict[str, list[Outcome]]:
    """Every lesson's mutant outcomes, offline, writing only to a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.pop("ANTHROPIC_API_KEY", None)
        os.environ.pop("LAB_LIVE", None)
        os.environ["LAB_WORK_DIR"] = str(Path(tmp) / "work")
        os.environ.setdefault("MPLBACKEND", "Agg")
        return {lesson: grade_mutants(lesson, Path(tmp) / lesson) for lesson in lessons}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lesson", nargs="+", choices=LESSONS, default=LESSONS)
    parser.add_argument("--survivors", action="store_true",
                        help="list every mutant that kept full marks, and those Validate misses")
    args = parser.parse_args()
    results = measure(args.lesson)
    everything = [o for outcomes in results.values() for o in outcomes]
    width = max(map(len, results))
    for lesson, outcomes in results.items():
        print(f"{lesson.ljust(width)}  {describe(*shares(outcomes))}")
        if args.survivors:
            for o in outcomes:
                if not o.loses_points:
                    print(f"    survives: {o.grade_id}, {o.mutant}")
                elif not o.fails_visible:
                    print(f"    only the hidden tests catch: {o.grade_id}, {o.mutant}")
    total, lost, visible = shares(everything)
    print(f"{'overall'.ljust(width)}  {describe(total, lost, visible)}")
    met = total and lost / total >= LOSE_GOAL and lost and visible / lost >= VISIBLE_GOAL
    print(f"goal: >= {LOSE_GOAL:.0%} lose points and >= {VISIBLE_GOAL:.0%} of those fail a visible test: "
          f"{'met' if met else 'not met'}")


if __name__ == "__main__":
    main()
