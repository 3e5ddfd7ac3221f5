"""Every notebook runs: solutions cleanly, lessons failing only where the student writes code."""

import pytest

from nbtools import LESSONS, error_text, errors, execute, notebook_path, stray_errors

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)


@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_runs_offline(lesson, executed_solution):
    nb = executed_solution(lesson)
    assert not errors(nb), "\n\n".join(error_text(nb.cells[index])[-2000:] for index, _, _ in errors(nb))


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_fails_only_in_exercises(lesson, offline):
    nb = execute(notebook_path("lessons", lesson), offline / "run", allow_errors=True)
    assert errors(nb), "an unfinished lesson must fail loudly in its exercises"
    assert not stray_errors(nb)
