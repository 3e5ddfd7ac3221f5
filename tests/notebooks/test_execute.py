"""Every notebook runs: solutions cleanly, lessons failing only where the student writes code."""

import pytest

from nbtools import LESSONS, errors, execute, notebook_path


@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_runs_offline(lesson, offline):
    nb = execute(notebook_path("solutions", lesson), offline / "run")
    assert not errors(nb)


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_fails_only_in_exercises(lesson, offline):
    nb = execute(notebook_path("lessons", lesson), offline / "run", allow_errors=True)
    found = errors(nb)
    assert found, "an unfinished lesson must fail loudly in its exercises"
    for index, meta, ename in found:
        in_exercise = meta.get("solution") or meta.get("grade")
        assert in_exercise and ename == "NotImplementedError", (
            f"cell {index} ({meta.get('grade_id', 'not an exercise')}) raised {ename}")
