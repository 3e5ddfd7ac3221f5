"""A hand grade stands after a regrade while what it was given for is unchanged: nbgrader alone asks
for every hand grade again (the grading day regrades one, tests/notebooks/test_grading_day.py)."""

import copy
import shutil

import nbformat
from nbgrader.utils import is_grade, is_solution

from coursetools import interrupted_nbgrader, new_course
from lab_utils.course import autograde
from lab_utils.course.__main__ import main
from lab_utils.course.autograde import graded_copy, graded_for, hand_grades
from lab_utils.course.config import gradebook
from nbtools import nbgrader_meta, notebook_path

LESSON = "04_measuring_recall"  # it has a written answer


def cells():
    return nbformat.read(notebook_path("solutions", LESSON), as_version=4).cells


def grade_id(cell) -> str:
    return nbgrader_meta(cell)["grade_id"]


def test_a_written_answer_changed_since_its_hand_grade_is_asked_again():
    notebook = cells()
    written = next(c for c in notebook if c.cell_type == "markdown" and is_solution(c) and is_grade(c))
    marked = {grade_id(written): None}
    before = graded_for(notebook, marked)
    assert graded_for(copy.deepcopy(notebook), marked) == before, "the same answer graded again"
    written.source += "\nOne more sentence."
    assert graded_for(notebook, marked) != before


def test_a_test_whose_points_a_person_changed_is_asked_again_when_an_answer_or_its_score_changed():
    notebook = cells()
    test = next(c for c in notebook if is_grade(c) and not is_solution(c))
    before = graded_for(notebook, {grade_id(test): 1.0})
    assert graded_for(notebook, {grade_id(test): 0.0}) != before, "the tests now score it otherwise"
    answer = next(c for c in notebook if c.cell_type == "code" and is_solution(c))
    answer.source += "\n# changed"
    assert graded_for(notebook, {grade_id(test): 1.0}) != before, "the student handed in another answer"


def test_a_hand_grade_outlives_an_autograde_stopped_by_ctrl_c(tmp_path, monkeypatch):
    """What each hand grade was given for is read from the autograded copy, which nbgrader removes when a
    Ctrl-C stops it: the next autograde would ask for every hand grade again."""
    root = new_course(tmp_path, [LESSON])
    handed_in = nbformat.read(notebook_path("lessons", LESSON, root), as_version=4)
    written = next(c for c in handed_in.cells if c.cell_type == "markdown" and is_solution(c) and is_grade(c))
    written.source = "Recall drops because the store forgets."
    shutil.copytree(notebook_path("lessons", LESSON, root).parent, root / "submitted" / "ada" / LESSON)
    nbformat.write(handed_in, notebook_path("submitted/ada", LESSON, root))
    graded_copy(root, "ada", LESSON).parent.mkdir(parents=True)
    nbformat.write(handed_in, graded_copy(root, "ada", LESSON))
    with gradebook(root) as gb:
        gb.update_or_create_student("ada")
        gb.update_or_create_submission(LESSON, "ada")
        gb.find_grade(grade_id(written), LESSON, LESSON, "ada").manual_score = 3.0
        gb.db.commit()
    before = hand_grades(root, "ada", LESSON)
    assert before
    monkeypatch.setattr(autograde, "api", interrupted_nbgrader([]))
    assert main(["autograde", "--root", str(root), "--unsafe"]) == 130
    assert hand_grades(root, "ada", LESSON) == before
