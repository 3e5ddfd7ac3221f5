"""Every notebook runs: solutions cleanly, lessons failing only where the student writes code."""

import pytest

from nbtools import LESSONS, error_text, errors, is_test, nbgrader_meta, stray_errors

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)


# Last lesson first: test_exercises asks for the same runs (the `tried` fixture) first lesson first,
# so when the two modules run on two workers, each runs about half of them rather than wait on the other.
@pytest.mark.parametrize("lesson", LESSONS[::-1])
def test_solution_runs_offline(lesson, tried):
    nb = tried(lesson).notebook
    assert not errors(nb), "\n\n".join(error_text(nb.cells[index])[-2000:] for index, _, _ in errors(nb))
    # Validate also lists a test cell that wrote to stderr: a warning, or a lab_utils module rebound.
    written = {nbgrader_meta(cell)["grade_id"]: out["text"] for cell in nb.cells if is_test(cell)
               for out in cell.get("outputs", []) if out.get("output_type") == "stream" and out.get("name") == "stderr"}
    assert not written, written


# Each released lesson runs once per test run (the `released` fixture), which test_student_view opens
# in JupyterLab, first lesson first: last lesson first here, for the same reason as above.
@pytest.mark.parametrize("lesson", LESSONS[::-1])
def test_lesson_fails_only_in_exercises(lesson, released):
    nb = released(lesson)
    assert errors(nb), "an unfinished lesson must fail loudly in its exercises"
    assert not stray_errors(nb)
