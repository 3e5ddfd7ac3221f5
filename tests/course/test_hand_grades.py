"""A hand grade stands after a regrade while what it was given for is unchanged: nbgrader alone asks
for every hand grade again (the grading day regrades one, tests/notebooks/test_grading_day.py)."""

import copy
import shutil

import nbformat
from nbgrader.utils import is_grade, is_solution

from coursetools import interrupted_nbgrader, new_course
from lab_utils.course import autograde
from lab_utils.course.__main__ import main
from lab_utils.course.autograde import graded_copy, graded_for, hand_grades, score
from lab_utils.course.config import gradebook
from lab_utils.course.grades import grade_table
from nbtools import nbgrader_meta, notebook_path

LESSON = "04_measuring_recall"  # it has a written answer


def cells():
    return nbformat.read(notebook_path("solutions", LESSON), as_version=4).cells


def grade_id(cell) -> str:
    return nbgrader_meta(cell)["grade_id"]


ANSWER = "Recall drops because the store forgets."


def hand_in(root, answer: str) -> str:
    """ada's submission of the released lesson with `answer` as its written answer; returns that cell's grade_id."""
    handed_in = nbformat.read(notebook_path("lessons", LESSON, root), as_version=4)
    written = next(c for c in handed_in.cells if c.cell_type == "markdown" and is_solution(c) and is_grade(c))
    written.source = answer
    shutil.copytree(notebook_path("lessons", LESSON, root).parent, root / "submitted" / "ada" / LESSON,
                    dirs_exist_ok=True)
    nbformat.write(handed_in, notebook_path("submitted/ada", LESSON, root))
    return grade_id(written)


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
    written = hand_in(root, ANSWER)
    graded_copy(root, "ada", LESSON).parent.mkdir(parents=True)
    shutil.copy(notebook_path("submitted/ada", LESSON, root), graded_copy(root, "ada", LESSON))
    with gradebook(root) as gb:
        gb.update_or_create_student("ada")
        gb.update_or_create_submission(LESSON, "ada")
        gb.find_grade(written, LESSON, LESSON, "ada").manual_score = 3.0
        gb.db.commit()
    before = hand_grades(root, "ada", LESSON)
    assert before
    monkeypatch.setattr(autograde, "api", interrupted_nbgrader([]))
    assert main(["autograde", "--root", str(root), "--unsafe"]) == 130
    assert hand_grades(root, "ada", LESSON) == before


def test_a_changed_written_answer_keeps_nothing_of_its_old_hand_grade(offline):
    """Its old points would count in every total (autograde's line, grades.csv, feedback) while the row says the
    answer waits for a grade; it is asked for as in a fresh submission, whose points it then has. So is a test whose
    points a person changed (every answer is what they were given for)."""
    root = new_course(offline, [LESSON])
    written = hand_in(root, ANSWER)
    assert main(["autograde", "--root", str(root), "--unsafe"]) == 0
    fresh = score(LESSON, "ada", root)
    assert fresh.waiting == 4
    with gradebook(root) as gb:
        test = next(g for g in gb.find_submission_notebook(LESSON, LESSON, "ada").grades if g.auto_score is not None)
        test.manual_score, test.needs_manual_grade = test.auto_score + 0.5, False  # a test's points changed
        gb.find_grade(written, LESSON, LESSON, "ada").manual_score = 3.0
        gb.find_grade(written, LESSON, LESSON, "ada").needs_manual_grade = False
        gb.find_comment(written, LESSON, LESSON, "ada").manual_comment = "Say why it forgets."
        gb.db.commit()
    for answer in (ANSWER + "\nOne more sentence.", ANSWER):  # changed, then changed back: asked again both times
        hand_in(root, answer)
        assert main(["autograde", "--root", str(root), "--unsafe"]) == 0
        assert score(LESSON, "ada", root) == fresh
        row = grade_table(root).set_index("student").loc["ada"]
        assert (row.score, row.status) == (fresh.score, "needs hand grading (4 points)")
        assert main(["feedback", "--root", str(root)]) == 0
        html = (root / "feedback" / "ada" / LESSON / f"{LESSON}.html").read_text()
        assert "3.0 / 4.0" not in html and "Say why it forgets." not in html
