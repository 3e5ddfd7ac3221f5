"""Tampering flagged: cheats that pass tests without running them lose the points and are named.

Each in-kernel cheat runs in a small notebook of one exercise through the integrity steps and a real
kernel; the grading-day cases go through nbgrader's autograde on a throwaway copy of lesson 01.
"""

import copy
import shutil
import subprocess
import sys
import warnings

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.utils import determine_grade
from traitlets.config import Config

from lab_utils.course import config, integrity
from lab_utils.course.autograde import Outcome
from lab_utils.course.grades import grade_table
from lab_utils.grading import assert_own_implementation, own_implementation
from lab_utils.paths import ROOT

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)

LESSON = "01_naive_memory"
RIGHT = "def double(x):\n    return 2 * x\n"
WRONG = "def double(x):\n    return x\n"
DROP_ASSERTS = '''import ast
class DropAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
get_ipython().ast_transformers.append(DropAsserts())
'''
# A callback after each cell that clears a failed test's error and runs its proof line again.
TIDY = """def _tidy(result):
    src = result.info.raw_cell
    if result.error_in_exec is not None and "proof that it ran as released" in src:
        from IPython.display import clear_output
        clear_output()
        result.error_in_exec = None
        with get_ipython().builtin_trap:
            exec(src.rstrip().splitlines()[-1], {})
get_ipython().events.register("post_run_cell", _tidy)"""
# The kernel's messages patched: a test's error dropped on its way out, its proof line run instead.
QUIET = """ip = get_ipython()
send = ip.kernel.session.send
def quiet(stream, kind, content=None, *args, **kwargs):
    if kind == "error":
        return exec(ip.history_manager.input_hist_parsed[-1].rstrip().splitlines()[-1], {})
    if kind == "execute_reply" and content.get("status") == "error":
        content = {"status": "ok", "execution_count": content["execution_count"], "user_expressions": {}}
        kwargs.get("metadata", {}).update(status="ok")
    return send(stream, kind, content, *args, **kwargs)
ip.kernel.session.send = quiet"""
# The traceback's formatter replaced, by code compiled as if installed: it clears the cell's error, runs the
# proof line as if from the cell, and shows nothing.
HIDDEN_FORMATTER = '''import os, sys
source = """
def install(shell):
    def structured_traceback(*args, **kwargs):
        frame = sys._getframe()
        while frame is not None:
            if frame.f_code.co_name == "run_code" and frame.f_locals.get("result") is not None:
                frame.f_locals["result"].error_in_exec = None
            frame = frame.f_back
        line = shell.history_manager.input_hist_parsed[-1].rstrip().splitlines()[-1]
        exec(compile(line, list(shell.compile._filename_map)[-1], "exec"), {})
        raise KeyboardInterrupt
    shell.InteractiveTB.structured_traceback = structured_traceback
"""
namespace = {"sys": sys}
exec(compile(source, os.path.join(sys.prefix, "lib", "site.py"), "exec"), namespace)
namespace["install"](get_ipython())'''
# Python's optimization level raised at run time (as -O does): every later cell compiles without its asserts.
NO_ASSERTS = """import sys
try:
    import _testinternalcapi
    kept = dict(vars(sys))
    setting = _testinternalcapi.get_config()
    setting["optimization_level"] = 1
    _testinternalcapi.set_config(setting)
    for name, value in kept.items():
        if getattr(sys, name, None) is not value:
            setattr(sys, name, value)
except Exception as error:
    print(error)"""
# An AST transformer that takes itself out while the grader's report asks for the shell, and puts itself
# back once the report is published, through IPython's own functions patched.
HIDDEN_TRANSFORMER = """import ast, sys, IPython, IPython.display
class Lenient(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()
LENIENT, real_get, real_publish = Lenient(), IPython.get_ipython, IPython.display.publish_display_data
def get_ipython_():
    shell = real_get()
    if sys._getframe(1).f_code.co_name == "_kernel_state" and LENIENT in shell.ast_transformers:
        shell.ast_transformers.remove(LENIENT)
    return shell
def publish_(*args, **kwargs):
    real_publish(*args, **kwargs)
    if sys._getframe(1).f_code.co_name == "_kernel_state":
        real_get().ast_transformers.append(LENIENT)
IPython.get_ipython, IPython.display.publish_display_data = get_ipython_, publish_
real_get().ast_transformers.append(LENIENT)"""
# An audit hook sees each statement's syntax tree before it is compiled: it turns a test's asserts into
# passes. The grader's own hook is looked for first, and its code replaced.
AUDIT_HOOK = """import ast, gc, sys, types
said = []
for grader in [f for f in gc.get_objects() if isinstance(f, types.FunctionType) and f.__name__ == "refuse"]:
    try:
        grader.__code__ = (lambda event, args, me=None: None).__code__
    except Exception as error:
        said.append(str(error))
def drop_asserts(event, args):
    if event == "compile" and isinstance(args[0], ast.Module):
        for node in ast.walk(args[0]):
            if isinstance(node, ast.Assert):
                node.test = ast.copy_location(ast.Constant(True), node.test)
sys.addaudithook(drop_asserts)  # refused in silence: Python drops an Exception a hook raises here
print(*said)"""
# (cheat, answer it goes with, what the finding must name). A wrong answer shows the cheat works:
# the test would have failed, yet it shows no error until the proof is checked.
CHEATS = {
    "input transformer": ('get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])',
                          WRONG, "never reached its last line"),
    # IPython compiles each statement apart, so a tracer cannot jump over an assert; it can still
    # watch or change what the test sees.
    "settrace": ("import sys\nsys.settrace(lambda *args: None)", RIGHT, "tracing was on (sys.settrace"),
    "setprofile": ("import sys\nsys.setprofile(lambda *args: None)", RIGHT, "tracing was on (sys.setprofile"),
    "ast transformer": (DROP_ASSERTS, WRONG, "AST transformer: __main__.DropAsserts"),
    "ast transformer hidden from the report": (HIDDEN_TRANSFORMER, WRONG, "AST transformer: __main__.Lenient"),
    "custom exception handler": ("get_ipython().set_custom_exc((AssertionError,), lambda *args, **kw: None)",
                                 RIGHT, "a custom exception handler was set for AssertionError"),
    "grading patched": ("import lab_utils.grading\nlab_utils.grading.assert_own_implementation = lambda f: None",
                        RIGHT, "lab_utils.grading.assert_own_implementation was replaced by code defined in the "
                        "notebook"),
    "context manager's exit patched": ("import contextlib\ncontextlib._GeneratorContextManager.__exit__ = "
                                       "lambda *args: True", RIGHT,
                                       "contextlib._GeneratorContextManager.__exit__ was replaced by code defined in "
                                       "the notebook"),
    "class member patched": ("from lab_utils.memory import MemoryStore\n"
                             "MemoryStore.__repr__ = lambda self: 'a store'", RIGHT,
                             "lab_utils.memory.MemoryStore.__repr__ was replaced by code defined in the notebook"),
    "pattern compiler patched": ("import re._compiler\nre._compiler._code = lambda *args: [0]", RIGHT,
                                 "re._compiler._code was replaced by code defined in the notebook"),
    "a function the kernel's poller thread calls patched": ("import os\nparent = os.getppid\n"
                                                            "os.getppid = lambda: parent()", RIGHT,
                                                            "os.getppid was replaced by code defined in the notebook"),
    "judge patched": ("import pandas.testing\npandas.testing.assert_frame_equal = lambda *args, **kw: None", RIGHT,
                      "pandas.testing.assert_frame_equal was replaced by code defined in the notebook"),
    "check rebound": ("assert_own_implementation = lambda f: None\nimport operator, functools\n"
                      "double = functools.partial(operator.mul, 2)", "",
                      "assert_own_implementation is no longer lab_utils.grading.assert_own_implementation"),
    "check redefined": ("def assert_own_implementation(func):\n    return None", RIGHT,
                        "assert_own_implementation is no longer lab_utils.grading.assert_own_implementation"),
    "sys.modules replaced": ("import sys, types\n"
                             "sys.modules['lab_utils.grading'] = types.ModuleType('lab_utils.grading')",
                             RIGHT, "sys.modules entries replaced: lab_utils.grading"),
    "callback after the cell": (TIDY, WRONG, "event callback: post_run_cell: __main__._tidy"),
    "kernel messages patched": (QUIET, WRONG, "its proof ran from quiet (a notebook cell)"),
    "traceback formatter replaced": (HIDDEN_FORMATTER, WRONG, "its proof ran from the handling of an error"),
    "kernel exits": ("import os\nos._exit(0)", RIGHT, "the kernel exited before the cell finished"),
    "builtin patched": ("import builtins\nbuiltins.all = lambda items: True", RIGHT, "changed: builtins.all"),
    # A name of the notebook's own in place of a builtin the test calls (an outside cheater's `any`).
    "builtin shadowed": ("all = lambda items: True", WRONG, "all is no longer builtins.all"),
    # What lab_utils.grading judges with: its tools, the interpreter's hooks, its own settings.
    "grader's tool patched": ("import inspect\ninspect.getattr_static = lambda *args, **kw: 0", RIGHT,
                              "inspect.getattr_static was replaced by code defined in the notebook"),
    "watch switched off": ("import sys\nsys.setprofile = lambda f: None", RIGHT, "changed: sys.setprofile"),
    # A constant of the course's rebound, or given other contents (lesson 08's defenses, put in place
    # by an answer while its test runs).
    "course constant rebound": ("import lab_utils.rules\nlab_utils.rules.SIM_DUP = 0.0", RIGHT,
                                "changed: lab_utils.rules.SIM_DUP"),
    "course constant's contents changed": ("from lab_utils.attacks import defenses\n"
                                           "defenses.DEFENSES['rules'] = defenses.DEFENSES['none']", RIGHT,
                                           "changed: lab_utils.attacks.defenses.DEFENSES"),
    "grader's settings changed": ("import lab_utils.grading\nlab_utils.grading.COMPARING.clear()", RIGHT,
                                  "changed: lab_utils.grading.COMPARING"),
    # The same bytecode with another constant (here its docstring, which changes nothing it does).
    "a function's constant changed": ("import lab_utils.grading\nf = lab_utils.grading.assert_own_implementation\n"
                                      "docstring, *rest = f.__code__.co_consts\n"
                                      "f.__code__ = f.__code__.replace(co_consts=(docstring + '.', *rest))",
                                      RIGHT, "changed: lab_utils.grading.assert_own_implementation"),
}


def exercise(answer: str) -> nbformat.NotebookNode:
    """One answer cell and its graded test cell, as a released lesson has them."""
    meta = {"schema_version": 3, "task": False}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return new_notebook(metadata={"kernelspec": kernel}, cells=[
        new_code_cell("from lab_utils.grading import assert_own_implementation"),
        new_code_cell(answer, metadata={"nbgrader": {**meta, "grade": False, "grade_id": "double",
                                                     "locked": False, "solution": True}}),
        new_code_cell("assert_own_implementation(double)\nassert all([double(2) == 4]), 'double doubles'",
                      metadata={"nbgrader": {**meta, "grade": True, "grade_id": "test-double", "locked": True,
                                             "points": 1, "solution": False}}),
    ])


def run_sealed(nb, tmp_path, timeout: int = 60) -> tuple[nbformat.NotebookNode, list[str]]:
    """Seal, execute (`timeout` seconds a cell) and verify as autograde does; the test cell and the findings."""
    c = Config()
    integrity.install(c)
    steps = c.Autograde.autograde_preprocessors
    at = steps.index(integrity.Seal)
    resources = {"metadata": {"path": str(tmp_path)}, "nbgrader": {"notebook": "lesson"}}
    # The course's Execute settings (its kernel shutdown among them), with this test's timeouts.
    course = config.configure(Config(), tmp_path).Execute
    settings = Config({"Execute": {**course, "timeout": timeout, "iopub_timeout": min(timeout, 4)}})
    for step in steps[at:at + 3]:
        nb, resources = step(config=settings)(nb, resources)
    return nb.cells[-1], integrity.findings(tmp_path / "lesson.ipynb")


def errors(cell) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for o in cell.outputs if o["output_type"] == "error"]


def test_an_honest_answer_passes_unflagged_and_a_wrong_one_fails_unflagged(tmp_path):
    right, found = run_sealed(exercise(RIGHT), tmp_path)
    assert errors(right) == [] and found == []
    assert right.source.endswith("'double doubles'"), "the proof line is removed after the check"
    assert all(integrity.MIME not in o.get("data", {}) for o in right.outputs), "and so is its report"
    wrong, found = run_sealed(exercise(WRONG), tmp_path)
    assert errors(wrong) == ["AssertionError: double doubles"] and found == []


def test_the_shells_own_stand_ins_for_builtins_are_no_rebinding(tmp_path):
    """IPython puts its own `open` and `exit` in the notebook's namespace: a test that calls them is no cheat."""
    nb = exercise(RIGHT)
    nb.cells[-1].source = ("import os\nassert_own_implementation(double)\nwith open(os.devnull) as null:\n"
                           "    assert all([double(2) == 4]) and callable(exit), 'double doubles'")
    cell, found = run_sealed(nb, tmp_path)
    assert errors(cell) == [] and found == []


@pytest.mark.parametrize("name", CHEATS)
def test_a_cheat_costs_the_points_and_is_named(name, tmp_path):
    cheat, answer, named = CHEATS[name]
    cell, found = run_sealed(exercise(f"{cheat}\n{answer}"), tmp_path)
    integrity_errors = [e for e in errors(cell) if e.startswith("IntegrityError")]
    assert integrity_errors, f"{name}: the test cell must show why it earns nothing"
    assert [e for e in errors(cell) if e not in integrity_errors] == [], \
        f"{name}: the cheat made the test pass (or not run) before the proof was checked"
    assert len(found) == 1 and found[0].startswith("test-double did not run as released: ")
    assert named in found[0], found


# A cheat that failed: the error it swallows still fails the test, but the attempt is named.
FAILED_CHEATS = {
    "custom exception handler": ("get_ipython().set_custom_exc((BaseException,), lambda *args, **kw: None)",
                                 "a custom exception handler was set for BaseException"),
    "settrace": ("import sys\nsys.settrace(lambda *args: None)", "tracing was on (sys.settrace"),
}
# What students put in a notebook out of habit changes nothing a test judges.
HABITS = ("%load_ext autoreload\n%autoreload 2\n%matplotlib inline\n%xmode Minimal\n"
          "import matplotlib.pyplot as plt\nimport ipywidgets\nimport warnings\n\n"
          "warnings.filterwarnings('ignore')\nplt.plot([1, 2])\ndisplay(ipywidgets.IntSlider())\n")


@pytest.mark.parametrize("name", FAILED_CHEATS)
def test_a_cheat_that_failed_keeps_the_score_and_is_still_named(name, tmp_path):
    cheat, named = FAILED_CHEATS[name]
    cell, found = run_sealed(exercise(f"{cheat}\n{WRONG}"), tmp_path)
    assert errors(cell) == ["AssertionError: double doubles"], "the wrong answer fails as it would without it"
    assert len(found) == 1 and found[0].startswith("after the last cell, though no test's outcome shows it: ")
    assert named in found[0], found


def test_no_audit_hook_may_be_added_nor_the_graders_changed(tmp_path):
    nb = exercise(f"{AUDIT_HOOK}\n{WRONG}")
    cell, found = run_sealed(nb, tmp_path)  # the notebook as it ran, the grader's cells taken out
    printed = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    refused = "no audit hook may be added, nor the grader's changed"
    assert refused in printed, printed  # the grader's hook kept its code
    assert errors(cell) == ["AssertionError: double doubles"] and found == [], "and no other hook dropped the assert"


# An outside cheater's answer: the test that called it, reached from the answer's own exception, the
# attribute's name found in dir() (no name a reader could spot), and the value it compares with read there.
FROM_THE_TRACEBACK = """def double(x):
    try:
        raise ValueError
    except ValueError as error:
        traceback = error.__traceback__
        frame = getattr(traceback, next(n for n in dir(traceback) if n.endswith("_frame")))
    return 2 * x
"""


def test_a_tracebacks_or_a_generators_frame_cannot_be_read_from_the_notebook(tmp_path):
    generator = "def double(x):\n    steps = (2 * x for _ in [1])\n    steps.gi_frame\n    return next(steps)\n"
    for answer in (FROM_THE_TRACEBACK, generator):
        cell, _ = run_sealed(exercise(answer), tmp_path)
        assert errors(cell)[0] == f'KeyError: "{integrity.REFUSED_FRAME}"', errors(cell)
        graded = tmp_path / "graded.ipynb"
        nbformat.write(new_notebook(cells=[cell]), graded)
        assert integrity.refused(graded) == [f"test-double: refused: {integrity.REFUSED_FRAME}"]
    # Installed code still reads them: IPython shows a cell's error, its frames and all.
    cell, _ = run_sealed(exercise(WRONG), tmp_path)
    assert errors(cell) == ["AssertionError: double doubles"]


# An outside cheater's answer: the reference run in a child process started by libc's system(), reached through
# ctypes (numpy's copy of it), which no watch of Python's own process starters sees; the child is gone before a
# test looks for running processes.
THROUGH_LIBC = """import numpy
def double(x):
    run = numpy.ctypeslib.ctypes.CDLL(None).system
    run(b"true")
    return 2 * x
"""


def test_no_process_may_be_started_through_ctypes(tmp_path):
    cell, _ = run_sealed(exercise(THROUGH_LIBC), tmp_path)
    assert errors(cell)[0] == f"KeyError: {integrity.REFUSED_PROCESS!r}", errors(cell)
    graded = tmp_path / "graded.ipynb"
    nbformat.write(new_notebook(cells=[cell]), graded)
    assert integrity.refused(graded) == [f"test-double: refused: {integrity.REFUSED_PROCESS}"]


# An outside cheater's answer: the test's frame from Python's C API through ctypes (numpy's copy of it), the name
# found in dir(); the value the test compares with is read from it. No profile event marks a call through ctypes.
THROUGH_THE_C_API = """import numpy
def double(x):
    api = numpy.ctypeslib.ctypes.pythonapi
    here = getattr(api, next(n for n in ["PyEval_GetFrame"] if n))
    return 2 * x
"""
# Another way to the same: memory read at an address.
AT_AN_ADDRESS = """import numpy
def double(x):
    numpy.ctypeslib.ctypes.c_void_p.from_address(id(x))
    return 2 * x
"""


@pytest.mark.parametrize("answer", [THROUGH_THE_C_API, AT_AN_ADDRESS], ids=["the C API", "an address"])
def test_pythons_c_api_and_memory_are_out_of_reach_through_ctypes(answer, tmp_path):
    cell, _ = run_sealed(exercise(answer), tmp_path)
    assert errors(cell)[0] == f"KeyError: {integrity.REFUSED_C_API!r}", errors(cell)
    graded = tmp_path / "graded.ipynb"
    nbformat.write(new_notebook(cells=[cell]), graded)
    assert integrity.refused(graded) == [f"test-double: refused: {integrity.REFUSED_C_API}"]


def with_a_test_helper(answer: str, between: str = "") -> nbformat.NotebookNode:
    """exercise(answer) whose test cell defines a helper that a second test cell calls too (lesson 01's
    rejects, which its hidden tests call), and a cell of the student's between the two."""
    nb = exercise(answer)
    test = nb.cells[-1]
    test.source = "def check(value):\n    assert value == 4, 'double doubles'\n\n\ncheck(double(2))"
    again = nbformat.from_dict(copy.deepcopy(test))
    again.source, again.metadata.nbgrader.grade_id, again.id = "check(double(2))", "test-double-again", "again"
    nb.cells += [nbformat.v4.new_code_cell(between), again]
    return nb


def test_a_test_cells_function_defined_again_by_the_notebook_earns_nothing(tmp_path):
    """An outside cheater's notebook defined lesson 01's rejects and accepts again after the visible test,
    as functions that check nothing: every hidden test that called them passed."""
    cell, _ = run_sealed(with_a_test_helper(WRONG, "def check(value):\n    return None"), tmp_path)
    said = errors(cell)
    assert said and said[0].startswith("IntegrityError") and "check, a function of the test cells', was defined " \
        "again by the notebook" in said[0], said
    cell, found = run_sealed(with_a_test_helper(RIGHT, "print(check)"), tmp_path)  # honest: the helper as it was
    assert errors(cell) == [] and found == [], found


def test_the_optimization_level_stays_and_asserts_compiled_away_are_named(tmp_path, monkeypatch):
    nb = exercise(f"{NO_ASSERTS}\n{WRONG}")
    cell, found = run_sealed(nb, tmp_path)
    assert "Python's test modules cannot be imported" in "".join(o.get("text", "") for o in nb.cells[1].outputs)
    assert errors(cell) == ["AssertionError: double doubles"] and found == []
    monkeypatch.setenv("PYTHONOPTIMIZE", "1")  # a kernel that compiles without asserts from its start
    cell, found = run_sealed(exercise(WRONG), tmp_path)
    assert [e for e in errors(cell) if e.startswith("IntegrityError")] and len(found) == 1
    assert "assert statements are compiled away" in found[0], found


# What nbgrader scores in a test cell is its error alone: (answer, points the test earns).
SCORED = {
    # nbgrader takes a number a test cell displays, before its error, for partial credit.
    "a value displayed": (WRONG.replace("return x", "get_ipython().displayhook(1.0)\n    return x"), 0),
    # and a cell that wrote to stderr for a failure.
    "a warning": (RIGHT.replace("return 2 * x", "import warnings\n    warnings.warn('big x')\n    return 2 * x"), 1),
    # matplotlib shows a figure after the cell's last line, after its proof.
    "a figure": ("import matplotlib.pyplot as plt\n" + RIGHT.replace("return 2 * x", "plt.plot([x])\n    return 2 * x"),
                 1),
}


@pytest.mark.parametrize("name", SCORED)
def test_nbgrader_scores_a_test_by_its_error_alone(name, tmp_path):
    answer, points = SCORED[name]
    cell, found = run_sealed(exercise(answer), tmp_path)
    assert determine_grade(cell) == (points, 1) and found == []


@pytest.mark.parametrize("answer", [
    "def top_k(scored, k, min_score):\n    return [i for i, s in scored if s >= min_score][:k]\n",
    "class Best:\n    def __call__(self, scored, k, min_score):\n"
    "        return [i for i, s in scored if s >= min_score][:k]\ntop_k = Best()\n",
], ids=["def", "an object"])
def test_an_answer_named_like_a_function_imported_before_is_not_a_rebinding(answer, tmp_path):
    nb = exercise(answer)
    nb.cells.insert(1, new_code_cell("from lab_utils.memory import top_k  # to see what it does"))
    nb.cells[-1].source = "assert_own_implementation(top_k)\nassert top_k([('a', 1.0)], 1, 0.5) == ['a']"
    cell, found = run_sealed(nb, tmp_path)
    assert errors(cell) == [] and found == []


def test_habits_of_a_notebook_are_not_flagged(tmp_path):
    cell, found = run_sealed(exercise(f"{HABITS}{RIGHT}"), tmp_path)
    assert errors(cell) == [] and found == []
    cell, found = run_sealed(exercise(f"{HABITS}{WRONG}"), tmp_path)
    assert errors(cell) == ["AssertionError: double doubles"] and found == []


def test_the_graders_first_cell_has_a_minute_whatever_the_per_cell_timeout():
    """It loads the notebook's libraries: on a busy machine, past a short c.Execute.timeout (at 2 s an honest
    lesson 01 scored 0, "the grader's first cell did not report"). The notebook's own cells keep the timeout."""
    seen = []

    class Execute:
        timeout = 2

        def preprocess_cell(self, cell, resources, index):
            seen.append(self.timeout)
            return cell, resources

    step = type("Surviving", (integrity.SurviveKernelDeath, Execute), {})()
    for index in (0, 1, 2):
        step.preprocess_cell(new_code_cell(), {}, index)
    assert seen == [integrity.GRADERS_CELL_SECONDS, 2, 2] and step.timeout == 2


def test_a_kernel_that_stops_answering_ends_the_run_and_the_rest_earns_nothing(tmp_path):
    """ipykernel itself relies on isinstance: patched, the kernel runs the cell and its reply never
    comes. The run ends there (after the per-cell timeout) instead of failing the whole submission."""
    cell, found = run_sealed(exercise(f"import builtins\nbuiltins.isinstance = lambda *args: True\n{RIGHT}"),
                             tmp_path, timeout=3)
    assert errors(cell) == [f"IntegrityError: {found[0]}"]
    assert found == ["test-double did not run as released: the kernel stopped answering before the cell finished"]


def test_a_kernel_that_cannot_load_what_grading_checks_is_named(tmp_path, monkeypatch):
    """A kernel whose lab_utils cannot be imported (a broken environment): every test fails, and the
    instructor is told why rather than shown a zero."""
    (tmp_path / "broken" / "lab_utils").mkdir(parents=True)
    (tmp_path / "broken" / "lab_utils" / "__init__.py").write_text("raise ImportError('half installed')")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "broken"))
    cell, found = run_sealed(exercise(RIGHT), tmp_path)
    assert errors(cell) == ["NameError: name 'assert_own_implementation' is not defined"]
    assert found == ["the grader's first cell did not report (ImportError: half installed): no test can be trusted"]


def test_findings_without_a_record_say_it_was_not_checked(tmp_path):
    assert integrity.findings(tmp_path / "lesson.ipynb")[0].startswith("not checked for tampering")


def test_every_use_of_the_reference_a_test_caught_is_flagged(tmp_path):
    """The own-implementation check's messages, as graded cells hold them, become flags that name
    the test and the reference: an import, a function built from its code, and a wrapper."""
    cell = {"__name__": "__main__"}  # a notebook's namespace
    exec("import types\nimport lab_utils.memory\nfrom lab_utils.memory import top_k\n"
         "format_recall = types.FunctionType(lab_utils.memory.format_recall.__code__, globals())\n"
         "def memory_from_json(line, where):\n    return lab_utils.memory.memory_from_json(line, where)\n", cell)
    answers = {"test-top-k": cell["top_k"], "test-format-recall": cell["format_recall"],
               "test-memory-from-json": cell["memory_from_json"]}
    cells = []
    for grade_id, answer in answers.items():
        try:
            assert_own_implementation(answer)
        except AssertionError as caught:
            cells.append(new_code_cell("", metadata={"nbgrader": {"grade_id": grade_id}}, outputs=[
                nbformat.v4.new_output("error", ename="AssertionError", evalue=str(caught), traceback=[])]))
    nbformat.write(new_notebook(cells=cells), tmp_path / "graded.ipynb")
    assert integrity.reference_used(tmp_path / "graded.ipynb") == [
        "test-top-k: the answer is the lab_utils reference lab_utils.memory.top_k",
        "test-format-recall: the answer is the lab_utils reference lab_utils.memory.format_recall",
        "test-memory-from-json: the answer reached the lab_utils reference lab_utils.memory.memory_from_json"]


def test_a_result_made_to_pass_any_comparison_is_flagged_once_per_answer(tmp_path):
    said = []
    for source in ("class Anything:\n    def __eq__(self, other):\n        return True\n"
                   "def top_k(scored, k, min_score):\n    return Anything()\n",) * 2:
        namespace = {"__name__": "__main__"}
        exec(source, namespace)
        with pytest.raises(AssertionError) as caught, own_implementation(namespace["top_k"]):
            namespace["top_k"]([], 1, 0.0)
        said.append(str(caught.value))
    cells = [new_code_cell("", metadata={"nbgrader": {"grade_id": grade_id}}, outputs=[
        nbformat.v4.new_output("error", ename="AssertionError", evalue=message, traceback=[])])
        for grade_id, message in zip(("test-top-k", "test-top-k-hidden-ties"), said)]
    nbformat.write(new_notebook(cells=cells), tmp_path / "graded.ipynb")
    assert integrity.comparison_decided(tmp_path / "graded.ipynb") == [
        "test-top-k: top_k returned an object of Anything, a class of the notebook's own, which decides how a test "
        "compares it through __eq__"]


# --- through nbgrader's autograde, on lesson 01 ---


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "solutions" / LESSON, root / "solutions" / LESSON)
    shutil.copy(ROOT / "nbgrader_config.py", root)
    subprocess.run([sys.executable, "-m", "lab_utils.course", "release", "--root", str(root)], check=True)
    return root


def autograde(root, student, nb, files: dict[str, str] | None = None) -> tuple[float, list[str]]:
    """Hand `nb` (and `files`) in, autograde it with the integrity steps; (auto score, findings)."""
    folder = root / "submitted" / student / LESSON
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{LESSON}.ipynb")
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    settings = config.load(root)
    integrity.install(settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = NbGraderAPI(config=settings).autograde(LESSON, student)
    assert result["success"], result.get("log")
    with Gradebook(config.gradebook_url(root)) as gb:
        score = gb.find_submission(LESSON, student).code_score
    return score, integrity.findings(root / "autograded" / student / LESSON / f"{LESSON}.ipynb")


def released(root):
    return nbformat.read(root / "lessons" / LESSON / f"{LESSON}.ipynb", as_version=4)


def solution(root):
    return nbformat.read(root / "solutions" / LESSON / f"{LESSON}.ipynb", as_version=4)


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_the_solution_scores_full_marks_unflagged(course):
    score, found = autograde(course, "honest", solution(course))
    assert found == []
    with Gradebook(config.gradebook_url(course)) as gb:
        assert score == gb.find_assignment(LESSON).max_code_score


def test_a_script_a_cell_shows_does_not_run_in_its_feedback(course):
    """An outside cheater's cell showed a <script> and an <img onerror=...>: feedback and Formgrader wrote them
    as they were, to run in the browser of the student or the instructor who opened it."""
    nb = solution(course)
    nb.cells.insert(1, new_code_cell("from IPython.display import HTML, display\n"
                                     "display(HTML('<b>bold</b><script>document.title = 1</script>'\n"
                                     "             '<img src=x onerror=\"document.title = 2\">'))"))
    autograde(course, "scripted", nb)
    settings = config.load(course)
    integrity.install(settings)
    assert NbGraderAPI(config=settings).generate_feedback(LESSON, "scripted")["success"]
    shown = (course / "feedback" / "scripted" / LESSON / f"{LESSON}.html").read_text()
    # Shown as text (`&lt;script&gt;`), as the cell's code is.
    assert "<b>bold</b>" in shown and "<script>document.title" not in shown and "<img src=" not in shown


def test_a_blank_lesson_with_an_input_transformer_earns_nothing(course):
    nb = released(course)
    first = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    first.source = 'get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])'
    score, found = autograde(course, "transformer", nb)
    tests = [c.metadata.nbgrader.grade_id for c in nb.cells if integrity.is_test(c)]
    assert score == 0
    assert found and [f.split(" ")[0] for f in found] == tests, "every test cell after the cheat is named"
    settings = config.load(course)
    integrity.install(settings)
    assert NbGraderAPI(config=settings).generate_feedback(LESSON, "transformer")["success"]
    feedback = course / "feedback" / "transformer" / LESSON
    assert "IntegrityError: test-" in (feedback / f"{LESSON}.html").read_text(), "the student sees why"
    assert [p.name for p in feedback.iterdir()] == [f"{LESSON}.html"], "the record stays with the instructor"


def graded_tests(nb) -> list:
    return [c for c in nb.cells if integrity.is_test(c)]


def test_a_kernel_that_exits_is_graded_up_to_the_exit_and_flagged(course):
    nb = solution(course)
    tests = graded_tests(nb)
    # The kernel exits in the second exercise's answer: the first exercise's tests ran before it.
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    answers[1].source += "\nimport os\nos._exit(0)"
    before = [c for c in tests if nb.cells.index(c) < nb.cells.index(answers[1])]
    score, found = autograde(course, "exits", nb)
    assert score == sum(c.metadata.nbgrader.points for c in before)
    after = [c.metadata.nbgrader.grade_id for c in tests[len(before):]]
    assert after
    assert found == [f"{t} did not run as released: the kernel exited before the cell finished" for t in after]
    # grades.csv's status gives one finding for them all, not one per cell (a near-copy of the reference may follow).
    status = grade_table(course).set_index(["student", "lesson"]).status[("exits", LESSON)]
    assert status.split("; ")[0] == (f"flagged: {after[0]} and {len(after) - 1} more test cells did not run as "
                                     "released: the kernel exited before the cell finished"), status
    assert status.count("did not run as released") == 1, status
    # So does autograde's report of the submission.
    flagged = [line for line in str(Outcome("exits", LESSON, flags=found)).splitlines() if "FLAG" in line]
    assert flagged == [f"  FLAG    exits/{LESSON}: {status.split('; ')[0].removeprefix('flagged: ')}"]


def test_edited_deleted_and_renamed_test_cells_are_named_and_the_released_ones_run(course):
    nb = solution(course)
    renamed, edited, deleted, inflated = (graded_tests(nb)[i] for i in (0, 1, -1, 2))
    names = [c.metadata.nbgrader.grade_id for c in (renamed, edited, deleted, inflated)]
    edited.source = "pass"
    nb.cells.remove(deleted)
    renamed.metadata.nbgrader.grade_id = "test-mine"
    points = inflated.metadata.nbgrader.points
    inflated.metadata.nbgrader.points = 100
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.metadata.nbgrader.update(grade=True, points=5)  # an answer made to score itself
    score, found = autograde(course, "tampered", nb)
    assert sorted(found) == sorted([
        f"test cell {names[0]} renamed to test-mine",
        f"test cell {names[1]} edited (the released version was run)",
        f"test cell {names[2]} deleted (the released version was put back and run)",
        f"grading flags of {names[3]} edited: points set to 100, released {float(points)!r}; graded as released",
        f"grading flags of {answer.metadata.nbgrader.grade_id} edited: grade set to True, released False; "
        "graded as released",
    ])
    with Gradebook(config.gradebook_url(course)) as gb:
        assert score == gb.find_assignment(LESSON).max_code_score, "the released tests ran against the solution"


def test_a_test_cell_as_an_earlier_release_had_it_is_no_edit(tmp_path):
    """A notebook handed in before a visible test was fixed holds the test as it was released then (a
    commit of lessons/): the fixed test runs, and nothing is flagged. A test the student edited still is."""
    root = tmp_path / "course"
    shutil.copytree(ROOT / "solutions" / LESSON, root / "solutions" / LESSON)
    shutil.copy(ROOT / "nbgrader_config.py", root)
    teacher = ["-c", "user.name=Instructor", "-c", "user.email=instructor@example.org"]
    git = lambda *args: subprocess.run(["git", "-C", str(root), *teacher, *args], check=True)  # noqa: E731
    git("init", "-q")
    for message in ("the term starts", "a visible test fixed"):
        if message != "the term starts":
            fixed = solution(root)
            cell(fixed, "test-top-k").source += "\nassert top_k([], 3, 0.0) == [], 'nothing scored, nothing kept'"
            nbformat.write(fixed, root / "solutions" / LESSON / f"{LESSON}.ipynb")
        subprocess.run([sys.executable, "-m", "lab_utils.course", "release", "--root", str(root)], check=True)
        git("add", "solutions", "lessons")
        git("commit", "-qm", message)
        before = before if message != "the term starts" else released(root)
    edited = copy.deepcopy(before)
    cell(edited, "test-top-k").source = "pass"
    assert autograde(root, "early", before)[1] == []
    assert autograde(root, "editor", edited)[1] == ["test cell test-top-k edited (the released version was run)"]


# The kernel starts in the submission's folder, so a launcher runs instead of ipykernel's: the student's
# code would run before any check (this one only starts the real kernel). An archive of modules is one
# `sys.path.append` away from an import.
@pytest.mark.parametrize("name, text", [("ipykernel_launcher.py", "from ipykernel import kernelapp\n"
                                                                  "kernelapp.launch_new_instance()\n"),
                                        ("studyhelp.zip", "PK")])
def test_python_files_handed_in_cost_every_point(course, name, text):
    score, found = autograde(course, name.split(".")[0], solution(course), {name: text})
    assert score == 0
    assert found[0] == f"Python files handed in with the notebook: {name}"
    assert len(found) == 1 + len(graded_tests(solution(course)))
    trust = f"could run in place of the course's ({name}): no test cell can be trusted; review it by hand"
    assert all(f.endswith(trust) for f in found[1:])


def test_errors_of_other_kinds_before_a_passing_test_change_nothing(tmp_path):
    """A stub's NotImplementedError, then a wrong answer's error, then a test that passes: what an
    error leaves in `sys` (sys.last_type) is not the grader's to judge."""
    nb = exercise(RIGHT)
    test = nb.cells.pop()
    again = new_code_cell(test.source, metadata={"nbgrader": {**test.metadata["nbgrader"], "grade_id": "test-again"}})
    nb.cells += [new_code_cell("raise NotImplementedError('a stub')"), test, new_code_cell("raise KeyError('wrong')"),
                 again]
    cell, found = run_sealed(nb, tmp_path)
    assert errors(cell) == [] and found == []


FORGED_CELL = """import inspect, linecache, lab_utils.memory as q
from lab_utils.grading import own_implementation
from lab_utils.memory import Memory, NOTHING
source = inspect.getsource(q.format_recall)
name = "/tmp/ipykernel_0/4242424242.py"
get_ipython().compile._filename_map[name] = 4242
linecache.cache[name] = (len(source), None, source.splitlines(True), name)
exec(compile(source, name, "exec", dont_inherit=True))
"""


def test_the_sealed_cells_reach_the_grader_alone(tmp_path):
    """An outside cheater raised the grader's audit event to read every cell, hidden tests included, and
    answered what they expect: the audit hook hands the cells out once, to lab_utils.grading."""
    asked = ("import sys\nbox = []\nsys.audit('lab_utils.grading.sealed_cells', box)\n"
             "def double(x):\n    return 2 * x if box[0] is None else x\n")
    cell, _ = run_sealed(exercise(asked), tmp_path)
    assert errors(cell) == [], "the answer found the sealed cells"


def test_the_graders_first_input_holds_no_test(tmp_path):
    """The grader's first line is the kernel's first input, which a cell can read back: an outside cheater
    printed every hidden test from it (`In[1]`), before any test had run."""
    seen = ("SEEN = any('double ' + 'doubles' in entry for entry in In)\n"  # not this cell's own text
            "def double(x):\n    return x if SEEN else 2 * x\n")
    cell, _ = run_sealed(exercise(seen), tmp_path)
    assert errors(cell) == [], "the answer read the test before it ran"


def test_the_running_tests_text_is_out_of_an_answers_reach(tmp_path):
    """Outside cheaters' answers read the running test cell, from IPython's history, the kernel's request or
    the running cell's record (reached through `quit`, with no word a scan knows), and returned what it
    expects: while a test runs, none holds its text."""
    nb = exercise("def double(x):\n    read = In[-1] + get_ipython().kernel.get_parent()['content']['code']\n"
                  "    info = getattr(getattr(getattr(quit, '_' + 'ip'), 'display' + 'hook').exec_result, 'info')\n"
                  "    read += info.raw_cell + (info.transformed_cell or '')\n"
                  "    return 4 if 'double ' + 'doubles' in read else 0\n")
    nb.cells[-1].source = ("from lab_utils.grading import own_implementation\n"
                           "with own_implementation(double):\n    assert double(2) == 4, 'double doubles'")
    cell, found = run_sealed(nb, tmp_path)
    assert errors(cell) == ["AssertionError: double doubles"] and found == [], (errors(cell), found)


def test_a_cell_forged_into_ipythons_records_is_no_cell_of_the_notebook(tmp_path):
    """The reference compiled under a cell's name that IPython's records were made to show: autograde
    knows the notebook's cells from its own audit hook, where no cell can forge one."""
    nb = exercise(FORGED_CELL)
    nb.cells[-1].source = ("with own_implementation(format_recall, 'lab_utils.memory.format_recall'):\n"
                           "    assert format_recall([]) == NOTHING")
    cell, _ = run_sealed(nb, tmp_path)
    assert any("ran a copy of the lab_utils reference lab_utils.memory.format_recall" in e for e in errors(cell)), \
        errors(cell)


# Outside cheaters' answers: the reference's code (a function made again from its code object) run by a job
# handed to one of the kernel's own loop threads, which ran before the test set its watch; or the frames of
# every thread, the test's among them, read there.
ON_A_KERNEL_LOOP = """import queue, sys, types
import lab_utils.memory as q
from lab_utils.grading import own_implementation
from lab_utils.memory import NOTHING
_copy = types.FunctionType(q.format_recall.__code__, vars(q), "helper")
def aside(fn, *args):
    box = queue.Queue()
    def job():
        try:
            box.put((True, fn(*args)))
        except BaseException as error:
            box.put((False, error))
    {schedule}(job)
    ok, value = box.get(timeout=30)
    if not ok:
        raise value
    return value
def format_recall(memories):
    {answer}
"""
KERNEL_LOOPS = {"IOPub": "sys.stdout.pub_thread.schedule",
                "control": "get_ipython().kernel.control_thread.io_loop.add_callback",
                "shell channel": "get_ipython().kernel.shell_channel_thread.io_loop.add_callback"}
RUN_THERE = {"a copy": ("return aside(_copy, memories)", "ran a copy of the lab_utils reference "
                                                          "lab_utils.memory.format_recall"),
             "frames read": ("aside(sys._current_frames)\n    return NOTHING",
                             "read the test that called it through sys._current_frames")}


@pytest.mark.parametrize("loop", KERNEL_LOOPS)
@pytest.mark.parametrize("what", RUN_THERE)
def test_what_an_answer_runs_on_the_kernels_own_threads_is_watched(what, loop, tmp_path):
    answer, said = RUN_THERE[what]
    nb = exercise(ON_A_KERNEL_LOOP.format(schedule=KERNEL_LOOPS[loop], answer=answer))
    nb.cells[-1].source = ("with own_implementation(format_recall, 'lab_utils.memory.format_recall'):\n"
                           "    assert format_recall([]) == NOTHING")
    cell, _ = run_sealed(nb, tmp_path)
    assert any(said in e for e in errors(cell)), errors(cell)


def test_a_kernel_loop_held_by_a_job_fails_the_test_unwatched(tmp_path):
    """A job of the notebook's that holds a loop of the kernel's (here until the answer lets it go) could run
    whatever the answer hands it there, the watch never let in: the test fails, saying so."""
    holding = "hold = threading.Event()\nget_ipython().kernel.control_thread.io_loop.add_callback(hold.wait, 30)\n"
    answer = ON_A_KERNEL_LOOP.format(schedule="sys.stdout.pub_thread.schedule", answer="hold.set()\n    return NOTHING")
    nb = exercise(f"import threading\n{answer}{holding}")
    nb.cells[-1].source = ("with own_implementation(format_recall, 'lab_utils.memory.format_recall'):\n"
                           "    assert format_recall([]) == NOTHING")
    cell, _ = run_sealed(nb, tmp_path)
    said = "grading could not watch the kernel's Control thread: its loop did not let the watch in within 5 seconds"
    assert any(said in e for e in errors(cell)), errors(cell)


# An outside cheater's answer: the sort key nested in the reference, made a function of its own and run.
NESTED_KEY = """import types
from types import SimpleNamespace
from lab_utils.grading import own_implementation
from lab_utils.reflection.skills import SkillStore
_key = next(types.FunctionType(c, {}) for c in SkillStore.eviction_order.__code__.co_consts
            if isinstance(c, types.CodeType))
def double(x):
    _key(SimpleNamespace(name="a", meta=SimpleNamespace(lastUsedAt=None, createdAt=1)))
    return 2 * x
"""


def test_code_nested_in_a_reference_run_by_an_answer_is_a_copy(tmp_path):
    nb = exercise(NESTED_KEY)
    nb.cells[-1].source = ("with own_implementation(double, 'lab_utils.reflection.skills.SkillStore.eviction_order'):"
                           "\n    assert double(2) == 4")
    cell, _ = run_sealed(nb, tmp_path)
    said = "ran a copy of the lab_utils reference lab_utils.reflection.skills.SkillStore.eviction_order"
    assert any(said in e for e in errors(cell)), errors(cell)
