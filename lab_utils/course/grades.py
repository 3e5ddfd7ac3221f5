"""grades.csv: one row per student and lesson that says the truth about the submission.

`status` is `graded`, `needs hand grading (N points)`, `not graded: <reason>`,
`flagged: <reason>` (tampering, or a near-copy for a person to review) or `no submission`.
A submission in a folder not named as its lesson is not graded; the row of the lesson it is for says where it is.
Points come from the gradebook; a submission whose last autograde failed, or that was handed in
again since it was graded, shows no points, whatever an earlier run left there.
grades_by_exercise.csv and .png show where the class lost points.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from nbgrader.api import MissingEntry

from lab_utils.course import integrity, similarity, tampering
from lab_utils.course.autograde import graded_copy, handed_in_again, points, statuses
from lab_utils.course.config import gradebook, late_penalty, lesson_names, submissions
from lab_utils.paths import ROOT

COLUMNS = ["student", "lesson", "score", "max_score", "auto_score", "auto_max", "penalty", "seconds_late",
           "needs_manual_grade", "status", "notes"]


def _flags(root: Path, student: str, lesson: str, near_copies: dict[str, str]) -> list[str]:
    """What a person should look at in a graded submission (its autograded copy is there)."""
    found = integrity.flags(graded_copy(root, student, lesson)) + tampering.of_submission(root, student, lesson)
    return found + ([near_copies[student]] if student in near_copies else [])


def misplaced(root: Path, lessons: list[str]) -> dict[str, list[tuple[str, str | None]]]:
    """student -> (folder, the lesson it is meant for, or None) of each submitted/<student>/<folder>/ that no lesson
    is called: autograde cannot grade it, and the lesson's row would otherwise say there is no submission."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    for student, folder in submissions(root):
        if folder not in lessons:
            found.setdefault(student, []).append((folder, meant_for(root / "submitted" / student / folder, lessons)))
    return found


def meant_for(folder: Path, lessons: list[str]) -> str | None:
    """The lesson whose notebook a misnamed submission folder holds, else the one its name is close to."""
    held = sorted(p.stem for p in folder.glob("*.ipynb") if p.stem in lessons)
    return (held or difflib.get_close_matches(folder.name, lessons, n=1, cutoff=0.8) or [None])[0]


def point_to_misplaced(rows: list[dict], student: str, folder: str, lesson: str | None) -> None:
    """Say where the student's misnamed folder is: as the status of the lesson it is meant for when that row has
    no submission of its own, else in the notes (of every row of the student's when no lesson is recognised)."""
    where = f"submitted/{student}/{folder}/ is not named as a lesson of lessons/"
    for row in rows:
        if row["student"] != student or lesson not in (None, row["lesson"]):
            continue
        if lesson and row["status"] == "no submission":
            row.update(score=math.nan, auto_score=math.nan,
                       status=f"not graded: {where}: rename it to submitted/{student}/{lesson}/, then `make autograde`")
        else:
            row["notes"] = "; ".join(filter(None, [row["notes"], f"{where}, and is not graded"]))


def grade_table(root: Path = ROOT) -> pd.DataFrame:
    """One row per student and lesson: the gradebook's points, or why there are none."""
    root = Path(root)
    lessons = lesson_names(root)
    last = statuses(root)
    late = late_penalty(root)
    handed_in = set(submissions(root))
    rows = []
    with gradebook(root) as gb:
        students = {s.id for s in gb.students} | {student for student, _ in handed_in}
        maxima = {a.name: (a.max_score, a.max_code_score) for a in gb.assignments}
        copies = {lesson: similarity.near_copies(root, lesson) for lesson in lessons}
        for student in sorted(students):
            for lesson in lessons:
                max_score, auto_max = maxima.get(lesson, (math.nan, math.nan))
                outcome = last.get((student, lesson), {})
                row = dict(student=student, lesson=lesson, score=0.0, max_score=max_score, auto_score=0.0,
                           auto_max=auto_max, penalty=0.0, seconds_late=0.0, needs_manual_grade=False,
                           status="no submission", notes="; ".join(outcome.get("notes", [])))
                rows.append(row)
                if outcome.get("problem"):
                    row.update(score=math.nan, auto_score=math.nan, status=f"not graded: {outcome['problem']}")
                    continue
                if handed_in_again(root, student, lesson):
                    row.update(score=math.nan, auto_score=math.nan,
                               status="not graded: handed in again since it was graded (run `make autograde`)")
                    continue
                try:
                    s = gb.find_submission(lesson, student)
                except MissingEntry:
                    if (student, lesson) in handed_in:
                        row.update(score=math.nan, auto_score=math.nan,
                                   status="not graded: not autograded yet (run `make autograde`)")
                    continue
                if not graded_copy(root, student, lesson).exists():  # removed (make clean): no evidence, no flags
                    row.update(score=math.nan, auto_score=math.nan,
                               status="not graded: its autograded copy is gone (run `make autograde`)")
                    continue
                p = points(s, late)
                row.update(score=p.score, auto_score=p.auto_score, penalty=p.penalty, seconds_late=p.seconds_late,
                           needs_manual_grade=s.needs_manual_grade,
                           status=f"needs hand grading ({p.waiting:g} points)" if p.waiting else "graded")
                flags = _flags(root, student, lesson, copies[lesson])
                if flags:
                    waiting = [f"{p.waiting:g} points wait for hand grading"] if p.waiting else []
                    row["status"] = f"flagged: {'; '.join(integrity.in_short(flags) + waiting)}"
                    row["notes"] = "; ".join(filter(None, [row["notes"], *flags]))
    for student, folders in misplaced(root, lessons).items():
        for folder, lesson in folders:
            point_to_misplaced(rows, student, folder, lesson)
    return pd.DataFrame(rows, columns=COLUMNS)


def exercise_table(root: Path, grades: pd.DataFrame) -> pd.DataFrame:
    """Where the class lost points: every graded cell over the submissions that `grades` (the table
    of grades.csv) gives a grade. The gradebook also keeps the rows of an autograde that failed,
    or that a later submission made stale: those do not count.

    A written answer that still waits for its hand grade counts as pending, not as points lost.
    """
    current = set(grades.loc[~grades.status.str.startswith(("not graded", "no submission")), ["student", "lesson"]]
                  .itertuples(index=False, name=None))
    rows = []
    with gradebook(root) as gb:
        for lesson in lesson_names(root):
            try:
                cells = gb.find_notebook(lesson, lesson).grade_cells
            except MissingEntry:
                continue
            for cell in cells:
                kept = [g for g in cell.grades if (g.student.id, lesson) in current]
                scores = [g.score for g in kept if not g.needs_manual_grade]
                lost = sum(cell.max_score - s for s in scores)
                rows.append(dict(lesson=lesson, exercise=cell.name, max_score=cell.max_score,
                                 graded=len(scores), pending=len(kept) - len(scores),
                                 mean_score=sum(scores) / len(scores) if scores else math.nan,
                                 points_lost=lost,
                                 share_lost=lost / (cell.max_score * len(scores)) if scores else math.nan))
    columns = ["lesson", "exercise", "max_score", "graded", "pending", "mean_score", "points_lost", "share_lost"]
    return pd.DataFrame(rows, columns=columns).round(3)


def exercise_figure(table: pd.DataFrame) -> Figure:
    """A bar per graded cell, in course order: the share of its points the class lost."""
    fig = Figure(figsize=(7, 0.3 * len(table) + 1.2))
    ax = fig.subplots()
    pending = table["pending"].map(lambda n: f" ({n} to hand-grade)" if n else "")
    ax.barh(table["lesson"].str[:2] + " " + table["exercise"] + pending, table["share_lost"].fillna(0),
            color="#c0504d")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the points lost")
    ax.set_title("Where the class lost points")
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    return fig


GRADE_FILES = ("grades.csv", "grades_by_exercise.csv", "grades_by_exercise.png")


def write_grades(root: Path = ROOT) -> pd.DataFrame:
    """GRADE_FILES in the course root; returns the table of grades.csv."""
    root = Path(root)
    grades = grade_table(root)
    exercises = exercise_table(root, grades)
    grades.to_csv(root / GRADE_FILES[0], index=False)
    exercises.to_csv(root / GRADE_FILES[1], index=False)
    exercise_figure(exercises).savefig(root / GRADE_FILES[2], dpi=120)
    return grades
