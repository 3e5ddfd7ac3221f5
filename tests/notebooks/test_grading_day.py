"""The instructor's grading day through the course CLI, for a whole class, in two worker processes.

Every lesson gets a complete submission (the solution) and a blank one (the release). The first
lesson also gets the fixtures' students, `different` (right, written unlike the reference),
`one_rule_wrong` and `hardcoded` (the visible tests' literals), whose points must be those that
test_exercises works out for every lesson in one kernel; the first lesson with a written answer
gets `different` too, whose answer waits for a hand grade. The first lesson also gets the cases an
instructor meets: broken JSON, a renamed file, a folder named after no lesson, copied cells, a
deleted, an edited and a renamed test, a deleted answer, a late submission under a "zero" late
penalty set in nbgrader_config.py (also in the lesson with a written answer, hand-graded before a
regrade), a late one whose timestamp.txt is deleted before a regrade, a timestamp.txt that holds
no time, an input-transformer cheat, a wrapper of the reference, and two students whose
resubmission fails after an earlier success.
grades.csv must say what a careful instructor would conclude about each.
"""

import re
from types import SimpleNamespace

import nbformat
import pandas as pd
import pytest

from coursetools import course_cli, graded_cell, new_course, solution
from lab_utils.course.config import gradebook
from lab_utils.course.feedback import feedback_all, stale
from lab_utils.course.grades import grade_table
from nbtools import (LESSONS, STUDENTS, fixture_answers, nbgrader_meta, notebook_path, points_lost, submit,
                     with_answers)

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)

FIRST = LESSONS[0]
DUE = "2026-01-15 17:00:00 UTC"


def has_written_answer(lesson: str) -> bool:
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    return any(nbgrader_meta(c).get("solution") and nbgrader_meta(c).get("grade") for c in nb.cells)


WRITTEN = next(lesson for lesson in LESSONS if has_written_answer(lesson))
CHEAT = 'get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])\n'
WRAPPER = ('import importlib\n\n'
           'def memory_from_json(line, where):\n'
           '    return getattr(importlib.import_module("lab_utils.memory"), "memory_from" + "_json")(line, where)\n')


def points_of(lesson: str, answer: str) -> float:
    """The points of an exercise's test cells (test-<answer>, test-<answer>-hidden-...)."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    return sum(nbgrader_meta(c).get("points", 0) for c in nb.cells
               if re.fullmatch(rf"test-{answer}(-hidden-.+)?", nbgrader_meta(c).get("grade_id", "")))


def first_lesson_cases(root):
    sol = lambda: solution(root, FIRST)  # noqa: E731 (a fresh copy each time)
    released = notebook_path("lessons", FIRST, root)
    submit(root, "broken", FIRST, sol()).write_text('{"cells": [', encoding="utf-8")
    renamed = submit(root, "renamed", FIRST, sol())
    renamed.rename(renamed.with_name("my answers.ipynb"))
    submit(root, "typo", FIRST[1:], sol())  # a folder named after no lesson
    copied = sol()
    copied.cells.append(nbformat.from_dict({**graded_cell(copied, "test-top-k"), "id": "a-copy"}))
    submit(root, "copied", FIRST, copied)

    tampered = sol()  # one test cell deleted, one edited, one renamed
    tampered.cells.remove(graded_cell(tampered, "test-top-k-hidden-input"))
    graded_cell(tampered, "test-top-k-hidden-ties").source = "pass"
    nbgrader_meta(graded_cell(tampered, "test-top-k")).update(grade_id="test-top-k-mine")
    submit(root, "tampered", FIRST, tampered)
    no_answer = sol()
    no_answer.cells = [c for c in no_answer.cells if "top-k" not in nbgrader_meta(c).get("grade_id", "")]
    submit(root, "no_answer", FIRST, no_answer)

    for student in ("late", "pardoned"):
        late = submit(root, student, FIRST, sol())
        (late.parent / "timestamp.txt").write_text("2026-01-16 09:30:00.000000 UTC")  # as nbgrader collect writes it
    garbled = submit(root, "garbled_time", FIRST, sol())
    (garbled.parent / "timestamp.txt").write_text("the day after tomorrow")
    cheat = with_answers(released, {})
    graded_cell(cheat, "memory-from-json").source = graded_cell(sol(), "memory-from-json").source
    graded_cell(cheat, "top-k").source = graded_cell(sol(), "top-k").source
    graded_cell(cheat, "choose-min-score").source += "\n" + CHEAT
    submit(root, "cheat", FIRST, cheat)
    wrapper = sol()
    graded_cell(wrapper, "memory-from-json").source = WRAPPER
    submit(root, "wrapper", FIRST, wrapper)
    for student in ("crash", "broken_again"):
        submit(root, student, FIRST, sol())


def resubmit_badly(root):
    """Two students hand in again after a good grade: nbgrader fails on one (a link to a file that
    is not there, which it cannot copy), the other is not JSON."""
    crash = notebook_path("submitted/crash", FIRST, root)
    (crash.parent / "data.csv").symlink_to(root / "no such file.csv")
    notebook_path("submitted/broken_again", FIRST, root).write_text("{", encoding="utf-8")


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """A throwaway course, released, handed in, graded, regraded after bad resubmissions."""
    root = new_course(tmp_path_factory.mktemp("term"), LESSONS, 'c.LateSubmissionPlugin.penalty_method = "zero"')
    with gradebook(root) as gb:
        gb.update_or_create_assignment(FIRST, duedate=DUE)
        gb.update_or_create_assignment(WRITTEN, duedate=DUE)
    for lesson in LESSONS:
        released = notebook_path("lessons", lesson, root)
        submit(root, "complete", lesson, solution(root, lesson))
        submit(root, "blank", lesson, nbformat.read(released, 4))
    for student, lesson in [*((student, FIRST) for student in STUDENTS), ("different", WRITTEN)]:
        answers = fixture_answers(student, lesson)
        submit(root, student, lesson, with_answers(notebook_path("lessons", lesson, root), answers))
    first_lesson_cases(root)
    late = submit(root, "late", WRITTEN, solution(root, WRITTEN))
    (late.parent / "timestamp.txt").write_text("2026-01-16 09:30:00.000000 UTC")
    autograde = course_cli(root, "autograde", "--jobs", "2")
    hand_grade(root, "late", WRITTEN)
    hand_graded = grade_table(root).set_index(["student", "lesson"])  # before any regrade
    resubmit_badly(root)
    # An extension granted as autograde's message on a bad timestamp.txt says: the file deleted.
    (notebook_path("submitted/pardoned", FIRST, root).parent / "timestamp.txt").unlink()
    again = course_cli(root, "autograde", "--jobs", "2", "--student", "crash", "--student", "broken_again",
                       "--student", "late", "--student", "pardoned")
    grades = course_cli(root, "grades")
    feedback = course_cli(root, "feedback", "--lesson", FIRST)
    return SimpleNamespace(root=root, autograde=autograde, again=again, grades=grades, feedback=feedback,
                           hand_graded=hand_graded,
                           table=pd.read_csv(root / "grades.csv").set_index(["student", "lesson"]))


def hand_grade(root, student, lesson):
    """Full marks for every written answer, as the Formgrader saves them."""
    with gradebook(root) as gb:
        for grade in gb.find_submission_notebook(lesson, lesson, student).grades:
            if grade.needs_manual_grade:
                grade.manual_score, grade.needs_manual_grade = grade.max_score, False
        gb.db.commit()


def row(day, student, lesson=FIRST):
    return day.table.loc[(student, lesson)]


def test_complete_full_blank_zero_and_hand_grading_waits(day):
    assert day.grades.returncode == 0
    for lesson in LESSONS:
        complete, blank = row(day, "complete", lesson), row(day, "blank", lesson)
        assert complete.auto_max > 0 and complete.auto_score == complete.auto_max, lesson
        assert blank.score == 0 and blank.status == "graded", lesson
        # The solution handed in as it is: a person should look at it.
        assert complete.status.startswith("flagged: ") and "near-copy of the reference solution" in complete.status
        written = complete.max_score - complete.auto_max
        assert (f"{written:g} points wait for hand grading" in complete.status) == bool(written), lesson
    waiting = re.search(r"^  (\d+) points wait for hand grading \(Formgrader\)", day.autograde.stdout, re.M)
    expected = sum(row(day, "complete", lesson).max_score - row(day, "complete", lesson).auto_max
                   for lesson in LESSONS)
    assert waiting and float(waiting[1]) >= expected > 0, "the summary counts the points waiting for hands"


def test_written_answers_wait_for_hand_grading(day):
    first, written = row(day, "different"), row(day, "different", WRITTEN)
    assert first.status == "graded", "a lesson with no written answer needs no hand"
    assert written.status == f"needs hand grading ({written.max_score - written.auto_max:g} points)"


def test_fixture_students_get_the_points_test_exercises_works_out(day, tried):
    """nbgrader's autograde and nbtools.run_trials agree, so test_exercises may rank the fixture
    students of every lesson in one kernel instead of grading each in a sandbox."""
    lost = points_lost(FIRST, tried(FIRST))
    graded = {student: row(day, student).auto_max - row(day, student).auto_score for student in STUDENTS}
    assert graded == lost
    assert lost["different"] == 0 < lost["one_rule_wrong"] < lost["hardcoded"]


def test_unreadable_submissions_are_named_and_the_rest_graded(day):
    assert day.autograde.returncode == 1, "a submission that could not be graded must fail the command"
    report = day.autograde.stderr.split("not done:\n")[1].splitlines()
    assert report[0].startswith(f"  broken/{FIRST}: {FIRST}.ipynb is not a valid notebook (NotJSONError")
    assert report[1:] == [
        f"  copied/{FIRST}: cells copied (test-top-k): nbgrader cannot tell a copy from its original",
        f"  garbled_time/{FIRST}: timestamp.txt reads 'the day after tomorrow', which is not a time: write the "
        "time as nbgrader collect does (2026-01-16 09:30:00.000000 UTC), or delete the file to grade the "
        "submission as on time",
        f"  no_answer/{FIRST}: answer cells deleted (top-k): nbgrader cannot grade without them",
        f"  renamed/{FIRST}: no {FIRST}.ipynb (found my answers.ipynb; rename it)",
        f"  typo/{FIRST[1:]}: no lesson is called '{FIRST[1:]}'",
    ]
    for student in ("broken", "copied", "garbled_time", "no_answer", "renamed"):
        assert row(day, student).status.startswith("not graded: "), student
        assert pd.isna(row(day, student).score), "no points for what was not graded"


@pytest.mark.parametrize("change", ["test-top-k-hidden-input deleted", "test-top-k-hidden-ties edited",
                                    "test-top-k renamed to test-top-k-mine"])
def test_changed_tests_are_flagged_and_run_as_released(day, change):
    tampered = row(day, "tampered")
    assert tampered.status.startswith("flagged: ") and f"test cell {change}" in tampered.status
    assert tampered.auto_score == tampered.auto_max, "the released tests ran against right answers"
    assert "MissingIDFieldWarning" not in day.autograde.stderr, "a cell put back has an id, as nbformat expects"


def test_an_input_transformer_is_flagged(day):
    cheat = row(day, "cheat")
    assert cheat.status.startswith("flagged: test-choose-min-score")
    assert "did not run as released" in cheat.status
    assert "test-choose-min-score did not run as released" in cheat.notes, "every cell is named in the notes"
    assert ("answer choose-min-score can get around the grading: .input_transformers_cleanup; get_ipython; read it"
            in cheat.notes), "the cell that did it is named, read outside the kernel"


def test_the_cheat_earns_nothing_for_the_tests_it_hid(day):
    cheat = row(day, "cheat")
    assert cheat.auto_score <= cheat.auto_max - points_of(FIRST, "choose-min-score")


def test_a_wrapper_of_the_reference_earns_nothing_for_its_exercise(day):
    wrapper = row(day, "wrapper")
    assert wrapper.auto_score <= wrapper.auto_max - points_of(FIRST, "memory-from-json")
    assert ("test-memory-from-json: the answer reached the lab_utils reference lab_utils.memory.memory_from_json"
            in wrapper.status), "the instructor is told why, not only shown fewer points"
    assert (f"FLAG    wrapper/{FIRST}: test-memory-from-json: the answer reached the lab_utils reference"
            in day.autograde.stdout), "autograde says so the day it grades, as for every other flag"


def test_late_penalty_from_the_config_survives_regrading(day):
    late = row(day, "late")
    assert late.score == 0 and late.penalty == late.auto_max and late.seconds_late == 16.5 * 3600
    assert f"note    late/{FIRST}: submitted 16 h 30 min after the due date, {late.auto_max:g} points off" \
        in day.again.stdout
    assert row(day, "complete").penalty == 0


def test_a_deleted_timestamp_makes_a_regraded_submission_on_time(day):
    pardoned = row(day, "pardoned")
    assert pardoned.seconds_late == 0 and pardoned.penalty == 0 and pardoned.score == pardoned.auto_max, \
        "nbgrader would keep the time it read at the first grading"
    assert f"note    pardoned/{FIRST}: submitted" in day.autograde.stdout, "it was late at first"


def test_a_zero_late_penalty_takes_a_hand_grade_given_after_autograde_too(day):
    late = day.hand_graded.loc[("late", WRITTEN)]  # the solution: flagged as its near-copy
    assert not late.needs_manual_grade and late.auto_score == late.auto_max < late.max_score
    assert late.score == 0 and late.penalty == late.max_score, "the written answer's points are late too"


def test_a_hand_grade_stands_when_the_same_answer_is_graded_again(day):
    late = row(day, "late", WRITTEN)
    assert not late.needs_manual_grade and "hand grading" not in late.status, \
        "nbgrader asks for it again after a regrade; the answer did not change"
    assert late.score == 0 and late.penalty == late.max_score


def test_the_lms_file_holds_final_grades_only(day):
    canvas = pd.read_csv(day.root / "grades_canvas.csv")
    canvas = canvas[canvas.Student != "Points Possible"].set_index("SIS Login ID")
    for (student, lesson), grade in day.table.iterrows():
        sent = canvas.loc[student, lesson]
        assert (sent == grade.score) if grade.status == "graded" else pd.isna(sent), f"{student}/{lesson}"


def test_a_failed_resubmission_replaces_the_old_grade(day):
    assert day.again.returncode == 1
    crash, broken = row(day, "crash"), row(day, "broken_again")
    assert crash.status.startswith("not graded: nbgrader failed (FileNotFoundError: ")
    assert f"{FIRST}/data.csv'" in crash.status, "the failure names the file"
    assert broken.status.startswith(f"not graded: {FIRST}.ipynb is not a valid notebook")
    assert pd.isna(crash.score) and pd.isna(broken.score)
    canvas = pd.read_csv(day.root / "grades_canvas.csv").set_index("SIS Login ID")
    assert pd.isna(canvas.loc["crash", FIRST]), "no stale grade reaches the LMS"


def test_feedback_only_from_current_grades(day):
    assert day.feedback.returncode == 1
    first = day.table.xs(FIRST, level="lesson")
    for student, status in first.status.items():
        html = notebook_path(f"feedback/{student}", FIRST, day.root).with_suffix(".html")
        assert html.exists() == (not status.startswith("not graded") and status != "no submission"), student
    assert f"broken_again/{FIRST}: its last autograde failed" in day.feedback.stderr
    assert f"broken/{FIRST}: its last autograde failed" in day.feedback.stderr, "listed though never autograded"
    shown = notebook_path("feedback/blank", FIRST, day.root).with_suffix(".html").read_text(encoding="utf-8")
    assert "Checked when your notebook is graded" in shown and "BEGIN HIDDEN TESTS" not in shown, \
        "a hidden test's header and outcome, not its code: the tests stay the course's"
    # nbgrader release_feedback needs a timestamp.txt, which a hand-placed submission lacks.
    assert (day.root / "feedback" / "complete" / FIRST / "timestamp.txt").exists()



def test_feedback_says_when_points_still_wait_for_hand_grading(day):
    waiting = row(day, "different", WRITTEN)
    made = {o.student: o for o in feedback_all(day.root, WRITTEN, ["complete", "different"])}
    assert set(made) == {"complete", "different"}, "the students asked for, alone"
    assert made["different"].notes == [f"{waiting.max_score - waiting.auto_max:g} points still wait for hand "
                                       "grading: this feedback shows them as none"]

def test_where_the_class_lost_points(day):
    exercises = pd.read_csv(day.root / "grades_by_exercise.csv")
    assert set(exercises.lesson) == set(LESSONS)
    assert exercises.share_lost.between(0, 1).all()
    first = exercises[exercises.lesson == FIRST]
    assert (first.points_lost >= first.max_score).all(), "the blank student lost every point"
    statuses = day.table.xs(FIRST, level="lesson").status
    current = (~statuses.str.startswith(("not graded", "no submission"))).sum()
    assert (first.graded + first.pending == current).all(), \
        "only a current grade counts: not a failed regrade's old rows (crash, broken_again)"
    assert (day.root / "grades_by_exercise.png").stat().st_size > 10_000


def test_a_grade_whose_autograded_copy_is_gone_is_no_grade(day):
    """`make clean` removes autograded/: the gradebook still holds points, but not the evidence the
    flags are read from. Both the table and feedback say to grade again."""
    graded = notebook_path("autograded/cheat", FIRST, day.root).parent
    aside = graded.with_name("aside")
    graded.rename(aside)
    try:
        table = grade_table(day.root).set_index(["student", "lesson"])
        why = stale(day.root, "cheat", FIRST, {})
    finally:
        aside.rename(graded)
    assert table.loc[("cheat", FIRST), "status"] == "not graded: its autograded copy is gone (run `make autograde`)"
    assert pd.isna(table.loc[("cheat", FIRST), "score"]), "a flagged cheat must not turn into a clean grade"
    assert why == "not autograded (or its autograded copy was removed): run `make autograde` first"


def test_a_submission_handed_in_again_has_no_grade_until_graded_again(day):
    """Last in the module: it hands a notebook in again after the others read the day's results."""
    again = notebook_path("submitted/complete", FIRST, day.root)
    again.touch()
    try:
        grades = course_cli(day.root, "grades")
        table = pd.read_csv(day.root / "grades.csv").set_index(["student", "lesson"])
    finally:
        graded = notebook_path("autograded/complete", FIRST, day.root)
        graded.touch()
    assert grades.returncode == 0
    assert table.loc[("complete", FIRST), "status"].startswith("not graded: handed in again since it was graded")
    assert pd.isna(table.loc[("complete", FIRST), "score"])
