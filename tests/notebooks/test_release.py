"""lessons/ is exactly what `make release` makes from solutions/.

The nbgrader round trip (solution full marks, blank zero, partial in between, per lesson) is
test_grading_day.py, which grades a whole class the way an instructor does.
"""

import json
import re
import shutil

import nbformat
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


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_exercise_header_states_its_points(lesson):
    """"### Exercise 3 — … (9 points)": the points of the graded cells up to the next ### header."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    stated, counted, header = {}, {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (headers := re.findall(r"^### .*$", cell.source, re.M)):
            said = re.search(r"\((\d+) points?", headers[-1])
            header = headers[-1] if said else None
            if said:
                stated[header], counted[header] = int(said[1]), 0
        meta = cell.metadata.get("nbgrader", {})
        if header and meta.get("grade"):
            counted[header] += meta.get("points", 0)
    assert stated, f"{lesson} states no exercise's points"
    assert stated == counted, f"{lesson}: the headers' points, then the graded cells' ({counted})"
