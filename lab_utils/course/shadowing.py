"""Test cells that rebind a name the student's answer reads: a grading accident, flagged for a person.

Test cells run in the notebook's namespace, after the answers. A test that assigns `stuffed = [...]` replaces a
student's helper function `stuffed`, and every later call of the student's answer that reads it fails: points
lost that the answer earned. No test can know the names a student will choose, so the graded notebook is read
after the run: a name an answer cell defines at its top level and a function of the answers reads, which a test
cell binds at its own top level (imports aside: they bind the course's own modules), is named with the test
cell, so a person can check that cell's points by hand.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
from nbgrader import utils

from lab_utils.course.cells import is_test, parsed_cell

# Scopes of their own: a name bound inside one is no binding of the notebook's namespace.
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
          ast.DictComp, ast.GeneratorExp)


def _top_level(tree: ast.AST):
    """Every node of `tree` outside the bodies of the scopes in it (the scope's own node included)."""
    for child in ast.iter_child_nodes(tree):
        yield child
        if not isinstance(child, SCOPES):
            yield from _top_level(child)


def _grade_id(cell) -> str:
    return cell.metadata["nbgrader"]["grade_id"]


def bound_at_top_level(tree: ast.Module) -> set[str]:
    """The names a cell binds in the notebook's namespace: assigned, looped over, `with ... as`, `except ... as`,
    defined as a function or class; not imported."""
    names = set()
    for node in _top_level(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def answer_globals(nb) -> dict[str, str]:
    """name -> the grade_id of the answer cell that defines it at its top level, for each name that a function
    of the answer cells reads (as a global: a name the function binds itself is its own)."""
    trees = {_grade_id(c): tree for c in nb.cells
             if c.cell_type == "code" and utils.is_solution(c) and (tree := parsed_cell(c.source))}
    defined = {name: grade_id for grade_id, tree in trees.items() for name in bound_at_top_level(tree)}
    read = set()
    for tree in trees.values():
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            own = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)} | {
                n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            read |= {n.id for n in ast.walk(function)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in own}
    return {name: grade_id for name, grade_id in defined.items() if name in read}


def rebound_by_tests(graded: Path) -> list[str]:
    """For each name the answers read (`answer_globals`) that test cells of a graded notebook bind, what a
    person should check: the first such cell, and how many more."""
    nb = nbformat.read(graded, as_version=4)
    answers = answer_globals(nb)
    cells: dict[str, list[str]] = {}
    for cell in nb.cells:
        if is_test(cell) and (tree := parsed_cell(cell.source)):
            for name in sorted(bound_at_top_level(tree) & answers.keys()):
                cells.setdefault(name, []).append(_grade_id(cell))
    return [f"{ids[0]}{f' and {len(ids) - 1} more test cells bind' if len(ids) > 1 else ': binds'} {name}, which "
            f"the answer {answers[name]} defines and reads; a later call of the answer sees the test's {name}: "
            "check the points by hand" for name, ids in cells.items()]
