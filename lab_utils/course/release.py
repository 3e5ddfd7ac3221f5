"""lessons/ from solutions/: nbgrader's generate_assignment for every lesson, and the gradebook with them."""

from __future__ import annotations

from pathlib import Path

from lab_utils.course.config import api, lesson_names
from lab_utils.paths import ROOT


def release(root: Path = ROOT) -> list[str]:
    """Generate the student version of every lesson; returns the lessons released."""
    grader = api(root)
    names = lesson_names(root)
    for name in names:
        result = grader.generate_assignment(name)
        if not result["success"]:
            raise RuntimeError(f"generate_assignment {name} failed:\n{result.get('error') or result.get('log')}")
    return names
