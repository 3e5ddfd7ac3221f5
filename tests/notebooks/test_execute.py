"""Every notebook runs: solutions cleanly, lessons failing only where the student writes code."""

import pytest

from nbtools import CHROMIUM, LESSONS, error_text, errors, execute, notebook_path, stray_errors

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)


# Last lesson first: test_exercises asks for the same runs (the `tried` fixture) first lesson first,
# so when the two modules run on two workers, each runs about half of them rather than wait on the other.
@pytest.mark.parametrize("lesson", LESSONS[::-1])
def test_solution_runs_offline(lesson, tried):
    nb = tried(lesson).notebook
    assert not errors(nb), "\n\n".join(error_text(nb.cells[index])[-2000:] for index, _, _ in errors(nb))


# test_student_view runs each lesson in JupyterLab and checks the same of what the browser shows;
# without a browser, the lessons run here instead, so that each runs once per test run.
@pytest.mark.skipif(CHROMIUM.exists(), reason="the browser tests run every lesson and check this")
@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_fails_only_in_exercises(lesson, offline):
    nb = execute(notebook_path("lessons", lesson), offline / "run", allow_errors=True)
    assert errors(nb), "an unfinished lesson must fail loudly in its exercises"
    assert not stray_errors(nb)
