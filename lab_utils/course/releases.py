"""Earlier releases of a lesson, from the course's git history.

A test cell fixed after a lesson was released reaches the notebooks handed in before the fix as an
edit. Each committed version of `lessons/<lesson>/<lesson>.ipynb` is one students may hold; a test
cell as one of them has it is no edit. (The released version runs either way.)
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import nbformat

from lab_utils.course.cells import is_test


def _git(root: Path, *args: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):  # no git, or no repository here
        return None


def released_test_cells(root: Path, lesson: str) -> dict[str, frozenset[str]]:
    """grade_id -> each source its test cell had in a committed release of `lesson`; {} where the
    course folder is no git repository of its own."""
    root = Path(root).resolve()
    if (_git(root, "rev-parse", "--show-toplevel") or "").strip() != str(root):
        return {}
    return _released(root, lesson, (_git(root, "rev-parse", "HEAD") or "").strip())


@functools.cache  # per commit: a grading process reads each lesson's history once
def _released(root: Path, lesson: str, head: str) -> dict[str, frozenset[str]]:
    path = f"lessons/{lesson}/{lesson}.ipynb"
    found: dict[str, set[str]] = {}
    for revision in (_git(root, "log", "--format=%H", head, "--", path) or "").split():
        for cell in nbformat.reads(_git(root, "show", f"{revision}:{path}"), as_version=4).cells:
            if is_test(cell):
                found.setdefault(cell.metadata.nbgrader.grade_id, set()).add(cell.source)
    return {grade_id: frozenset(sources) for grade_id, sources in found.items()}
