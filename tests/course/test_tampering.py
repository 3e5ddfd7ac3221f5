"""Cells that reach into the kernel or the interpreter are named for a person to read; honest answers are not.

The cheats below are condensed from outside cheaters' notebooks that earned full marks unflagged
from the checks inside the kernel (a hook hidden from the report, the proof line's `exec` shadowed,
a context manager's exit patched, a reference's private helper called).
"""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from lab_utils.course import tampering
from nbtools import FIXTURES, LESSONS, fixture_answers, nbgrader_meta, notebook_path, solution_answer, with_answers


def lesson(answer: str = "def answer():\n    raise NotImplementedError()") -> nbformat.NotebookNode:
    """A released lesson in small: an import, a helper, an answer cell and its test cell."""
    grading = {"schema_version": 3, "task": False, "locked": True, "points": 1}
    return new_notebook(cells=[
        new_code_cell("from lab_utils.attacks.defenses import DEFENSES\nfrom lab_utils import rules\n"
                      "from lab_utils.rules import redact"),
        new_code_cell("EXPECTED = 2\n\ndef check(value):\n    assert value == EXPECTED, 'two'"),
        new_code_cell(answer, metadata={"nbgrader": {**grading, "grade": False, "grade_id": "answer",
                                                     "locked": False, "solution": True}}),
        new_code_cell("with own_implementation(answer, 'lab_utils.rules.redact'):\n    check(answer())",
                      metadata={"nbgrader": {**grading, "grade": True, "grade_id": "test-answer", "solution": False}}),
    ])


def with_cell_at(nb, source: str) -> nbformat.NotebookNode:
    """The notebook with a cell of the student's own before its test cell."""
    nb.cells.insert(3, new_code_cell(source))
    return nb


def scan(tmp_path, answer: str, added: str | None = None, test: str | None = None) -> list[str]:
    released, submitted = tmp_path / "released.ipynb", tmp_path / "submitted.ipynb"
    nbformat.write(lesson(), released)
    nb = lesson(answer) if added is None else with_cell_at(lesson(answer), added)
    if test is not None:
        nb.cells[-1].source = test
    nbformat.write(nb, submitted)
    return tampering.findings(submitted, released)


CHEATS = {
    "the proof line's exec shadowed": ("def exec(source, *namespaces):\n    return None", "def exec"),
    "a hook between cells": ("import sys\nsys.displayhook = print", ".displayhook"),
    "the shell's namespace": ("get_ipython().user_ns['__builtins__'] = {}", "get_ipython"),
    "a context manager's exit patched": ("import contextlib\ncontextlib._GeneratorContextManager.__exit__ = None",
                                         "contextlib._GeneratorContextManager"),
    "a reference's private helper": ("def answer():\n    return rules._TokenPostings()", "rules._TokenPostings"),
    "a library's constant changed": ("DEFENSES['rules'] = DEFENSES['none']", "DEFENSES['rules'] = ..."),
    "a library patched": ("rules.redact = str", "rules.redact = ..."),
    "the lesson's helper redefined": ("def check(value):\n    pass", "def check (the lesson's own helper)"),
    "a result equal to anything": ("class Two:\n    def __eq__(self, other):\n        return True\n"
                                   "def answer():\n    return Two()", "def __eq__"),
    "the test's frame read": ("def answer():\n    try:\n        1 / 0\n    except ZeroDivisionError as error:\n"
                              "        return error.__traceback__.tb_frame.f_back.f_locals['value']", ".tb_frame"),
    "the test's output captured": ("%%capture\ndef answer():\n    return 1", "get_ipython"),
    "a library's inside by a computed name": ("import sys\ndef answer():\n    return getattr(sys, '_get' + 'frame')(1)",
                                              "getattr(sys, ...)"),
    "a traceback written by the notebook": ("class Shown(Exception):\n    def _render_traceback_(self):\n"
                                           "        return ['Cell In[3], line 1', 'Shown: x']",
                                           "def _render_traceback_"),
    "a traceback set on a class": ("def answer(error=ValueError):\n    error._render_traceback_ = list",
                                   "._render_traceback_"),
    "an attribute read by a class pattern": ("def answer(f=len):\n    match f:\n        case object(__code__=body):\n"
                                              "            return body", "case ...(__code__=...)"),
    "a library's private module": ("import re._compiler\ndef answer(p=None):\n    return re._compiler.compile(p)",
                                    "import re._compiler"),
    "the shell reached through quit": ("def answer():\n    return getattr(quit, '_' + 'ip')", "'_ip' spelled"),
    "code handed to the kernel's output thread": ("import sys\ndef answer(job=print):\n"
                                                  "    sys.stdout.pub_thread.schedule(job)", ".pub_thread"),
    "text run as code": ("def answer():\n    return eval('1 + 1')", "eval"),
    "a name in pieces": ("def answer():\n    return getattr(answer, '__glo' + 'bals__')",
                         "'__globals__' spelled in pieces"),
    "a name joined from pieces": ("def answer(thing=None):\n    return getattr(thing, ''.join(['_get', 'frame']))",
                                  "'_getframe' spelled in pieces"),
    "the kernel's input history": ("def answer():\n    return len(In[-1])", "In"),
    "the grader imported": ("from lab_utils import grading\ndef answer():\n    return 2",
                            "from lab_utils import grading"),
    # From a later round of outside cheaters: a library's source run as a module of their own (renamed,
    # or compiled without docstrings, so that no copy matches the reference), a server's thread reached
    # through socketserver, a process detached through a shell, the grader's audit event raised to read
    # the hidden tests, a private pattern kept by a getter, a test's list emptied through `global`, and
    # a class equal to anything that passes itself off as json's.
    "a library's file run as code": ("import runpy\nfrom lab_utils import rules\nNS = runpy.run_path(rules.__file__)",
                                     "import runpy"),
    "a copy compiled ahead": ("import py_compile\ndef answer():\n    return 2", "import py_compile"),
    "a thread reached through another module": ("import socketserver as s\ns.threading.Thread(target=print).start()",
                                                "s.threading"),
    "a process detached through a shell": ("import os\nos.popen('sleep 60 &')", "os.popen"),
    "the grader's audit event raised": ("import sys\nbox = []\nsys.audit('lab_utils.grading.sealed_cells', box)",
                                        "sys.audit"),
    "a private attribute by a getter": ("from operator import attrgetter\nkept = attrgetter('_INSTRUCTION')(rules)",
                                        "attrgetter('_INSTRUCTION')"),
    "a name of the lesson's rebound": ("def answer():\n    global EXPECTED\n    EXPECTED = 3\n    return 3",
                                       "global EXPECTED (a name of the lesson's cells)"),
    # The next round's: the test's context manager patched through a name computed backwards, an object
    # of the notebook's namespace rewritten, code unpickled, modules from a handed-in archive, a lesson's
    # helper rebound to one that swallows errors, the exercise's reference called before its tests.
    "a name computed for a getter": ("from operator import attrgetter\nimport contextlib\n"
                                     "M = attrgetter('reganaMtxetnoCrotareneG_'[::-1])(contextlib)",
                                     "attrgetter('reganaMtxetnoCrotareneG_'[::-1])"),
    "the notebook's namespace": ("import __main__\ndef answer():\n    return 2", "import __main__"),
    "code unpickled": ("import pickle\nrun = pickle.loads(b'')", "import pickle"),
    "modules from an archive": ("import sys\nsys.path.append('studyhelp.zip')", "sys.path"),
    "a lesson's helper rebound": ("check = lambda value: None\ndef answer():\n    return 3",
                                  "check = ... (the lesson's own helper)"),
    "the reference called before its tests": ("KEPT = redact('mail a@b.io')\ndef answer():\n    return 2",
                                              "redact (a reference its tests switch off)"),
    "a class passed off as a library's": ("class Two(int):\n    __module__ = 'json'\n    __eq__ = lambda s, o: True\n"
                                          "def answer():\n    return Two(2)", "__eq__ = ... in class Two"),
    # And the next: code hidden as the text a `%%time` or `%timeit` runs, a reference's code read by a
    # getter given its name as a constant, a lesson's helper function rebound through `global`.
    "code run by %%time": ("%%time\nimport gc\ndef answer():\n    return 2", "import gc"),
    "code run by %timeit": ("%timeit -n 1 -r 1 get_ipython().user_ns\ndef answer():\n    return 2", "get_ipython"),
    "a reference's code by getattr": ("def answer():\n    return getattr(redact, '__code__')",
                                      "'__code__' in a string"),
    "a lesson's function rebound through global": ("def answer():\n    global check\n    check = print\n    return 2",
                                                   "global check (a name of the lesson's cells)"),
    # And the next: the notebook's namespace through a format field, then the running test's text from
    # the kernel's history (`_i12`); a library's file read and put on the path; a switched-off reference
    # reached through its package before the tests.
    "the namespace through a format field": ("from string import Formatter\n"
                                             "NS = Formatter().get_field('0.__globals__', [print], {})[0]",
                                             "'__globals__' in a string"),
    "the kernel's history of inputs": ("def answer():\n    return len(_i12)", "_i12"),
    "a library's file read": ("from pathlib import Path\nSOURCE = (Path('lab_utils') / 'metrics.py').read_text()",
                              "'metrics.py' in a string"),
    "a folder put on the path": ("import site\nsite.addsitedir('helpers')", "import site"),
    # An outside cheater's: every name of the reference's module, the reference called before its tests by
    # the name its answer then takes.
    "a reference's module star-imported": ("from lab_utils.rules import *\ndef answer():\n    return 2",
                                           "from lab_utils.rules import * (with lab_utils.rules.redact, a reference"),
    "a reference reached through its package": ("KEPT = rules.redact('mail a@b.io')\ndef answer():\n    return 2",
                                                "rules.redact (a reference its tests switch off)"),
    # And the third: names hidden in rot13 and decoded, a reference's code cloned into a new function.
    "a name in rot13": ("def answer():\n    return len('__tybonyf__')", "'__globals__' in rot13 in a string"),
    "a name spelled backwards": ("def answer():\n    return len('__edoc__')", "'__code__' backwards in a string"),
    "a decoder of hidden names": ("import codecs\ndef answer():\n    return 2", "import codecs"),
    "a function built from a code object": ("import types\ndef answer():\n    return types.FunctionType",
                                            "types.FunctionType"),
    # And the fourth: code text in hex run by a profiler, a library's file found among all of them.
    "a runner of code text": ("import cProfile\ndef answer():\n    return 2", "import cProfile"),
    "code hidden as hex": (f"CODE = '{'print(2)  # and more hidden code'.encode().hex()}'\ndef answer():\n    return 2",
                           "text encoded as hex in a string"),
    "code hidden as base64": ("CODE = 'cHJpbnQoMikgICMgYW5kIG1vcmUgaGlkZGVuIGNvZGU='\ndef answer():\n    return 2",
                              "text encoded as base64 in a string"),
    "every Python file looked through": ("from pathlib import Path\nFILES = list(Path('.').rglob('*.py'))\n"
                                         "def answer():\n    return 2", "'*.py' in a string"),
    "an attribute of a library's function by a computed name": (
        "NAME = 'x'\ndef answer():\n    return getattr(rules.redact, NAME)", "getattr(rules.redact, ...)"),
    # And the fifth: eval through typing's annotations, names as character codes, a getter renamed.
    "eval through a class's annotations": ("import typing\nrun = typing.get_type_hints(type('R', (), "
                                           "{'__annotations__': {'x': 'ev' 'al'}}))['x']", "typing.get_type_hints"),
    "eval imported from typing": ("from typing import get_type_hints as hints\ndef answer():\n    return 2",
                                  "from typing import get_type_hints"),
    "a name as character codes": ("def spelled(*codes):\n    return bytes(codes).decode()\n"
                                  "def answer():\n    return spelled(95, 95, 99, 111, 100, 101, 95, 95)",
                                  "'__code__' spelled as character codes"),
    "a name as a list of character codes": ("NAME = ''.join(map(chr, [101, 118, 97, 108]))\n"
                                            "def answer():\n    return 2", "'eval' spelled as character codes"),
    # vars reads a namespace: the caller's, a library's (a module, a class or function of one), or either
    # when handed on uncalled.
    "the caller's namespace through vars": ("def answer():\n    return vars()['answer']", "vars"),
    "a module's namespace through vars": ("import sys\nKEPT = dict(vars(sys))\ndef answer():\n    return 2", "vars"),
    "a library's namespace through vars": ("def answer():\n    return len(vars(rules))", "vars"),
    "a library function's namespace through vars": ("def answer():\n    return len(vars(rules.redact))", "vars"),
    "vars handed on": ("look = vars\ndef answer():\n    return len(look(rules))", "vars"),
    "a getter renamed": ("from operator import attrgetter as get\ndef answer(name='x'):\n    return get(name)(rules)",
                         "attrgetter(name)"),
}


@pytest.mark.parametrize("name", CHEATS)
def test_a_cell_that_reaches_into_the_kernel_is_named(name, tmp_path):
    answer, named = CHEATS[name]
    found = scan(tmp_path, answer)
    assert len(found) == 1 and found[0].startswith("answer answer can get around the grading: "), found
    assert named in found[0], found


def test_a_cell_of_the_students_own_is_read_and_named_by_its_number(tmp_path):
    found = scan(tmp_path, "def answer():\n    return 2", added="import gc\ngc.callbacks.append(print)")
    assert found == ["cell 4 (added by the student) can get around the grading: import gc; read it"]


def test_a_reference_called_before_its_tests_in_a_cell_of_the_students_own_is_named(tmp_path):
    """An outside cheater's: a cell of their own fills a table from the reference before its tests switch
    it off, and the answer only looks the table up. After its tests, the reference changes no outcome."""
    table = "TABLE = {text: redact(text) for text in ('mail a@b.io', 'no mail')}"
    found = scan(tmp_path, "def answer():\n    return TABLE['mail a@b.io']", added=table)
    assert found == ["cell 4 (added by the student) can get around the grading: "
                     "redact (a reference its tests switch off); read it"]
    released, submitted = tmp_path / "released.ipynb", tmp_path / "submitted.ipynb"
    nb = lesson("def answer():\n    return 2")
    nb.cells.append(new_code_cell("print(answer() == redact('mail a@b.io'))"))
    nbformat.write(nb, submitted)
    assert tampering.findings(submitted, released) == []


def test_what_the_student_changed_in_a_plain_cell_of_the_lessons_is_read(tmp_path):
    """What the release has in the cell (a helper, a reference it demonstrates) is the lesson's."""
    released, submitted = tmp_path / "released.ipynb", tmp_path / "submitted.ipynb"
    nb = lesson()
    nb.cells[1].source += "\nSHOWN = redact('mail a@b.io')"
    nbformat.write(nb, released)
    nb.cells[1].source += "\nprint(SHOWN)"
    nb.cells[0].source += "\nKEPT = rules.redact('mail a@b.io')"
    nbformat.write(nb, submitted)
    assert tampering.findings(submitted, released) == [
        "cell 1 (changed from the release) can get around the grading: "
        "rules.redact (a reference its tests switch off); read it"]
    nb.cells[1].source = nb.cells[1].source.replace("== EXPECTED", ">= EXPECTED")
    nbformat.write(nb, submitted)
    assert "cell 2 (changed from the release) can get around the grading: def check (the lesson's own helper); " \
           "read it" in tampering.findings(submitted, released)


def test_the_fields_of_an_object_read_through_vars_are_not_named(tmp_path):
    """An outside tester's honest answer, once flagged: vars of an object is its fields, as its __dict__."""
    honest = "def answer(skills=()):\n    rows = [vars(s.meta) for s in skills]\n    return len(rows) + 2"
    assert scan(tmp_path, honest) == []


def test_habits_settings_and_test_cells_are_not_read(tmp_path):
    habits = ("%matplotlib inline\n%load_ext autoreload\n%autoreload 2\nimport matplotlib.pyplot as plt\n"
              "import pandas as pd\nplt.rcParams['figure.figsize'] = (8, 3)\npd.options.display.max_rows = 20\n"
              "from operator import attrgetter\nfrom dataclasses import dataclass\n@dataclass\nclass Row:\n"
              "    __slots__ = ('value',)\n    value: int\n"
              "def answer():\n    return max([Row(2)], key=attrgetter('value')).value")
    # A test cell changed runs as released at autograde (integrity names the change): nothing of it runs.
    assert scan(tmp_path, habits, test="import sys\nsys.settrace(print)") == []


def test_a_lesson_released_again_is_read_again(tmp_path):
    """The lesson as released is read once for a class: a release that changes it is read anew."""
    released, submitted = tmp_path / "released.ipynb", tmp_path / "submitted.ipynb"
    nb = lesson()
    nbformat.write(nb, released)
    nbformat.write(with_cell_at(lesson("def answer():\n    return 2"), "def tidy(value):\n    return value"), submitted)
    assert tampering.findings(submitted, released) == []
    nb.cells.append(new_code_cell("def tidy(value):\n    return value.strip()"))  # now a helper of the lesson's
    nbformat.write(nb, released)
    assert tampering.findings(submitted, released) == [
        "cell 4 (added by the student) can get around the grading: def tidy (the lesson's own helper); read it"]


@pytest.mark.parametrize("lesson_name", LESSONS)
def test_honest_answers_reach_into_nothing(lesson_name, tmp_path):
    """The reference answers, and every fixture student's (right, one rule wrong, hard-coded, partial)."""
    released = notebook_path("lessons", lesson_name)
    solution = nbformat.read(notebook_path("solutions", lesson_name), as_version=4)
    students = {"reference": {nbgrader_meta(c)["grade_id"]: solution_answer(c) for c in solution.cells
                              if nbgrader_meta(c).get("solution")}}
    students |= {kind: fixture_answers(kind, lesson_name) for kind in ("different", "one_rule_wrong", "hardcoded",
                                                                       "partial")
                 if (FIXTURES / kind / f"{lesson_name}.py").exists()}
    for student, answers in students.items():
        submitted = tmp_path / f"{student}.ipynb"
        nbformat.write(with_answers(released, answers), submitted)
        assert tampering.findings(submitted, released) == [], student
