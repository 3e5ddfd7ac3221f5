"""Throwaway courses for the instructor-side tests: a copy of some lessons, released, and the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat

from lab_utils.course import release
from lab_utils.paths import ROOT
from nbtools import nbgrader_meta, notebook_path

NBGRADER = Path(sys.executable).with_name("nbgrader")


def new_course(root: Path, lessons: list[str], settings: str = "") -> Path:
    """A course folder with these lessons' solutions, the repository's nbgrader_config.py plus
    `settings` (lines an instructor would add), released."""
    for lesson in lessons:
        shutil.copytree(ROOT / "solutions" / lesson, root / "solutions" / lesson)
    config = (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")
    (root / "nbgrader_config.py").write_text(f"{config}\n{settings}\n", encoding="utf-8")
    release(root)
    return root


def course_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m lab_utils.course <args> --root <root>`, writing only to the course folder."""
    env = {**os.environ, "LAB_WORK_DIR": str(root / "work")}
    run = subprocess.run([sys.executable, "-m", "lab_utils.course", *args, "--root", str(root)],
                         capture_output=True, text=True, env=env, cwd=root)
    print(run.stdout, run.stderr, sep="\n")  # shown by pytest when a test fails
    return run


def with_cell(nb, source: str, at: int = 1):
    """The notebook with a code cell of the student's own inserted at index `at`."""
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


def solution(root: Path, lesson: str):
    return nbformat.read(notebook_path("solutions", lesson, root), as_version=4)


def graded_cell(nb, grade_id: str):
    return next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)



def interrupted_nbgrader(calls: list[tuple[str, str]]):
    """An `api` for lab_utils.course.autograde whose autograde is stopped by Ctrl-C, as nbgrader reports it: the
    submission's autograded folder removed, the KeyboardInterrupt given as the submission's failure. Each
    (student, lesson) it is asked to grade goes to `calls`."""
    def api(root: Path, config=None):
        def autograde(lesson: str, student: str) -> dict:
            calls.append((student, lesson))
            shutil.rmtree(Path(root) / "autograded" / student / lesson, ignore_errors=True)
            return {"success": False, "error": "Traceback (most recent call last):\n  ...\nKeyboardInterrupt\n"}
        return SimpleNamespace(autograde=autograde)
    return api
