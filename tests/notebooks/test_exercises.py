"""Validate tells the truth, and autograde ranks answers as a teacher would.

Per lesson, from tests/fixtures/:
- different/<lesson>.py: correct answers written unlike the reference; the released lesson filled
  with them passes nbgrader's Validator, the code behind the student's Validate button;
- rule_breaks/<lesson>.py: sections headed `# %% <grade_id> says "<substring>": <rule>`, each an
  answer with that one rule broken: a patch of the solution's answer (see `patched`) or, where the
  broken answer is written unlike the solution, the whole answer. Filled alone into the lesson
  (every other answer the reference), it must fail a visible test cell of its exercise whose
  error says <substring>;
- different, one_rule_wrong and hardcoded: the fixture students. With the hidden tests, as
  autograde runs them, the first keeps every point, the second loses some but not all, and the
  hard-coder loses more than the student with one rule wrong.

A lesson's solution runs once in one kernel for all of it (nbtools.run_trials): each broken or
fixture answer in place of the reference, with the tests after it, released or hidden; the
reference runs again after each. test_validate_names_a_broken_rule checks this shortcut against
nbgrader's Validator, and the grading-day test against nbgrader's autograde.
"""

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator

from nbtools import (STUDENTS, Trial, exercises, fixture_answers, fixture_lessons, fixture_sections, nbgrader_meta,
                     notebook_path, points_lost, run_trials, solution_answer, student_trials, with_answers)

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)

RULE_BREAK = re.compile(r'says "(?P<substring>[^"]+)": (?P<rule>.+)')


def reference_answers(lesson: str) -> dict[str, str]:
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    return {nbgrader_meta(c)["grade_id"]: solution_answer(c) for c in solution.cells
            if nbgrader_meta(c).get("solution") and c.cell_type == "code"}


def lesson_copy(lesson: str, answers: dict[str, str], folder: Path) -> tuple[nbformat.NotebookNode, Path]:
    """The released lesson's folder copied to `folder`, its notebook filled with `answers`."""
    released = notebook_path("lessons", lesson)
    shutil.copytree(released.parent, folder)
    nb = with_answers(released, answers)
    path = folder / released.name
    nbformat.write(nb, path)
    return nb, path


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


def validate(path) -> dict:
    """What nbgrader's Validate button reports: {} when every test cell passes."""
    return Validator().validate(str(path))


@pytest.mark.parametrize("lesson", fixture_lessons("different"))
def test_answers_written_differently_pass_validate(lesson, offline):
    answers = fixture_answers("different", lesson)
    nb, path = lesson_copy(lesson, answers, offline / "lesson")
    graded = {e.grade_id for e in exercises(nb)}
    assert graded <= set(answers), f"different/{lesson}.py does not answer {sorted(graded - set(answers))}"
    result = validate(path)
    failed = "\n\n".join(f["raw_error"] for f in result.get("failed", []))
    assert result == {}, f"Validate fails on correct answers written differently:\n{failed or result}"


def break_trials(lesson: str) -> list[tuple[Trial, str]]:
    """Each rule break as a trial with the released tests, and what a visible test must say."""
    return [(Trial(grade_id, answer, f"{grade_id}, {rule!r}", released=True), substring)
            for grade_id, found in rule_breaks(lesson, reference_answers(lesson)).items()
            for substring, rule, answer in found]


@pytest.fixture(scope="module")
def tried(offline_module):
    """tried(lesson): every rule break's and every fixture student's answer -> its failed test cells,
    from one kernel per lesson, shared by this module's tests."""
    done: dict[str, dict[Trial, dict[int, str]]] = {}

    def trials(lesson: str) -> dict[Trial, dict[int, str]]:
        if lesson not in done:
            students = student_trials(lesson) if lesson in fixture_lessons(*STUDENTS) else []
            breaks = [trial for trial, _ in break_trials(lesson)] if lesson in fixture_lessons("rule_breaks") else []
            done[lesson] = run_trials(lesson, offline_module / lesson, breaks + students)
        return done[lesson]
    return trials


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks"))
def test_each_broken_rule_fails_a_visible_test_that_names_it(lesson, tried):
    breaks = rule_breaks(lesson, reference_answers(lesson))
    graded = [e.grade_id for e in exercises(nbformat.read(notebook_path("lessons", lesson), as_version=4))]
    assert set(graded) <= set(breaks), f"rule_breaks/{lesson}.py breaks no rule of {sorted(set(graded) - set(breaks))}"
    assert set(breaks) <= set(graded), f"rule_breaks/{lesson}.py names no exercise {sorted(set(breaks) - set(graded))}"

    problems = []
    for trial, substring in break_trials(lesson):
        failed = tried(lesson)[trial]
        if not failed:
            problems.append(f"{trial.label}: every visible test passes")
        elif not any(substring in text for text in failed.values()):
            problems.append(f"{trial.label}: no visible test says {substring!r}; they say:\n"
                            f"{next(iter(failed.values()))[-600:]}")
    assert not problems, f"Validate passes or stays silent on broken rules of {lesson}:\n" + "\n".join(problems)


@pytest.mark.parametrize("lesson", fixture_lessons(*STUDENTS))
def test_fixture_students_rank_as_a_teacher_would(lesson, tried):
    lost = points_lost(lesson, {t: failed for t, failed in tried(lesson).items() if t.label in STUDENTS})
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    total = sum(nbgrader_meta(solution.cells[i]).get("points", 0) for e in exercises(solution) for i in e.tests)
    assert lost["different"] == 0, f"{lesson}: a right answer written differently loses {lost['different']:g} points"
    assert 0 < lost["one_rule_wrong"] < total, f"{lesson}: one rule wrong loses {lost['one_rule_wrong']:g} of {total:g}"
    assert lost["hardcoded"] > lost["one_rule_wrong"], f"{lesson}: hard-coding beats an honest answer"


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks")[:1])
def test_validate_names_a_broken_rule(lesson, offline):
    """The kernel shortcut above agrees with nbgrader's Validator on one broken answer."""
    reference = reference_answers(lesson)
    grade_id, (substring, rule, answer) = next((g, b[0]) for g, b in rule_breaks(lesson, reference).items())
    _, path = lesson_copy(lesson, {**reference, grade_id: answer}, offline / "lesson")
    failed = validate(path).get("failed", [])
    assert any(substring in f["raw_error"] for f in failed), f"Validate does not say {substring!r} for {rule!r}"
