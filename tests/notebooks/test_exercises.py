"""Validate tells the truth: it passes answers written differently, and names each broken rule.

Per lesson, from tests/fixtures/:
- different/<lesson>.py: correct answers written unlike the reference; the released lesson filled
  with them passes nbgrader's Validator, the code behind the student's Validate button;
- rule_breaks/<lesson>.py: sections headed `# %% <grade_id> says "<substring>": <rule>`, each an
  answer with that one rule broken: a patch of the solution's answer (see `patched`) or, where the
  broken answer is written unlike the solution, the whole answer. Filled alone into the released
  lesson (every other answer from the solution), it must fail a visible test cell of its exercise
  whose error says <substring>.

A lesson runs once in one kernel; each broken answer is run there in place of the reference, with
the cells after it up to the exercise's last test, and the reference is run again after it.
"""

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator

from nbtools import (Exercise, Kernel, exercises, fixture_answers, fixture_lessons, fixture_sections, nbgrader_meta,
                     notebook_path, solution_answer, with_answers)

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


def assert_reference_passes(kernel: Kernel, exercise: Exercise, answer: str, when: str) -> None:
    failed = kernel.run_exercise(exercise, answer)
    assert not failed, f"{exercise.grade_id}: the reference answer fails a visible test{when}:\n{failed[0][-600:]}"


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


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks"))
def test_each_broken_rule_fails_a_visible_test_that_names_it(lesson, offline):
    reference = reference_answers(lesson)
    breaks = rule_breaks(lesson, reference)
    nb, _ = lesson_copy(lesson, reference, offline / "lesson")
    graded = [e.grade_id for e in exercises(nb)]
    assert set(graded) <= set(breaks), f"rule_breaks/{lesson}.py breaks no rule of {sorted(set(graded) - set(breaks))}"
    assert set(breaks) <= set(graded), f"rule_breaks/{lesson}.py names no exercise {sorted(set(breaks) - set(graded))}"

    problems = []
    with Kernel(nb, offline / "lesson") as kernel:
        done = 0
        for exercise in exercises(nb):
            kernel.run_until(exercise.answer, done)
            assert_reference_passes(kernel, exercise, reference[exercise.grade_id], "")
            for substring, rule, answer in breaks[exercise.grade_id]:
                errors = kernel.run_exercise(exercise, answer)
                if not errors:
                    problems.append(f"{exercise.grade_id}, {rule!r}: every visible test passes")
                elif not any(substring in text for text in errors):
                    problems.append(f"{exercise.grade_id}, {rule!r}: no visible test says {substring!r}; "
                                    f"they say:\n{errors[0][-600:]}")
                # Back to the reference, so the next broken answer starts where a student would.
                assert_reference_passes(kernel, exercise, reference[exercise.grade_id], f" after {rule!r}")
            done = exercise.end + 1
    assert not problems, f"Validate passes or stays silent on broken rules of {lesson}:\n" + "\n".join(problems)


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks")[:1])
def test_validate_names_a_broken_rule(lesson, offline):
    """The kernel shortcut above agrees with nbgrader's Validator on one broken answer."""
    reference = reference_answers(lesson)
    grade_id, (substring, rule, answer) = next((g, b[0]) for g, b in rule_breaks(lesson, reference).items())
    _, path = lesson_copy(lesson, {**reference, grade_id: answer}, offline / "lesson")
    failed = validate(path).get("failed", [])
    assert any(substring in f["raw_error"] for f in failed), f"Validate does not say {substring!r} for {rule!r}"
