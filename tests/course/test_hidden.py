"""Feedback keeps the hidden tests' code out, even where student code printed it."""

import html

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from lab_utils.course.hidden import HIDDEN, WITHHELD, WITHHELD_AFTER, HiddenTestsOut

HIDDEN_TEST = ("# Checked when your notebook is graded: ties.\n### BEGIN HIDDEN TESTS\n"
               "assert top_k([('m-2', 0.5), ('m-1', 0.5)], 1, 0.0) == ['m-1'], \"ties go to the lower id\"\n"
               "else:\n### END HIDDEN TESTS")
QUOTED = "assert top_k([('m-2', 0.5), ('m-1', 0.5)], 1, 0.0) == ['m-1'], \"ties go to the lower id\""


def graded_cell(source, outputs=()):
    meta = {"nbgrader": {"grade": True, "grade_id": "test-ties", "locked": True, "points": 1, "solution": False,
                         "schema_version": 3}}
    return new_code_cell(source, metadata=meta, outputs=list(outputs))


def feedback(nb):
    return HiddenTestsOut().preprocess(nb, {})[0]


def test_a_hidden_test_shows_its_header_and_its_error_alone():
    error = new_output("error", ename="AssertionError", evalue="ties go to the lower id",
                       traceback=["Traceback", f"----> 3 {QUOTED}", "AssertionError: ties go to the lower id"])
    nb = feedback(new_notebook(cells=[graded_cell(HIDDEN_TEST, [error])]))
    assert nb.cells[0].source == "# Checked when your notebook is graded: ties."
    assert nb.cells[0].outputs[0].traceback == ["AssertionError: ties go to the lower id"]


def test_no_line_of_a_hidden_test_is_in_any_output():
    printed = new_output("stream", name="stdout", text=f"history:\n{QUOTED}\nelse:\nmy own line\n")
    result = new_output("execute_result", execution_count=1,
                        data={"text/plain": f"'{QUOTED}'", "text/html": f"<pre>{html.escape(QUOTED)}</pre>"})
    error = new_output("error", ename="ValueError", evalue=QUOTED, traceback=[f"ValueError: {QUOTED}"])
    answer = new_code_cell("print(In[-2])", outputs=[printed, result, error])
    nb = feedback(new_notebook(cells=[answer, graded_cell(HIDDEN_TEST)]))  # before it: outputs are shown
    outputs = nb.cells[0].outputs
    assert outputs[0].text == f"history:\n{HIDDEN}\nelse:\nmy own line\n", "a short line (else:) is anybody's"
    assert outputs[1].data["text/plain"] == HIDDEN and outputs[1].data["text/html"] == HIDDEN
    assert outputs[2].evalue == HIDDEN and outputs[2].traceback == [HIDDEN]
    assert "lower id" not in nbformat.writes(nb)


def test_an_answer_that_says_begin_hidden_tests_is_shown_as_written():
    """An outside cheater's answer held the marker alone: nbgrader's step stopped that feedback
    ("No end hidden tests statement found"). A student's cell is no test cell."""
    said = "# ### BEGIN HIDDEN TESTS\nmarker = 'BEGIN HIDDEN TESTS'"
    meta = {"nbgrader": {"grade": False, "grade_id": "ties", "locked": False, "solution": True, "schema_version": 3}}
    nb = feedback(new_notebook(cells=[new_code_cell(said, metadata=meta), graded_cell(HIDDEN_TEST)]))
    assert nb.cells[0].source == said
    assert nb.cells[1].source == "# Checked when your notebook is graded: ties."


def test_after_a_hidden_test_ran_a_cell_shows_its_error_alone():
    """Outside cheaters printed the hidden tests reversed, in hex, compressed: once one has run, the kernel
    holds its text, and no scrub can know every disguise of it."""
    before = new_code_cell("print('my table')", outputs=[new_output("stream", name="stdout", text="my table\n")])
    leaked = new_output("stream", name="stdout", text=QUOTED[::-1])
    shown = new_output("display_data", data={"text/html": "<img src=x onerror=alert(1)>"})
    long = new_output("error", ename="ValueError", evalue=(QUOTED * 4).encode().hex(), traceback=["Traceback", "..."])
    after = new_code_cell("print(In[-2][::-1])", outputs=[leaked, shown, long])
    quiet = new_code_cell("x = 1")
    nb = feedback(new_notebook(cells=[before, graded_cell(HIDDEN_TEST, [leaked]), after, quiet]))
    assert nb.cells[0].outputs[0].text == "my table\n", "before any hidden test, the cell shows what it printed"
    assert [o.text for o in nb.cells[1].outputs] == [WITHHELD], "what a hidden test's run printed is withheld"
    note, error = nb.cells[2].outputs
    assert note.text == WITHHELD and error.evalue == (QUOTED * 4).encode().hex()[:WITHHELD_AFTER] + " [cut]"
    assert error.traceback == [f"ValueError: {error.evalue}"]
    assert nb.cells[3].outputs == []
