"""The instructor's side of the course: nbgrader, configured in one place.

    python -m lab_utils.course release      # lessons/ from solutions/
    python -m lab_utils.course autograde    # every submitted/<student>/<lesson>/
    python -m lab_utils.course feedback     # HTML per student and lesson in feedback/
    python -m lab_utils.course grades       # grades.csv, grades_by_exercise.csv and .png

Every command takes `--root PATH` (default: this repository). nbgrader_config.py applies
`configure` too, so the `nbgrader` command and these agree.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pandas as pd
from matplotlib.figure import Figure
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps import NbGraderAPI
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from lab_utils.paths import ROOT

COURSE_ID = "agent-memory-lab"


def configure(c: Config, root: Path) -> Config:
    """Course settings: solutions/ is nbgrader's source folder, lessons/ its release folder."""
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = "solutions"
    c.CourseDirectory.release_directory = "lessons"
    # Generous, since a kernel start on a busy grading machine can take a while.
    c.ExecutePreprocessor.timeout = 120
    # A test cell a student deleted is put back from the release and run, so deleting
    # a test never earns its points.
    c.OverwriteCells.add_missing_cells = True
    return c


def api(root: Path = ROOT) -> NbGraderAPI:
    # nbgrader runs the `alembic` command of its own environment when it creates a gradebook;
    # put that environment first on PATH even when it was not activated.
    scripts = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != scripts:
        os.environ["PATH"] = os.pathsep.join([scripts, os.environ.get("PATH", "")])
    return NbGraderAPI(config=configure(Config(), Path(root)))


def gradebook(root: Path = ROOT) -> Gradebook:
    return Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}")


def lesson_names(root: Path = ROOT) -> list[str]:
    """Every lesson, in course order: the folders of solutions/."""
    return sorted(p.name for p in (Path(root) / "solutions").iterdir() if p.is_dir())


def _reason(result: dict) -> str:
    """The telling line of a failed nbgrader step: the last exception in its log, not its summary."""
    lines = [line.strip() for line in f"{result.get('log')}\n{result.get('error')}".splitlines()]
    raised = [line for line in lines if re.match(r"[\w.]+(Error|Exception): ", line)
              and "NbGraderException" not in line]
    return (raised or [line for line in lines if line] or ["no log"])[-1]


def _check(result: dict, what: str) -> None:
    if not result["success"]:
        raise RuntimeError(f"{what} failed:\n{result.get('error') or result.get('log')}")


def release(root: Path = ROOT) -> list[str]:
    """Generate the student version of every lesson; returns the lessons released."""
    grader = api(root)
    names = lesson_names(root)
    for name in names:
        _check(grader.generate_assignment(name), f"generate_assignment {name}")
    return names


@dataclass(frozen=True)
class Score:
    """A submission's points as the gradebook holds them; `auto_*` counts code tests only."""

    score: float
    max_score: float
    auto_score: float
    auto_max: float
    seconds_late: float = 0.0


def autograde(lesson: str, student: str, root: Path = ROOT) -> Score:
    """Grade one submission and read its score back from the gradebook."""
    _check(api(root).autograde(lesson, student), f"autograde {lesson} for {student}")
    return score(lesson, student, root)


def score(lesson: str, student: str, root: Path = ROOT) -> Score:
    with gradebook(root) as gb:
        s = gb.find_submission(lesson, student)
        return Score(s.score, s.max_score, s.code_score, s.max_code_score, s.total_seconds_late)


# --- the grading day: every submission, one at a time, none able to stop the others ---


@dataclass
class Outcome:
    """One submission through one step: done (with a score when graded) or not (a problem)."""

    student: str
    lesson: str
    score: Score | None = None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def __str__(self) -> str:
        where = f"{self.student}/{self.lesson}"
        if self.problem:
            return f"NOT DONE  {where}: {self.problem}"
        points = f"  {self.score.score:g}/{self.score.max_score:g}" if self.score else ""
        lines = [f"done      {where}{points}  ({self.seconds:.1f} s)"]
        return "\n".join(lines + [f"  note    {where}: {note}" for note in self.notes])


def submissions(root: Path = ROOT, folder: str = "submitted", only: str | None = None) -> list[tuple[str, str]]:
    """(student, lesson) for every folder <folder>/<student>/<lesson>/, or only those of one lesson."""
    base = Path(root) / folder
    if not base.is_dir():
        return []
    return [(student.name, lesson.name)
            for student in sorted(base.iterdir()) if student.is_dir()
            for lesson in sorted(student.iterdir()) if lesson.is_dir() and only in (None, lesson.name)]


def _precheck(student: str, lesson: str, root: Path, gb: Gradebook) -> tuple[str | None, list[str]]:
    """(why the submission cannot be graded, or None; notes about it) before nbgrader sees it."""
    try:
        graded_cells = {cell.name for cell in gb.find_notebook(lesson, lesson).grade_cells}
    except MissingEntry:
        if lesson in lesson_names(root):
            return "the lesson is not in the gradebook: run `make release` first", []
        return f"no lesson is called {lesson!r}", []
    folder = Path(root) / "submitted" / student / lesson
    path = folder / f"{lesson}.ipynb"
    if not path.exists():
        found = sorted(p.name for p in folder.glob("*.ipynb"))
        hint = f"found {', '.join(found)}; rename it" if found else "the folder holds no notebook"
        return f"no {path.name} ({hint})", []
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # a broken file can make nbformat raise almost anything
        return f"{path.name} is not a valid notebook ({type(error).__name__}: {error})", []
    ids = [cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") for cell in nb.cells]
    copied = sorted({i for i in ids if i and ids.count(i) > 1})
    if copied:
        return f"cells copied ({', '.join(copied)}): nbgrader cannot tell a copy from its original", []
    deleted = sorted(graded_cells - set(ids))
    if deleted:
        return None, [f"graded cells deleted ({', '.join(deleted)}); nbgrader put them back and ran them"]
    return None, []


def autograde_all(root: Path = ROOT, only: str | None = None) -> Iterator[Outcome]:
    """Grade every submitted/<student>/<lesson>/ in turn; a broken one is reported, never fatal."""
    for student, lesson in submissions(root, only=only):
        start = time.perf_counter()
        with gradebook(root) as gb:
            problem, notes = _precheck(student, lesson, root, gb)
        outcome = Outcome(student, lesson, problem=problem, notes=notes)
        if not problem:
            result = api(root).autograde(lesson, student)
            if result["success"]:
                outcome.score = score(lesson, student, root)
                if outcome.score.seconds_late:
                    late = datetime.timedelta(seconds=round(outcome.score.seconds_late))
                    outcome.notes.append(f"submitted {late} after the due date")
            else:
                outcome.problem = (f"nbgrader failed ({_reason(result)}); "
                                   f"`nbgrader autograde {lesson} --student {student}` shows its whole log")
        outcome.seconds = time.perf_counter() - start
        yield outcome


def feedback_all(root: Path = ROOT, only: str | None = None) -> Iterator[Outcome]:
    """HTML feedback for every autograded submission: feedback/<student>/<lesson>/<lesson>.html."""
    for student, lesson in submissions(root, "autograded", only):
        start = time.perf_counter()
        result = api(root).generate_feedback(lesson, student)
        problem = None if result["success"] else f"nbgrader failed ({_reason(result)})"
        yield Outcome(student, lesson, problem=problem, seconds=time.perf_counter() - start)


def grade_table(root: Path = ROOT) -> pd.DataFrame:
    """One row per student and lesson: the gradebook's points, or why there are none."""
    lessons = lesson_names(root)
    rows = []
    with gradebook(root) as gb:
        students = {s.id for s in gb.students} | {student for student, _ in submissions(root)}
        maxima = {a.name: (a.max_score, a.max_code_score) for a in gb.assignments}
        for student in sorted(students):
            for lesson in lessons:
                max_score, auto_max = maxima.get(lesson, (float("nan"), float("nan")))
                row = dict(student=student, lesson=lesson, score=0.0, max_score=max_score,
                           auto_score=0.0, auto_max=auto_max, seconds_late=0.0,
                           needs_manual_grade=False, status="no submission")
                try:
                    s = gb.find_submission(lesson, student)
                    row.update(score=s.score, auto_score=s.code_score, seconds_late=s.total_seconds_late,
                               needs_manual_grade=s.needs_manual_grade, status="graded")
                except MissingEntry:
                    if (Path(root) / "submitted" / student / lesson).is_dir():
                        row["status"] = "not graded (see `make autograde`)"
                rows.append(row)
    return pd.DataFrame(rows)


def exercise_table(root: Path = ROOT) -> pd.DataFrame:
    """Where the class lost points: every graded cell over the submissions graded so far.

    A written answer that still waits for its hand grade counts as pending, not as points lost.
    """
    rows = []
    with gradebook(root) as gb:
        for lesson in lesson_names(root):
            try:
                cells = gb.find_notebook(lesson, lesson).grade_cells
            except MissingEntry:
                continue
            for cell in cells:
                scores = [g.score for g in cell.grades if not g.needs_manual_grade]
                lost = sum(cell.max_score - s for s in scores)
                rows.append(dict(lesson=lesson, exercise=cell.name, max_score=cell.max_score,
                                 graded=len(scores), pending=len(cell.grades) - len(scores),
                                 mean_score=sum(scores) / len(scores) if scores else float("nan"),
                                 points_lost=lost,
                                 share_lost=lost / (cell.max_score * len(scores)) if scores else float("nan")))
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
    grades, exercises = grade_table(root), exercise_table(root)
    grades.to_csv(root / GRADE_FILES[0], index=False)
    exercises.to_csv(root / GRADE_FILES[1], index=False)
    exercise_figure(exercises).savefig(root / GRADE_FILES[2], dpi=120)
    return grades


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab_utils.course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["release", "autograde", "feedback", "grades"])
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder (default: %(default)s)")
    parser.add_argument("--lesson", help="autograde or feedback: this lesson only (default: every lesson)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    # nbgrader's own gradebook code trips this SQLAlchemy warning on every submission; it is noise.
    warnings.filterwarnings("ignore", category=SAWarning)
    if args.command == "release":
        for name in release(root):
            print(f"released lessons/{name}")
        return 0
    if args.command == "grades":
        totals = write_grades(root).groupby("student")[["score", "max_score"]].sum()
        print(f"wrote {', '.join(GRADE_FILES)} in {root}\n{totals.to_string()}")
        return 0
    outcomes = []
    steps = autograde_all if args.command == "autograde" else feedback_all
    for outcome in steps(root, args.lesson):
        print(outcome, flush=True)
        outcomes.append(outcome)
    failed = [o for o in outcomes if o.problem]
    print(f"{args.command}: {len(outcomes) - len(failed)} of {len(outcomes)} submissions done")
    if failed:
        lines = [f"  {o.student}/{o.lesson}: {o.problem}" for o in failed]
        print("\n".join(["not done:", *lines]), file=sys.stderr)
    return 1 if failed else 0

