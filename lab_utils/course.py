"""The instructor's side of the course: nbgrader, configured in one place.

    python -m lab_utils.course release      # lessons/ from solutions/
    python -m lab_utils.course autograde    # every submitted/<student>/<lesson>/
    python -m lab_utils.course feedback     # HTML per student and lesson in feedback/
    python -m lab_utils.course grades       # grades.csv

nbgrader_config.py applies `configure` too, so the `nbgrader` command and these agree.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
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
    return c


def api(root: Path = ROOT) -> NbGraderAPI:
    # nbgrader runs the `alembic` command of its own environment when it creates a gradebook;
    # put that environment first on PATH even when it was not activated.
    scripts = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != scripts:
        os.environ["PATH"] = os.pathsep.join([scripts, os.environ.get("PATH", "")])
    return NbGraderAPI(config=configure(Config(), Path(root)))


def lesson_names(root: Path = ROOT) -> list[str]:
    """Every lesson, in course order: the folders of solutions/."""
    return sorted(p.name for p in (Path(root) / "solutions").iterdir() if p.is_dir())


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


def autograde(lesson: str, student: str, root: Path = ROOT) -> Score:
    """Grade one submission and read its score back from the gradebook."""
    _check(api(root).autograde(lesson, student), f"autograde {lesson} for {student}")
    return score(lesson, student, root)


def score(lesson: str, student: str, root: Path = ROOT) -> Score:
    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gradebook:
        s = gradebook.find_submission(lesson, student)
        return Score(s.score, s.max_score, s.code_score, s.max_code_score)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab_utils.course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["release"])
    args = parser.parse_args(argv)
    if args.command == "release":
        for name in release():
            print(f"released lessons/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
