"""Shared helpers for the notebook tests: run a notebook, find its cells, build submissions."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from lab_utils.course import lesson_names
from lab_utils.paths import ROOT

LESSONS = lesson_names(ROOT)
PARTIAL = ROOT / "tests" / "fixtures" / "partial"


def notebook_path(folder: str, lesson: str, root: Path = ROOT) -> Path:
    return root / folder / lesson / f"{lesson}.ipynb"


def execute(source: Path, workdir: Path, allow_errors: bool = False) -> nbformat.NotebookNode:
    """Run a copy of a lesson folder in `workdir`; the repository is never written to."""
    shutil.copytree(source.parent, workdir, dirs_exist_ok=True)
    nb = nbformat.read(workdir / source.name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def errors(nb) -> list[tuple[int, dict, str]]:
    """(cell index, nbgrader metadata, exception name) for every error output."""
    return [(i, nbgrader_meta(cell), out["ename"])
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def stray_errors(nb) -> list[str]:
    """Errors an unfinished lesson must not show: outside an exercise, or not NotImplementedError."""
    return [f"cell {index} ({meta.get('grade_id', 'not an exercise')}) raised {ename}"
            for index, meta, ename in errors(nb)
            if not ((meta.get("solution") or meta.get("grade")) and ename == "NotImplementedError")]


def partial_answers(lesson: str) -> dict[str, str]:
    """The fixture's answers by grade_id: sections that start with `# %% <grade_id>`."""
    text = (PARTIAL / f"{lesson}.py").read_text(encoding="utf-8")
    parts = re.split(r"^# %% (\S+)[^\n]*\n", text, flags=re.M)
    return {grade_id: body.strip() + "\n" for grade_id, body in zip(parts[1::2], parts[2::2])}


def submit(root: Path, student: str, lesson: str, nb) -> Path:
    """Hand a notebook in as nbgrader expects it: submitted/<student>/<lesson>/<lesson>.ipynb."""
    path = notebook_path(f"submitted/{student}", lesson, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def with_answers(released: Path, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with some answer cells filled in."""
    nb = nbformat.read(released, as_version=4)
    cells = {nbgrader_meta(c).get("grade_id"): c for c in nb.cells if nbgrader_meta(c).get("solution")}
    unknown = set(answers) - set(cells)
    if unknown:
        raise KeyError(f"{released.name}: the fixture names no answer cell {sorted(unknown)}")
    for grade_id, source in answers.items():
        cells[grade_id].source = source
    return nb
