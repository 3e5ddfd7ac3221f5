"""The nbgrader round trip, and lessons/ being exactly what `make release` makes."""

import json
import shutil

import nbformat
import pytest

from lab_utils import course
from lab_utils.paths import ROOT
from nbtools import LESSONS, notebook_path, partial_answers, submit, with_answers


@pytest.fixture(scope="module")
def course_root(tmp_path_factory):
    """A throwaway course: a copy of solutions/, released by the same code as `make release`."""
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "solutions", root / "solutions")
    course.release(root)
    return root


@pytest.mark.parametrize("lesson", LESSONS)
def test_lessons_are_what_release_makes(lesson, course_root):
    generated = json.loads(notebook_path("lessons", lesson, course_root).read_text())
    committed = json.loads(notebook_path("lessons", lesson).read_text())
    assert committed == generated, f"lessons/{lesson} is stale: run `make release` and commit"


@pytest.mark.parametrize("lesson", LESSONS)
def test_round_trip_scores(lesson, course_root, offline):
    released = notebook_path("lessons", lesson, course_root)
    submit(course_root, "full", lesson, nbformat.read(notebook_path("solutions", lesson, course_root), 4))
    submit(course_root, "blank", lesson, nbformat.read(released, 4))
    submit(course_root, "partial", lesson, with_answers(released, partial_answers(lesson)))

    full = course.autograde(lesson, "full", course_root)
    blank = course.autograde(lesson, "blank", course_root)
    partial = course.autograde(lesson, "partial", course_root)

    assert full.auto_max > 0
    assert full.auto_score == full.auto_max, f"the solution scores {full.auto_score}/{full.auto_max}"
    assert blank.auto_score == 0
    assert 0 < partial.auto_score < full.auto_max, f"the partial submission scores {partial.auto_score}"
