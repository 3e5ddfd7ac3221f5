"""Feedback keeps the hidden tests' code out, even where student code printed it."""

import html

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook, new_output

from lab_utils.course.cells import GRADERS_ERROR
from lab_utils.course.hidden import (HIDDEN, MADE_OF_VALUES, NOT_PYTHONS, NOT_THE_TESTS, WITHHELD, WITHHELD_AFTER,
                                     HiddenTestsOut)
from tests.nbtools import SHUTDOWN, UnixSocketKernelManager

HIDDEN_TEST = ("# Checked when your notebook is graded: ties.\n### BEGIN HIDDEN TESTS\n"
               "assert top_k([('m-2', 0.5), ('m-1', 0.5)], 1, 0.0) == ['m-1'], \"ties go to the lower id\"\n"
               "else:\n### END HIDDEN TESTS")
QUOTED = "assert top_k([('m-2', 0.5), ('m-1', 0.5)], 1, 0.0) == ['m-1'], \"ties go to the lower id\""
# A test cell's frame as IPython 8 and later write it, with its colours: the cell ran as In[1], its line 3 raised.
OWN_FRAME = "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[1]\x1b[39m\x1b[32m, line 3\x1b[39m\n"


def graded_cell(source, outputs=(), grade_id="test-ties", execution_count=None):
    meta = {"nbgrader": {"grade": True, "grade_id": grade_id, "locked": True, "points": 1, "solution": False,
                         "schema_version": 3}}
    return new_code_cell(source, metadata=meta, outputs=list(outputs), execution_count=execution_count)


def answer_cell(source):
    meta = {"nbgrader": {"grade": False, "grade_id": "ties", "locked": False, "solution": True, "schema_version": 3}}
    return new_code_cell(source, metadata=meta)


def feedback(nb):
    return HiddenTestsOut().preprocess(nb, {})[0]


def test_a_hidden_test_shows_its_header_and_its_error_alone():
    error = new_output("error", ename="AssertionError", evalue="ties go to the lower id",
                       traceback=["Traceback", f"{OWN_FRAME}----> 3 {QUOTED}",
                                  "AssertionError: ties go to the lower id"])
    nb = feedback(new_notebook(cells=[graded_cell(HIDDEN_TEST, [error], execution_count=1)]))
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
    nb = feedback(new_notebook(cells=[answer_cell(said), graded_cell(HIDDEN_TEST)]))
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
    long_own = new_output("error", ename="AssertionError", evalue="a rule, " * 100,
                          traceback=["Traceback", OWN_FRAME, "AssertionError: ..."])
    own = graded_cell(f"# a long message\n\nassert top_k([], 1, 0.0) == [], {'a rule, ' * 100!r}", [long_own],
                      "test-own", execution_count=1)
    nb = feedback(new_notebook(cells=[before, graded_cell(HIDDEN_TEST, [leaked]), after, quiet, own]))
    assert nb.cells[0].outputs[0].text == "my table\n", "before any hidden test, the cell shows what it printed"
    assert [o.text for o in nb.cells[1].outputs] == [WITHHELD], "what a hidden test's run printed is withheld"
    note, error = nb.cells[2].outputs
    assert note.text == WITHHELD and error.evalue == NOT_THE_TESTS, "no frame found: not the test's own error"
    assert error.traceback == [f"ValueError: {NOT_THE_TESTS}"]
    assert nb.cells[3].outputs == []
    assert nb.cells[4].outputs[0].traceback == [f"AssertionError: {('a rule, ' * 100)[:WITHHELD_AFTER]} [cut]"]


# The outside tester's attack (lesson 01): an answer that keeps every argument the tests hand it, the
# hidden tests' too, and raises them in an error's message once they ran.
ATTACK = ("import json\n"
          "seen = []\n"
          "def top_k(items, k, threshold):\n"
          "    seen.append(items)\n"
          "    return ['m-1'] if items else []\n"
          "def choose_min_score(scores):\n"
          "    raise ValueError('calls seen: ' + repr(seen))\n"
          "def check(value):\n"
          "    assert value, 'calls seen: ' + repr(seen)\n"
          "exec(\"def later():\\n    raise RuntimeError('calls seen: ' + repr(seen))\")\n"
          "def forged():\n"
          "    raise type('Cell In[2], line 1', (Exception,), {})('calls seen: ' + repr(seen))\n"
          "def named():\n"
          "    raise type('calls seen: ' + repr(seen), (Exception,), {})\n"
          "def echo():\n"
          "    return 'calls seen: ' + repr(seen)")
RAN = f"# Checked when your notebook is graded: ties.\n### BEGIN HIDDEN TESTS\n{QUOTED}\n### END HIDDEN TESTS"
# Test cells run after the hidden one: what each calls, and the error it ends in.
RAISED_ELSEWHERE = {"the answer's raise": ("choose_min_score([0.5])", "ValueError"),
                    "the answer's assert": ("check(False)", "AssertionError"),
                    "code the answer ran with exec": ("later()", "RuntimeError"),
                    # Not one of Python's own: the names of its classes are the student's to choose, as its
                    # messages are (a class named after the hidden test's frame, or its line).
                    "a library the test called": ("json.loads('{' + repr(top_k))", NOT_PYTHONS),
                    "an error class named as the hidden test's frame is": ("forged()", NOT_PYTHONS),
                    "an error class named after what the tests handed": ("named()", NOT_PYTHONS)}
OWN_ASSERT = "assert top_k([('m-3', 0.5)], 1, 0.0) == [], 'return only what clears the threshold'"
# A test cell's own assert that quotes what the answer returned (in Validate, that helps), and what it returned can be
# anything: a message of the test's words and values, one that is a value alone.
QUOTING = {"assert echo() == '', f'say nothing, got {echo()!r}'": "say nothing, got …",
           "said = echo()\nassert not said, said": MADE_OF_VALUES}
# The grader's own words: an answer that reached a switched-off reference trips its stand-in.
TRIPPED = ("import lab_utils.memory\nfrom lab_utils.grading import own_implementation\n"
           "def ranked(items, k, threshold):\n    return lab_utils.memory.top_k(items, k, threshold)\n"
           "with own_implementation(ranked, 'lab_utils.memory.top_k'):\n    ranked([], 1, 0.0)")


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """The attack's notebook as autograde leaves it (really run), then as feedback shows it."""
    tests = [source for source, _ in RAISED_ELSEWHERE.values()] + [TRIPPED, *QUOTING, OWN_ASSERT]
    nb = new_notebook(cells=[answer_cell(ATTACK), graded_cell(RAN)]
                      + [graded_cell(source, grade_id=f"test-{n}") for n, source in enumerate(tests)])
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True, shutdown_kernel=SHUTDOWN,
                   kernel_manager_class=UnixSocketKernelManager,
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("attacked"))}}).execute()
    assert "calls seen: [[('m-2', 0.5)" in nb.cells[2].outputs[0].evalue, "the attack worked in the kernel"
    return feedback(nb)


@pytest.mark.parametrize("case", RAISED_ELSEWHERE)
def test_after_a_hidden_test_an_error_raised_outside_the_test_cell_shows_its_name_alone(attacked, case):
    source, name = RAISED_ELSEWHERE[case]
    cell = next(cell for cell in attacked.cells if cell.source == source)
    [error] = cell.outputs
    assert (error.ename, error.evalue, error.traceback) == (name, NOT_THE_TESTS, [f"{name}: {NOT_THE_TESTS}"])


def test_no_input_of_the_hidden_test_reaches_the_feedback(attacked):
    assert "m-2" not in nbformat.writes(attacked)


def test_after_a_hidden_test_a_test_cells_own_assert_shows_its_message(attacked):
    [error] = attacked.cells[-1].outputs
    assert error.traceback == ["AssertionError: return only what clears the threshold"]


@pytest.mark.parametrize("source", QUOTING)
def test_after_a_hidden_test_a_test_cells_message_shows_its_words_not_the_values_put_in_them(attacked, source):
    [error] = next(cell for cell in attacked.cells if cell.source == source).outputs
    assert error.traceback == [f"AssertionError: {QUOTING[source]}"]


def test_after_a_hidden_test_the_graders_own_message_is_shown(attacked):
    [error] = next(cell for cell in attacked.cells if cell.source == TRIPPED).outputs
    assert "reached the lab_utils reference lab_utils.memory.top_k" in error.evalue


def test_an_error_the_grader_added_is_shown_and_one_forged_alike_is_not():
    why = "test-own did not run as released: lab_utils.memory.top_k was replaced by code defined in the notebook"
    def said():
        return new_output("error", ename="IntegrityError", evalue=why, traceback=[f"IntegrityError: {why}"])

    added = graded_cell("assert True", [said()], "test-added", execution_count=2)
    added.metadata[GRADERS_ERROR] = why
    forged = graded_cell("assert True", [said()], "test-forged", execution_count=3)  # as _render_traceback_ can
    nb = feedback(new_notebook(cells=[graded_cell(HIDDEN_TEST, execution_count=1), added, forged]))
    assert nb.cells[1].outputs[0].evalue == why
    assert nb.cells[2].outputs[0].evalue == NOT_THE_TESTS
