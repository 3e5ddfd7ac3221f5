"""lessons/ is exactly what `make release` makes from solutions/.

The nbgrader round trip (solution full marks, blank zero, partial in between, per lesson) is
test_grading_day.py, which grades a whole class the way an instructor does.
"""

import json
import shutil

import pytest

from lab_utils import course
from lab_utils.paths import ROOT
from nbtools import LESSONS, notebook_path


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
