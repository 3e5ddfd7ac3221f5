"""The answers in tests/fixtures/ as trials, and the one run of each solution that tries them all.

A lesson's solution runs once per test run (nbtools.run_trials), on whichever worker asks first;
every test that needs the executed solution or a trial's failed tests reads that run.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import asdict, replace
from pathlib import Path

import nbformat

from nbtools import (STUDENTS, Trial, TrialRun, exercises, fixture_lessons, fixture_sections, nbgrader_meta,
                     notebook_path, once_per_run, run_trials, solution_answer, student_trials)

RULE_BREAK = re.compile(r'says "(?P<substring>[^"]+)": (?P<rule>.+)')


def reference_answers(lesson: str) -> dict[str, str]:
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    return {nbgrader_meta(c)["grade_id"]: solution_answer(c) for c in solution.cells
            if nbgrader_meta(c).get("solution") and c.cell_type == "code"}


def patched(answer: str, patch: str, section: str) -> str:
    """`answer` with each run of `- ` lines in `patch` replaced by the `+ ` lines after it (none: the
    run is deleted); a bare `-` or `+` is an empty line. Each run, applied in turn, must occur exactly
    once in the answer as the runs before it left it."""
    lines = answer.rstrip("\n").split("\n")
    blocks: list[tuple[list[str], list[str]]] = []
    for line in patch.rstrip("\n").split("\n"):
        sign, text = line[:1], line[2:]
        if sign not in ("-", "+") or line[1:2] not in ("", " ") or (sign == "+" and not blocks):
            raise ValueError(f"{section}: a patch line starts with '- ' (a line of the solution's answer) "
                             f"or '+ ' (its replacement, after the '- ' lines), not {line!r}")
        if sign == "-" and (not blocks or blocks[-1][1]):
            blocks.append(([], []))
        blocks[-1][0 if sign == "-" else 1].append(text)
    for old, new in blocks:
        at = [i for i in range(len(lines) - len(old) + 1) if lines[i:i + len(old)] == old]
        if len(at) != 1:
            raise ValueError(f"{section}: the lines to replace, from {old[0]!r}, occur {len(at)} times in the "
                             f"solution's answer, not once: the solution changed, so update the patch")
        lines[at[0]:at[0] + len(old)] = new
    return "\n".join(lines) + "\n"


def rule_breaks(lesson: str, reference: dict[str, str]) -> dict[str, list[tuple[str, str, str]]]:
    """(substring, rule, answer) per grade_id; a header that does not say what fails is an error.
    A section whose first line starts with `-` is a patch of the reference answer, else the answer."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for grade_id, header, body in fixture_sections("rule_breaks", lesson):
        match = RULE_BREAK.fullmatch(header)
        if match is None:
            raise ValueError(f'rule_breaks/{lesson}.py: the header of {grade_id} must read '
                             f'`# %% {grade_id} says "<substring>": <rule>`, not {header!r}')
        if body.startswith("-"):
            if grade_id not in reference:
                raise ValueError(f"rule_breaks/{lesson}.py patches {grade_id}, which is no answer cell of the solution")
            body = patched(reference[grade_id], body, f"rule_breaks/{lesson}.py, {grade_id} {match['rule']!r}")
        found.setdefault(grade_id, []).append((match["substring"], match["rule"], body))
    return found


def different_trials(lesson: str) -> list[Trial]:
    """The answers written differently, each with the released tests, as Validate runs them."""
    return [replace(trial, released=True) for trial in student_trials(lesson, ["different"])]


def break_trials(lesson: str) -> list[Trial]:
    """Each rule break as a trial with the hidden tests too, as autograde runs them (the visible test
    cells are the same either way), that says what a visible test must say."""
    return [Trial(grade_id, answer, f"{grade_id}, {rule!r}", says=substring)
            for grade_id, found in rule_breaks(lesson, reference_answers(lesson)).items()
            for substring, rule, answer in found]


# Bodies of an answer that computes nothing: a constant, or a ValueError whose message holds the
# arguments, the last first (as a message naming where a bad line came from starts).
CONSTANT_BODIES = ("return None", "return True", "return False", "return 0.0", "return ''", "return []", "return {}",
                   "raise ValueError(': '.join(map(str, ARGUMENTS[::-1])))")


def with_body(stub: str, body: str) -> str:
    """The stub with the body of each function it defines replaced by `body` (ARGUMENTS: the list of its arguments)."""
    tree = ast.parse(stub)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            node.body = ast.parse(body.replace("ARGUMENTS", f"[{', '.join(a.arg for a in arguments)}]")).body
    return ast.unparse(tree)


def constant_trials(lesson: str) -> list[Trial]:
    """Each exercise whose released stub defines functions, answered by them computing nothing
    (CONSTANT_BODIES), with the hidden tests, as autograde runs them."""
    released = nbformat.read(notebook_path("lessons", lesson), as_version=4)
    stubs = {e.grade_id: released.cells[e.answer].source for e in exercises(released)}
    return [Trial(grade_id, with_body(stub, body), f"{grade_id} computing nothing: {body}")
            for grade_id, stub in stubs.items() if "def " in stub for body in CONSTANT_BODIES]


# lab_utils' own versions of exercises that keep other rules than their exercise on purpose, and why.
GOES_FURTHER = {"lab_utils.rules.find_pii": "it finds phones beyond exercise 2's rules, as lesson 02 says"}
# A test's guard: the function, then the first reference it may not call, or a tuple of them by name.
GUARDED = re.compile(r'own_implementation\((\w+), (?:["\'](lab_utils\.[\w.]+)["\']|\*(\w+))')


def twins(lesson: str) -> dict[str, dict[str, str]]:
    """grade_id -> {name: dotted path}: for each function an exercise's answer defines, the reference its tests
    name first when they guard it, where that reference has the same name: lab_utils' own version of the
    exercise, which the lesson calls the reference. It must keep the rules the exercise states (but GOES_FURTHER)."""
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    text = "\n".join(cell.source for cell in solution.cells)
    found = {}
    for exercise in exercises(solution):
        guarded = {}
        for name, dotted, references in GUARDED.findall("".join(solution.cells[i].source for i in exercise.tests)):
            if references:  # the tuple's first string
                dotted = re.search(rf'^{references} = \(\s*["\'](lab_utils\.[\w.]+)', text, re.M)[1]
            guarded.setdefault(name, dotted)
        pairs = {name: dotted for name, dotted in guarded.items()
                 if dotted.endswith(f".{name}") and dotted not in GOES_FURTHER}
        if pairs:
            found[exercise.grade_id] = pairs
    return found


def twin_trials(lesson: str) -> list[Trial]:
    """Each exercise answered by lab_utils' own version (twins), with the hidden tests. The tests' guard against
    calling the reference is switched off for it, and stays off for the rest of the run: run these alone."""
    reference = reference_answers(lesson)
    unguarded = ("import contextlib\n\n"
                 "own_implementation = lambda *args, **kwargs: contextlib.nullcontext()  # the answer is the reference\n")
    return [Trial(grade_id, reference[grade_id] + "\n" + unguarded
                  + "".join(f"from {dotted.rsplit('.', 1)[0]} import {name}\n" for name, dotted in pairs.items()),
                  f"{grade_id} answered by {', '.join(pairs.values())}")
            for grade_id, pairs in twins(lesson).items()]


def lesson_trials(lesson: str) -> list[Trial]:
    """Every trial the fixtures hold for the lesson: rule breaks, the answers written differently
    with the released tests, the fixture students and answers that compute nothing with the hidden tests."""
    breaks = break_trials(lesson) if lesson in fixture_lessons("rule_breaks") else []
    different = different_trials(lesson) if lesson in fixture_lessons("different") else []
    students = student_trials(lesson) if lesson in fixture_lessons(*STUDENTS) else []
    return breaks + different + students + constant_trials(lesson)


@functools.cache  # one read per process: a test may ask for many trials
def tried_once(lesson: str, folder: Path) -> TrialRun:
    """The lesson's TrialRun of lesson_trials, made once per test run in `folder` (once_per_run)."""
    def make() -> dict:
        run = run_trials(lesson, folder / lesson, lesson_trials(lesson))
        return {"notebook": run.notebook, "failed": [[asdict(trial), failed] for trial, failed in run.failed.items()]}

    data = once_per_run(folder, lesson, make)
    return TrialRun(nbformat.from_dict(data["notebook"]),
                    {Trial(**trial): {int(i): text for i, text in failed.items()} for trial, failed in data["failed"]})
