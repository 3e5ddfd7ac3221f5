"""The grades for the LMS: a CSV that Canvas's gradebook import reads, as an nbgrader export plugin.

`make grades` writes grades_canvas.csv; `.venv/bin/nbgrader export` writes the same file
(nbgrader_config.py makes this plugin nbgrader's exporter). Columns: Canvas's identity columns
(Student, ID, SIS User ID, SIS Login ID, Section), then one column per lesson, under a
"Points Possible" row. The student's nbgrader id goes into SIS Login ID, which Canvas matches on.
Only final grades are exported: a cell stays empty when grades.csv's status is not `graded`
(not graded, flagged for review, waiting for a hand grade), so nothing provisional reaches the LMS.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin

from lab_utils.course.grades import grade_table

CANVAS_FILE = "grades_canvas.csv"
IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_table(grades: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """Canvas's import layout from a grades.csv table; `names`: student id -> "Last, First"."""
    final = grades.assign(score=grades.score.where(grades.status == "graded"))
    scores = final.pivot(index="student", columns="lesson", values="score")
    possible = grades.groupby("lesson").max_score.max()
    rows = [dict(Student="Points Possible", **possible.to_dict())]
    rows += [{"Student": names.get(student) or student, "SIS Login ID": student, **scores.loc[student].to_dict()}
             for student in scores.index]
    return pd.DataFrame(rows, columns=IDENTITY + list(scores.columns))


def write_canvas(root: Path, grades: pd.DataFrame, gradebook: Gradebook, dest: Path | None = None) -> Path:
    """The Canvas file of a grades.csv table (names from the gradebook); returns where it went."""
    names = {s.id: ", ".join(part for part in (s.last_name, s.first_name) if part) for s in gradebook.students}
    dest = dest or Path(root) / CANVAS_FILE
    canvas_table(grades, names).to_csv(dest, index=False)
    return dest


class CanvasExport(ExportPlugin):
    """nbgrader's export step (`nbgrader export`), writing the Canvas gradebook import CSV."""

    def export(self, gradebook: Gradebook) -> None:
        root = Path(self.config.CourseDirectory.root)
        dest = write_canvas(root, grade_table(root), gradebook, Path(self.to) if self.to else None)
        self.log.info("Wrote %s", dest)
