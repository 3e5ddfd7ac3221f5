"""A test cell that rebinds a name the student's answer reads is named for a person to check."""

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from lab_utils.course.shadowing import rebound_by_tests

ANSWER = '''import re

PATTERN = re.compile("x")
unused = 1


def stuffed(text):
    return bool(PATTERN.search(text))


def guarded(text, limit=3):
    seen = text.lower()
    return stuffed(seen) and len(seen) > limit
'''


def graded(tmp_path, *tests: str):
    cells = [new_code_cell(ANSWER, metadata={"nbgrader": {"grade_id": "guarded", "solution": True, "grade": False}})]
    cells += [new_code_cell(test, metadata={"nbgrader": {"grade_id": f"test-{n}", "solution": False, "grade": True,
                                                         "points": 1}}) for n, test in enumerate(tests)]
    path = tmp_path / "graded.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    return path


def test_a_test_that_rebinds_a_helper_the_answer_reads_is_named(tmp_path):
    path = graded(tmp_path, "stuffed = ['a', 'b']\nassert guarded('xyz!') is False",
                  "for PATTERN in ['p']:\n    pass\nwith open(__file__) as seen:\n    pass")
    assert rebound_by_tests(path) == [
        "test-0: binds stuffed, which the answer guarded defines and reads; a later call of the answer sees the "
        "test's stuffed: check the points by hand",
        "test-1: binds PATTERN, which the answer guarded defines and reads; a later call of the answer sees the "
        "test's PATTERN: check the points by hand"]


def test_a_name_several_test_cells_bind_is_named_once(tmp_path):
    path = graded(tmp_path, "stuffed = 1", "PATTERN = 2", "stuffed = 3")
    assert rebound_by_tests(path) == [
        "test-0 and 1 more test cells bind stuffed, which the answer guarded defines and reads; a later call of the "
        "answer sees the test's stuffed: check the points by hand",
        "test-1: binds PATTERN, which the answer guarded defines and reads; a later call of the answer sees the "
        "test's PATTERN: check the points by hand"]


def test_names_of_the_tests_own_scopes_imports_and_names_no_function_reads_are_not_named(tmp_path):
    path = graded(tmp_path, "def check():\n    stuffed = 1\n    return stuffed\n",
                  "[PATTERN for PATTERN in 'ab']\nimport re\nunused = 2\nseen = 'a local of the answer'",
                  "assert (lambda stuffed: stuffed)(1) == 1")
    assert rebound_by_tests(path) == []
