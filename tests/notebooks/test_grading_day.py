"""The instructor's day through the course CLI: autograde, feedback, grades, for a whole class.

Three students hand in every lesson (complete = the solution, partial = the partial fixture,
blank = the released lesson); a few more hand in broken or late work for the first lesson.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pandas as pd
import pytest

from lab_utils.paths import ROOT
from nbtools import LESSONS, nbgrader_meta, notebook_path, partial_answers, submit, with_answers

FIRST = LESSONS[0]
DUE = "2026-01-15 17:00:00 UTC"


def course_cli(root, *args):
    """`python -m lab_utils.course <args> --root <root>`, writing only to the temp course."""
    env = {**os.environ, "LAB_WORK_DIR": str(root / "work")}
    run = subprocess.run([sys.executable, "-m", "lab_utils.course", *args, "--root", str(root)],
                         capture_output=True, text=True, env=env, cwd=root)
    print(run.stdout, run.stderr, sep="\n")  # shown by pytest when a test fails
    return run


def hand_in(root):
    for lesson in LESSONS:
        released = notebook_path("lessons", lesson, root)
        submit(root, "complete", lesson, nbformat.read(notebook_path("solutions", lesson, root), 4))
        submit(root, "partial", lesson, with_answers(released, partial_answers(lesson)))
        submit(root, "blank", lesson, nbformat.read(released, 4))

    solution = nbformat.read(notebook_path("solutions", FIRST, root), 4)
    submit(root, "broken", FIRST, solution).write_text('{"cells": [', encoding="utf-8")
    renamed = submit(root, "renamed", FIRST, solution)
    renamed.rename(renamed.with_name("my answers.ipynb"))
    submit(root, "typo", FIRST[1:], solution)  # a folder named after no lesson
    copied = nbformat.read(notebook_path("lessons", FIRST, root), 4)
    test = next(c for c in copied.cells if nbgrader_meta(c).get("grade"))
    copied.cells.append(nbformat.from_dict({**test, "id": "a-copy"}))  # to try something out
    submit(root, "copied", FIRST, copied)

    no_tests = nbformat.read(notebook_path("solutions", FIRST, root), 4)
    no_tests.cells = [c for c in no_tests.cells if not (nbgrader_meta(c).get("grade") and c.cell_type == "code")]
    submit(root, "no_tests", FIRST, no_tests)

    late = submit(root, "late", FIRST, solution)
    (late.parent / "timestamp.txt").write_text("2026-01-16 09:30:00.000000 UTC")  # as nbgrader collect writes it


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """A throwaway course, released, with submissions, graded by the CLI the Makefile runs."""
    root = tmp_path_factory.mktemp("term")
    shutil.copytree(ROOT / "solutions", root / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    assert course_cli(root, "release").returncode == 0
    # The due date the way docs/instructors.md sets it: nbgrader's own command, in the course folder.
    nbgrader = Path(sys.executable).with_name("nbgrader")
    subprocess.run([nbgrader, "db", "assignment", "add", FIRST, f"--duedate={DUE}"], cwd=root, check=True)
    hand_in(root)
    autograde = course_cli(root, "autograde")
    feedback = course_cli(root, "feedback")
    grades = course_cli(root, "grades")
    return SimpleNamespace(root=root, autograde=autograde, feedback=feedback, grades=grades,
                           table=pd.read_csv(root / "grades.csv").set_index(["student", "lesson"]))


def test_grades_csv_totals(day):
    assert day.grades.returncode == 0
    table = day.table
    for lesson in LESSONS:
        complete, partial, blank = (table.loc[(s, lesson)] for s in ("complete", "partial", "blank"))
        assert complete.auto_max > 0 and complete.auto_score == complete.auto_max, lesson
        assert 0 < partial.auto_score < partial.auto_max, lesson
        assert blank.score == 0, lesson
    totals = table.groupby("student")[["auto_score", "auto_max"]].sum()
    assert totals.loc["complete", "auto_score"] == totals.loc["complete", "auto_max"]
    assert 0 < totals.loc["partial", "auto_score"] < totals.loc["partial", "auto_max"]
    assert totals.loc["blank", "auto_score"] == 0


def test_broken_submissions_are_named_and_the_rest_graded(day):
    assert day.autograde.returncode == 1, "a submission that could not be graded must fail the command"
    report = day.autograde.stderr.split("not done:\n")[1].splitlines()
    assert len(report) == 4, "the broken submissions, and only they, are reported"
    assert report[0].startswith(f"  broken/{FIRST}: {FIRST}.ipynb is not a valid notebook")
    assert report[1].startswith(f"  copied/{FIRST}: cells copied (test-")
    assert report[2] == f"  renamed/{FIRST}: no {FIRST}.ipynb (found my answers.ipynb; rename it)"
    assert report[3] == f"  typo/{FIRST[1:]}: no lesson is called '{FIRST[1:]}'"
    for student in ("broken", "copied", "renamed"):
        assert day.table.loc[(student, FIRST), "status"].startswith("not graded")
    graded = day.table[day.table.status == "graded"]
    assert len(graded) == 3 * len(LESSONS) + 2


def test_deleted_tests_are_restored_and_late_work_noted(day):
    out = day.autograde.stdout
    assert f"note    no_tests/{FIRST}: graded cells deleted (test-" in out
    no_tests = day.table.loc[("no_tests", FIRST)]
    assert no_tests.auto_score == no_tests.auto_max, "the restored tests ran against the solution"
    assert f"note    late/{FIRST}: submitted 16:30:00 after the due date" in out
    assert day.table.loc[("late", FIRST), "seconds_late"] == 16.5 * 3600
    assert day.table.loc[("complete", FIRST), "seconds_late"] == 0


def test_feedback_html_per_graded_submission(day):
    assert day.feedback.returncode == 0
    for student, lesson in day.table[day.table.status == "graded"].index:
        html = notebook_path(f"feedback/{student}", lesson, day.root).with_suffix(".html")
        assert html.exists(), f"no feedback for {student}/{lesson}"
    assert not (day.root / "feedback" / "broken").exists()
    graded_first = (day.table.status == "graded").xs(FIRST, level="lesson").sum()
    one_lesson = course_cli(day.root, "feedback", "--lesson", FIRST)
    assert f"feedback: {graded_first} of {graded_first} submissions done" in one_lesson.stdout


def test_where_the_class_lost_points(day):
    exercises = pd.read_csv(day.root / "grades_by_exercise.csv")
    assert set(exercises.lesson) == set(LESSONS)
    assert exercises.share_lost.between(0, 1).all()
    first = exercises[exercises.lesson == FIRST]
    # The blank student lost every point; the complete ones (complete, no_tests, late) none.
    assert (first.points_lost >= first.max_score).all()
    assert (day.root / "grades_by_exercise.png").stat().st_size > 10_000
