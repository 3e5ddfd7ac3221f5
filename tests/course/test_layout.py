"""The instructor's wing stays apart: no student-side module of lab_utils imports lab_utils.course."""

import ast

import pytest

from lab_utils.grading import PACKAGE_DIR

STUDENT_SIDE = sorted(p for p in PACKAGE_DIR.rglob("*.py") if "course" not in p.relative_to(PACKAGE_DIR).parts)


def imported(path) -> set[str]:
    """Every module (and module.name) the file imports, relative imports made absolute."""
    package = ["lab_utils", *path.relative_to(PACKAGE_DIR).parent.parts]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parent = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join(parent + ([node.module] if node.module else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize("path", STUDENT_SIDE, ids=lambda p: str(p.relative_to(PACKAGE_DIR)))
def test_students_modules_never_import_the_course_package(path):
    wing = sorted(n for n in imported(path) if n == "lab_utils.course" or n.startswith("lab_utils.course."))
    assert not wing, f"{path.name} imports {wing}: students' code must not depend on the instructor's tools"
