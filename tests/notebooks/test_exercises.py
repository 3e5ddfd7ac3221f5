"""Validate tells the truth, and autograde ranks answers as a teacher would.

Per lesson, from tests/fixtures/:
- different/<lesson>.py: correct answers written unlike the reference, one for every exercise;
  each passes every visible test, as the student's Validate button runs them;
- rule_breaks/<lesson>.py: sections headed `# %% <grade_id> says "<substring>": <rule>`, each an
  answer with that one rule broken: a patch of the solution's answer (see fixture_trials.patched)
  or, where the broken answer is written unlike the solution, the whole answer. Filled alone into
  the lesson (every other answer the reference), it must fail a visible test cell of its exercise
  whose error says <substring>, and a hidden one, which checks the rule again on other data;
- different, one_rule_wrong and hardcoded: the fixture students. With the hidden tests, as
  autograde runs them, the first keeps every point, the second loses some but not all, and the
  hard-coder loses more than the student with one rule wrong;
- and, from the released stubs, answers that compute nothing (a constant, or a ValueError): they
  earn no point, as every test cell also checks a case they get wrong.

lab_utils' own version of an exercise, which the lesson calls the reference, passes that exercise's
tests (fixture_trials.twins), in a run of its own.

A lesson's solution runs once per test run in one kernel for all of it (the `tried` fixture,
nbtools.run_trials): each broken or fixture answer in place of the reference, with the tests after
it, released or hidden; the reference runs again after each. A broken answer's cells run only until a
visible test failed saying the rule's words and a hidden one failed too, all that the tests below ask.
For the first lesson, nbgrader's Validator itself checks this shortcut (the released lesson filled
with every `different` answer at once, and one broken rule), and the grading-day test checks it
against nbgrader's autograde.
"""

import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator

from fixture_trials import (break_trials, constant_trials, different_trials, reference_answers, rule_breaks,
                            twin_trials, twins)
from nbtools import (LESSONS, STUDENTS, exercises, fixture_answers, fixture_lessons, hidden_test_cells, nbgrader_meta,
                     notebook_path, points_lost, run_trials, shown_whole, with_answers)

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)


def lesson_copy(lesson: str, answers: dict[str, str], folder: Path) -> tuple[nbformat.NotebookNode, Path]:
    """The released lesson's folder copied to `folder`, its notebook filled with `answers`."""
    released = notebook_path("lessons", lesson)
    shutil.copytree(released.parent, folder)
    nb = with_answers(released, answers)
    path = folder / released.name
    nbformat.write(nb, path)
    return nb, path


def validate(path) -> dict:
    """What nbgrader's Validate button reports: {} when every test cell passes."""
    return Validator().validate(str(path))


@pytest.mark.parametrize("lesson", fixture_lessons("different"))
def test_answers_written_differently_pass_every_visible_test(lesson, tried):
    answers = fixture_answers("different", lesson)
    graded = {e.grade_id for e in exercises(nbformat.read(notebook_path("lessons", lesson), as_version=4))}
    assert graded <= set(answers), f"different/{lesson}.py does not answer {sorted(graded - set(answers))}"
    run = tried(lesson)
    failing = {trial.grade_id: next(iter(run.failed[trial].values()))[-600:]
               for trial in different_trials(lesson) if run.failed[trial]}
    assert not failing, f"Validate fails on correct answers written differently in {lesson}: {failing}"


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks"))
def test_each_broken_rule_fails_a_visible_test_that_names_it(lesson, tried):
    breaks = rule_breaks(lesson, reference_answers(lesson))
    graded = [e.grade_id for e in exercises(nbformat.read(notebook_path("lessons", lesson), as_version=4))]
    assert set(graded) <= set(breaks), f"rule_breaks/{lesson}.py breaks no rule of {sorted(set(graded) - set(breaks))}"
    assert set(breaks) <= set(graded), f"rule_breaks/{lesson}.py names no exercise {sorted(set(breaks) - set(graded))}"

    hidden = hidden_test_cells(nbformat.read(notebook_path("solutions", lesson), as_version=4))
    problems = []
    for trial in break_trials(lesson):
        substring = trial.says
        failed = {i: text for i, text in tried(lesson).failed[trial].items() if i not in hidden}
        if not failed:
            problems.append(f"{trial.label}: every visible test passes")
        elif not any(substring in text for text in failed.values()):
            problems.append(f"{trial.label}: no visible test says {substring!r}; they say:\n"
                            f"{next(iter(failed.values()))[-600:]}")
        elif not any(shown_whole(text, substring) for text in failed.values()):
            problems.append(f"{trial.label}: `nbgrader validate` cuts the line before {substring!r} ends")
    assert not problems, f"Validate passes or stays silent on broken rules of {lesson}:\n" + "\n".join(problems)


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks"))
def test_each_broken_rule_fails_a_hidden_test_too(lesson, tried):
    """An answer tuned until the visible tests pass still loses points for the rule it breaks."""
    hidden = hidden_test_cells(nbformat.read(notebook_path("solutions", lesson), as_version=4))
    escaped = [trial.label for trial in break_trials(lesson) if not hidden & set(tried(lesson).failed[trial])]
    assert not escaped, f"no hidden test of {lesson} fails for these broken rules:\n" + "\n".join(escaped)


@pytest.mark.parametrize("lesson", fixture_lessons(*STUDENTS))
def test_fixture_students_rank_as_a_teacher_would(lesson, tried):
    lost = points_lost(lesson, tried(lesson))
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    total = sum(nbgrader_meta(solution.cells[i]).get("points", 0) for e in exercises(solution) for i in e.tests)
    assert lost["different"] == 0, f"{lesson}: a right answer written differently loses {lost['different']:g} points"
    assert 0 < lost["one_rule_wrong"] < total, f"{lesson}: one rule wrong loses {lost['one_rule_wrong']:g} of {total:g}"
    assert lost["hardcoded"] > lost["one_rule_wrong"], f"{lesson}: hard-coding beats an honest answer"


@pytest.mark.parametrize("lesson", LESSONS)
def test_an_answer_that_computes_nothing_earns_no_point(lesson, tried):
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    tests = {e.grade_id: e.tests for e in exercises(solution)}
    run = tried(lesson)
    earned = [f"{trial.label}: {[nbgrader_meta(solution.cells[i])['grade_id'] for i in passed]}"
              for trial in constant_trials(lesson)
              if (passed := [i for i in tests[trial.grade_id]
                             if i not in run.failed[trial] and nbgrader_meta(solution.cells[i]).get("points")])]
    assert not earned, f"test cells of {lesson} give points to answers that compute nothing:\n" + "\n".join(earned)


def test_answers_that_read_the_lessons_own_tables_fail_the_fortnight(tried):
    """Lesson 07's hard-coder looks the fortnight's runs up in the lesson's `history` (an outside cheater's
    way to two points): the hidden fortnight cells hand the same runs in under other ids."""
    lesson = "07_reflection_loop"
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    fortnight = {i for i, cell in enumerate(solution.cells)
                 if nbgrader_meta(cell).get("grade_id", "").endswith("-hidden-fortnight")}
    run = tried(lesson)
    failed = {i for trial, cells in run.failed.items() if trial.label == "hardcoded" and not trial.released
              for i in cells}
    assert len(fortnight) == 2 and fortnight <= failed, sorted(fortnight - failed)


@pytest.mark.parametrize("lesson", fixture_lessons("rule_breaks")[:1])
def test_validate_names_a_broken_rule(lesson, offline):
    """The kernel shortcut (`tried`) agrees with nbgrader's Validator on one broken answer."""
    reference = reference_answers(lesson)
    grade_id, (substring, rule, answer) = next((g, b[0]) for g, b in rule_breaks(lesson, reference).items())
    _, path = lesson_copy(lesson, {**reference, grade_id: answer}, offline / "lesson")
    failed = validate(path).get("failed", [])
    assert any(substring in f["raw_error"] for f in failed), f"Validate does not say {substring!r} for {rule!r}"


@pytest.mark.parametrize("lesson", fixture_lessons("different")[:1])
def test_validate_passes_answers_written_differently(lesson, offline):
    """The kernel shortcut (`tried`) agrees with nbgrader's Validator on every answer of a lesson at once."""
    _, path = lesson_copy(lesson, fixture_answers("different", lesson), offline / "lesson")
    result = validate(path)
    failed = "\n\n".join(f["raw_error"] for f in result.get("failed", []))
    assert result == {}, f"Validate fails on correct answers written differently:\n{failed or result}"


@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if twins(lesson)])
def test_lab_utils_own_version_of_an_exercise_keeps_its_rules(lesson, offline, tmp_path):
    """Later lessons run on lab_utils' version: a rule it broke would teach one thing and do another."""
    run = run_trials(lesson, tmp_path / lesson, twin_trials(lesson))
    failed = {trial.label: list(texts.values()) for trial, texts in run.failed.items() if texts}
    assert not failed, failed
