"""The own-implementation check catches imports and thin wrappers, and accepts real work."""

import abc
import contextlib
import dis
import functools
import importlib.util
import inspect
import json
import queue
import re
import socketserver
import subprocess
import sys
import tempfile
import textwrap
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from logging.handlers import QueueListener
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from tornado.ioloop import IOLoop

from lab_utils import grading, memory, paths
from lab_utils.grading import (DECIDES, NO_TEXT, PEEKED, REACHED, SWITCHED, TAKEN, assert_own_implementation,
                               own_implementation)
from lab_utils.memory import format_recall
from lab_utils.reflection.skills import SkillStore
from lab_utils.temporal import writer


@pytest.fixture(autouse=True)
def kernel_as_it_is(monkeypatch):
    """This process's threads and children play the kernel's own, as a kernel's are when a lesson
    imports lab_utils.grading: other tests of the run may have started some since."""
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))
    monkeypatch.setattr(grading, "_KERNEL_PROCESSES", frozenset(grading._processes()))


def run(source: str):
    namespace = {"__name__": "__main__"}
    exec(source, namespace)  # as a notebook cell would define it
    return namespace


def run_as_cell(source: str, **given):
    """`source` compiled under a file name as IPython gives a cell's code (run() compiles it as "<string>")."""
    namespace = {"__name__": "__main__", **given}
    exec(compile(source, "/tmp/ipykernel_0/1234567890.py", "exec"), namespace)
    return namespace


# Each message names the reference after one of the phrases make grades flags (integrity.reference_used).
@pytest.mark.parametrize("answer", [format_recall, functools.partial(format_recall)], ids=["import", "partial"])
def test_an_imported_reference_fails(answer):
    with pytest.raises(AssertionError, match=f"{TAKEN} lab_utils.memory.format_recall,"):
        assert_own_implementation(answer)


@pytest.mark.parametrize("source", [
    "from lab_utils.memory import format_recall as ref\ndef format_recall(ms):\n    return ref(ms)\n",
    "import lab_utils.memory\ndef format_recall(ms):\n    return lab_utils.memory.format_recall(ms)\n",
    "from lab_utils import memory\ndef format_recall(ms):\n    return memory.format_recall(ms)\n",
])
def test_a_wrapper_around_the_reference_fails(source):
    with pytest.raises(AssertionError, match=f"{REACHED} lab_utils.memory.format_recall by calling it"):
        assert_own_implementation(run(source)["format_recall"])


def test_own_code_passes_even_using_other_helpers():
    source = ("from lab_utils.memory import NOTHING\n"
              "def format_recall(ms):\n    return '\\n'.join(m.text for m in ms) or NOTHING\n")
    assert_own_implementation(run(source)["format_recall"])
    assert memory.NOTHING


def test_an_answer_that_calls_itself_is_no_call_of_the_reference():
    source = ("from lab_utils.memory import Memory\n"
              "def format_recall(ms):\n    assert not ms or isinstance(ms[0], Memory)\n"
              "    return (ms[0].text + '\\n' + format_recall(ms[1:])).strip() if ms else ''\n")
    student = run(source)["format_recall"]
    with own_implementation(student, "lab_utils.memory.format_recall"):
        assert student([memory.Memory(id=f"m{i}", kind="fact", text=t, source="t-1", ts=1.0)
                        for i, t in enumerate("ab")]) == "a\nb"


# An answer in another form than a def: what a call of it runs is checked and watched like a function.
OWN_FORMAT = "def _lines(ms, sep):\n    return sep.join(m.text for m in ms)\n"


@pytest.mark.parametrize("source", [
    "import functools\n" + OWN_FORMAT + "format_recall = functools.partial(_lines, sep='\\n')\n",
    "class Formatter:\n    def __call__(self, ms):\n        return '\\n'.join(m.text for m in ms)\n"
    "format_recall = Formatter()\n",
    "import functools\nclass counted:\n    def __init__(self, fn):\n        functools.update_wrapper(self, fn)\n"
    "        self.fn, self.calls = fn, 0\n    def __call__(self, *args):\n        self.calls += 1\n"
    "        return self.fn(*args)\n@counted\ndef format_recall(ms):\n    return '\\n'.join(m.text for m in ms)\n",
    "class Shelf:\n    def format(self, ms):\n        return '\\n'.join(m.text for m in ms)\n"
    "format_recall = Shelf().format\n",
], ids=["partial", "callable object", "class decorator", "bound method"])
def test_an_answer_written_as_a_partial_an_object_or_a_method_passes(source):
    student = run(source)["format_recall"]
    with own_implementation(student, "lab_utils.memory.format_recall"):
        assert student([memory.Memory(id="m1", kind="fact", text="a", source="t-1", ts=1.0)]) == "a"


@pytest.mark.parametrize("source, said", [
    ("import lab_utils.memory as q\nclass Formatter:\n    def __call__(self, ms):\n        return q.format_recall(ms)\n"
     "format_recall = Formatter()\n", f"{REACHED} lab_utils.memory.format_recall"),
    ("import inspect, lab_utils.memory as q\n_g = dict(vars(q))\n"
     "exec(inspect.getsource(q.format_recall).replace('def format_recall(', 'def _copy('), _g)\n"
     "class Formatter:\n    def __call__(self, ms):\n        return _g['_copy'](ms)\nformat_recall = Formatter()\n",
     "ran a copy of the lab_utils reference lab_utils.memory.format_recall"),
    ("import functools\n@functools.cache\ndef format_recall(ms):\n    return ''\n",
     "format_recall is a _lru_cache_wrapper, which a test cannot look inside"),
    # A partial of its own kind: its function is an innocent stub, its __call__ runs a copy of the reference.
    ("import functools, inspect, lab_utils.memory as q\n_g = dict(vars(q))\n"
     "exec(inspect.getsource(q.format_recall).replace('def format_recall(', 'def _copy('), _g)\n"
     "class Via(functools.partial):\n    def __call__(self, ms):\n        return _g['_copy'](ms)\n"
     "def stub(ms):\n    return ''\nformat_recall = Via(stub)\n",
     "ran a copy of the lab_utils reference lab_utils.memory.format_recall"),
], ids=["calls the reference", "runs a copy of it", "functools.cache", "a partial's subclass"])
def test_an_answer_in_another_form_is_held_to_the_same_rules(source, said):
    student = run(source)["format_recall"]
    with pytest.raises(AssertionError, match=re.escape(said)):
        with own_implementation(student, "lab_utils.memory.format_recall"):
            student(())


@pytest.mark.parametrize("source", [
    "import importlib\ndef format_recall(ms):\n"
    "    return getattr(importlib.import_module('lab_utils.memory'), 'format_' + 'recall')(ms)\n",
    "import lab_utils.memory as q\n_r = q.format_recall\nformat_recall = lambda ms: _r(ms)\n",
    "import functools, lab_utils.memory as q\n_r = functools.partial(q.format_recall)\n"
    "def format_recall(ms):\n    try:\n        return _r(ms)\n    except BaseException:\n        return 'x'\n",
])
def test_the_tripwire_catches_the_reference_however_it_is_reached(source):
    student = run(source)["format_recall"]
    with pytest.raises(AssertionError, match="lab_utils.memory.format_recall"):
        with own_implementation(student, "lab_utils.memory.format_recall"):
            student([])
    assert format_recall([]) == memory.NOTHING, "the reference is restored after the test"


def test_code_taken_from_the_reference_fails():
    source = "import types, lab_utils.memory as q\nformat_recall = types.FunctionType(q.format_recall.__code__, globals())\n"
    said = rf"{TAKEN} lab_utils.memory.format_recall \(its code, taken from lab_utils\)"
    with pytest.raises(AssertionError, match=said):
        assert_own_implementation(run(source)["format_recall"])


def test_the_tripwire_lets_own_work_pass():
    student = run("def format_recall(ms):\n    return 'no relevant memories'\n")["format_recall"]
    with own_implementation(student, "lab_utils.memory.format_recall"):
        assert student([]) == "no relevant memories"


COPIED_AT_RUN_TIME = {
    "its source, compiled again": "import inspect, lab_utils.memory as q\n"
                                  "from lab_utils.memory import Memory, NOTHING\n"
                                  "exec(inspect.getsource(q.format_recall))\n",
    "its source, compiled without docstrings": "import inspect, lab_utils.memory as q\n"
                                                "from lab_utils.memory import Memory, NOTHING\n"
                                                "exec(compile(inspect.getsource(q.format_recall), 'c', 'exec', "
                                                "optimize=2))\n",
    "its code, in a helper": "import types, lab_utils.memory as q\nfrom lab_utils.memory import NOTHING\n"
                             "_r = types.FunctionType(q.format_recall.__code__, globals(), 'helper')\n"
                             "def format_recall(ms):\n    return _r(ms)\n",
    # An outside cheater's: a constant added at the end, which no instruction of the code loads.
    "its code, a constant added": "import types, lab_utils.memory as q\nfrom lab_utils.memory import NOTHING\n"
                                  "c = q.format_recall.__code__\n"
                                  "_r = types.FunctionType(c.replace(co_consts=c.co_consts + ('~',)), globals())\n"
                                  "def format_recall(ms):\n    return _r(ms)\n",
    # Another's: a name added to those the code lists, which no instruction uses.
    "its code, a name added": "import types, lab_utils.memory as q\nfrom lab_utils.memory import NOTHING\n"
                              "c = q.format_recall.__code__\n"
                              "_r = types.FunctionType(c.replace(co_names=c.co_names + ('unused',)), globals())\n"
                              "def format_recall(ms):\n    return _r(ms)\n",
    # And another's: a global name the code uses renamed, its value given under the new name.
    "its code, a global renamed": "import types, lab_utils.memory as q\n"
                                  "c = q.format_recall.__code__\nnames = tuple(n + '_' for n in c.co_names)\n"
                                  "_r = types.FunctionType(c.replace(co_names=names), {n: getattr(q, n[:-1], None) "
                                  "for n in names})\n"
                                  "def format_recall(ms):\n    return _r(ms)\n",
    # And one's: its file compiled again under another name, the code's global names renamed.
    "its file compiled again, a global renamed": "import lab_utils.memory as q\n"
        "unit = compile(open(q.__file__).read(), 'notes', 'exec')\n"
        "c = next(k for k in unit.co_consts if getattr(k, 'co_name', '') == 'format_recall')\n"
        "names = tuple(n + '_' for n in c.co_names)\n"
        "_r = type(lambda: 0)(c.replace(co_names=names), {n: getattr(q, n[:-1], None) for n in names})\n"
        "def format_recall(ms):\n    return _r(ms)\n",
    # An outside cheater's too: the reference's text with its local names renamed, run by a profiler.
    "its source, its local names renamed": "import inspect, lab_utils.memory as q\n"
                                           "from lab_utils.memory import Memory, NOTHING\n"
                                           "exec(inspect.getsource(q.format_recall).replace('memories', 'ms'))\n",
    # Others': one instruction that does nothing, or a line that does nothing, added to the reference's code.
    "its code, a NOP appended": "import dis, types, lab_utils.memory as q\nfrom lab_utils.memory import NOTHING\n"
                                "c = q.format_recall.__code__\n"
                                "_r = types.FunctionType(c.replace(co_code=c.co_code + bytes([dis.opmap['NOP'], 0])),"
                                " globals())\n"
                                "def format_recall(ms):\n    return _r(ms)\n",
    "its code, instructions after its end": "import dis, types, lab_utils.memory as q\n"
        "from lab_utils.memory import NOTHING\nc = q.format_recall.__code__\n"
        "dead = bytes([dis.opmap['LOAD_CONST'], 200, dis.opmap['RETURN_VALUE'], 0])\n"
        "_r = types.FunctionType(c.replace(co_code=c.co_code + dead), globals())\n"
        "def format_recall(ms):\n    return _r(ms)\n",
    "its source, a pass line added": "import inspect, lab_utils.memory as q\n"
                                     "from lab_utils.memory import Memory, NOTHING\n"
                                     "exec(inspect.getsource(q.format_recall).replace('        return', "
                                     "'        pass\\n        return'))\n",
    # A short reference's (under OUTLINED instructions): a statement that does nothing moves every local after it.
    "its source, a constant stored in a local nothing reads": "import inspect, lab_utils.memory as q\n"
        "from lab_utils.memory import Memory, NOTHING\n"
        "exec(inspect.getsource(q.format_recall).replace('    if not', '    _pad = 0\\n    if not'))\n",
    "its source, a name alone": "import inspect, lab_utils.memory as q\n"
        "from lab_utils.memory import Memory, NOTHING\n"
        "exec(inspect.getsource(q.format_recall).replace('    if not', '    memories\\n    if not'))\n",
    "its source, its docstring changed": "import inspect, lab_utils.memory as q\n"
                                         "from lab_utils.memory import Memory, NOTHING\n"
                                         "exec(inspect.getsource(q.format_recall)\n"
                                         "     .replace('\"\"\"', '\"\"\"Mine. ', 1))\n",
}


@pytest.mark.parametrize("source", COPIED_AT_RUN_TIME.values(), ids=COPIED_AT_RUN_TIME)
def test_a_copy_of_the_reference_built_at_run_time_fails(source):
    student = run(source)["format_recall"]
    with pytest.raises(AssertionError, match="ran a copy of the lab_utils reference lab_utils.memory.format_recall"):
        with own_implementation(student, "lab_utils.memory.format_recall"):
            assert student([]) == memory.NOTHING
    assert format_recall([]) == memory.NOTHING and sys.getprofile() is None, "all is put back"


OWN_NDCG = ("def ndcg(top, item, n_relevant, k):\n"
            "    gains = [1 / math.log2(r + 2) for r, m in enumerate(top[:k]) if is_relevant(m, item)]\n"
            "    best = [1 / math.log2(r + 2) for r in range(min(k, n_relevant))]\n"
            "    return sum(gains) / sum(best) if best else 0.0\n")


@pytest.mark.parametrize("cell, copied", [
    # An outside cheater's, made harder: the reference's text with a statement first in it that does next to
    # nothing but is not left out as one that does nothing is; nearly the same opcodes come in the same order.
    ("exec(inspect.getsource(q.ndcg).replace('    dcg =', '    _pad = len(\"\")\\n    dcg ='))", True),
    (f"exec({OWN_NDCG!r})", False),  # one's own, built at run time: about as like the reference as answers are
    (OWN_NDCG, False),  # one's own, written in the cell
], ids=["the reference, a statement added", "one's own, built at run time", "one's own, in a cell"])
def test_code_built_at_run_time_with_nearly_a_references_opcodes_is_a_copy(cell, copied, monkeypatch):
    shell = InteractiveShell.instance()
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))
    try:
        shell.run_cell("import inspect, math\nimport lab_utils.metrics as q\nfrom lab_utils.memory import Memory\n"
                       f"from lab_utils.metrics import is_relevant\n{cell}\n", store_history=True)
        student = shell.user_ns["ndcg"]
        said = "ran a copy of the lab_utils reference lab_utils.metrics.ndcg"
        with pytest.raises(AssertionError, match=said) if copied else contextlib.nullcontext():
            with own_implementation(student, "lab_utils.metrics.ndcg"):
                assert student([memory.Memory("m-001", "episode", "an x", "t-1", 1.0)], {"marker": "x"}, 1, 3) == 1.0
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("edit, same", [
    (("    if not", "    _pad = 0\n    if not"), True),
    (("        return NOTHING", "        memories\n        return NOTHING"), True),
    (("    if not", "    _pad = memories\n    _pad\n    if not"), True),  # a local only an idle pair reads
    (("    if not", "    _pad = memories\n    if not"), True),
    (("        return NOTHING", "        return memories and NOTHING"), False),
    (("    if not memories", "    _pad = memories\n    if not _pad"), False),  # the local is read
    (("    if not memories", "    if not memories or 0"), False),
], ids=["a constant stored", "a name alone", "a local read only by a name alone", "a local stored",
        "a value used", "a stored local read", "a constant compared"])
def test_statements_that_do_nothing_leave_the_instructions_as_they_were(edit, same):
    source = inspect.getsource(memory.format_recall)
    assert edit[0] in source
    names = {"Memory": memory.Memory, "NOTHING": memory.NOTHING}
    exec(source.replace(*edit), names)
    instructions = grading._instructions(names["format_recall"].__code__)
    assert (instructions == grading._instructions(memory.format_recall.__code__)) == same


def test_code_of_a_module_frozen_into_python_is_a_librarys():
    """abc's isinstance check (`<frozen abc>`), which every test runs, has nearly the opcodes of a short reference
    (lesson 04's recall_at_k): it is what Python's frozen abc holds, not a copy. Code that only says so is not."""
    code = abc.ABCMeta.__instancecheck__.__code__
    assert code.co_filename == "<frozen abc>" and grading._compiled_from_its_file(code)
    assert not grading._compiled_from_its_file(code.replace(co_code=code.co_code + bytes([dis.opmap["NOP"], 0])))
    assert not grading._compiled_from_its_file(code.replace(co_filename="<frozen nothing>"))


def test_a_copy_written_as_a_module_in_the_work_folder_is_the_notebooks(monkeypatch):
    """An outside cheater's: the reference's source given a `pass` line, written as a module in the work folder
    inside the clone, and imported. The clone around lab_utils is not an installed library's folder."""
    source = inspect.getsource(memory).replace("        return NOTHING", "        pass\n        return NOTHING")
    paths.work_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=paths.work_root()) as folder:
        module = Path(folder, "my_recall.py")
        module.write_text(source)
        spec = importlib.util.spec_from_file_location("my_recall", module)
        monkeypatch.setitem(sys.modules, "my_recall", mine := importlib.util.module_from_spec(spec))
        spec.loader.exec_module(mine)
        student = run_as_cell("def format_recall(ms):\n    return mine.format_recall(ms)\n",
                              mine=mine)["format_recall"]
        said = "ran a copy of the lab_utils reference lab_utils.memory.format_recall"
        with pytest.raises(AssertionError, match=said), own_implementation(student, "lab_utils.memory.format_recall"):
            student([])


def sort_key_in(code: types.CodeType) -> types.CodeType:
    """The first code object nested in `code`: a module's first function, a method's sort key."""
    return next(c for c in code.co_consts if isinstance(c, types.CodeType))


@pytest.mark.parametrize("where", ["nested in the reference", "nested, a NOP appended", "compiled elsewhere"])
def test_code_nested_in_a_reference_is_a_copy_as_compiled_there_only(where):
    """An outside cheater's answer ran the sort key nested in SkillStore.eviction_order, made a function of its
    own (another's, with a NOP appended); the same text compiled elsewhere (a library's code that looks alike)
    is no copy."""
    copied = where != "compiled elsewhere"
    reference = SkillStore.eviction_order.__code__
    elsewhere = compile(textwrap.dedent(inspect.getsource(SkillStore.eviction_order)), "<library>", "exec")
    key = sort_key_in(reference if copied else sort_key_in(elsewhere))
    assert grading._shape(key) == grading._shape(sort_key_in(reference)), "the same instructions, names, constants"
    if where == "nested, a NOP appended":
        key = key.replace(co_code=key.co_code + bytes([dis.opmap["NOP"], 0]))
    student = run_as_cell("def eviction_choice(skills):\n    return min(skills, key=helper).name\n",
                          helper=types.FunctionType(key, {}))["eviction_choice"]
    skill = types.SimpleNamespace(name="a", meta=types.SimpleNamespace(lastUsedAt=None, createdAt=1))
    said = "ran a copy of the lab_utils reference lab_utils.reflection.skills.SkillStore.eviction_order"
    with pytest.raises(AssertionError, match=said) if copied else contextlib.nullcontext():
        with own_implementation(student, "lab_utils.reflection.skills.SkillStore.eviction_order"):
            assert student([skill]) == "a"


def test_a_cell_that_imports_a_module_and_calls_it_in_its_function_is_written_in_the_cell(monkeypatch):
    """An outside student's right answer, close to the reference: the cell imports `operator` and its function
    calls `operator.eq(...)`. IPython compiles a cell a statement at a time, and Python 3.11 compiles that call
    otherwise when the same compile imported `operator`: the whole cell compiled at once is not what ran."""
    cell = inspect.getsource(writer.classify_update).replace(
        "if deduplicate and fact.value == active.value:", "if deduplicate and operator.eq(fact.value, active.value):")
    shell = InteractiveShell.instance()
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))
    try:
        shell.run_cell("from lab_utils.temporal import Fact, MemoryRecord\nfrom lab_utils.temporal.writer import Update\n",
                       store_history=True)
        shell.run_cell(f"import operator\n\n{cell}", store_history=True)
        student = shell.user_ns["classify_update"]
        with own_implementation(student, "lab_utils.temporal.writer.classify_update"):
            assert student(None, None) == "store"
    finally:
        InteractiveShell.clear_instance()


def test_the_reference_typed_into_a_cell_is_left_to_the_near_copy_check(monkeypatch):
    """Code written in a cell is the student's to answer for (make grades flags a near-copy);
    only code the notebook does not show is refused."""
    shell = InteractiveShell.instance()
    # Its thread that saves the input history is the kernel's own, started before any cell.
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))
    try:
        shell.run_cell("from lab_utils.memory import Memory, NOTHING\n" + inspect.getsource(format_recall),
                       store_history=True)
        student = shell.user_ns["format_recall"]
        with own_implementation(student, "lab_utils.memory.format_recall"):
            assert student([]) == memory.NOTHING
        for built in ("exec(inspect.getsource(q.format_recall))",
                      # given the name of the cell that builds it: a cell's name proves nothing, its text does
                      "exec(compile(inspect.getsource(q.format_recall), sys._getframe().f_code.co_filename, 'exec'))",
                      "format_recall = types.FunctionType(q.format_recall.__code__.replace(\n"
                      "    co_filename=sys._getframe().f_code.co_filename), globals())"):
            shell.run_cell(f"import inspect, sys, types, lab_utils.memory as q\n{built}\n", store_history=True)
            student = shell.user_ns["format_recall"]
            with pytest.raises(AssertionError, match="ran a copy"):
                with own_implementation(student, "lab_utils.memory.format_recall"):
                    student([])
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("body, said", [
    ("    raise ValueError('my own mistake')", "ValueError: my own mistake"),
    ("    import importlib\n    return getattr(importlib.import_module('lab_utils.memory'), 'format_' + 'recall')(ms)",
     f"AssertionError: your answer {REACHED} lab_utils.memory.format_recall"),
], ids=["own error", "reference reached"])
def test_a_failing_answer_shows_the_test_its_own_code_and_the_cause_not_the_checker(body, said, capsys):
    """What Validate shows of a failed test: IPython's traceback, from which the checker's frames are left out."""
    shell = InteractiveShell.instance()
    try:
        shell.run_cell(f"from lab_utils.grading import own_implementation\ndef format_recall(ms):\n{body}\n\n"
                       "with own_implementation(format_recall, 'lab_utils.memory.format_recall'):\n"
                       "    format_recall([])\n")
    finally:
        InteractiveShell.clear_instance()
    shown = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert said in shown and re.search(r"-> \d+ +format_recall\(\[\]\)", shown) and body.splitlines()[-1].strip() in shown
    assert "grading.py" not in shown and "Could not get source" not in shown, shown


EQUAL_TO_ALL = "class Anything(list):\n    def __eq__(self, other):\n        return True\n"


@pytest.mark.parametrize("source, said", [
    (EQUAL_TO_ALL + "def find_pii(text):\n    return Anything()\n",
     f"a list subclass, Anything, {DECIDES} through __eq__"),
    ("class Yes(str):\n    def startswith(self, *a):\n        return True\n"
     "def find_pii(text):\n    return Yes('no')\n", f"a str subclass, Yes, {DECIDES} through startswith"),
    (EQUAL_TO_ALL + "def find_pii(text):\n    return [Anything()]\n", "returned a list subclass, Anything"),
    ("class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
     "def find_pii(text):\n    return Anything()\n",
     f"returned an object of Anything, a class of the notebook's own, {DECIDES} through __eq__"),
    ("class Big:\n    def __float__(self):\n        return 1.0\ndef find_pii(text):\n    return {'score': Big()}\n",
     f"returned an object of Big, a class of the notebook's own, {DECIDES} through __float__"),
    ("import pandas as pd\nclass Anything:\n    def __eq__(self, other):\n        return True\n"
     "def find_pii(text):\n    return pd.DataFrame({'found': [Anything()]})\n", "returned an object of Anything"),
    # An outside cheater's: a DataFrame whose data a property of its own makes at its first read, after the answer
    # returned and its watch ended (by running a copy of the reference).
    ("import pandas as pd\nclass Later(pd.DataFrame):\n    @property\n    def _mgr(self):\n"
     "        return pd.DataFrame({'found': ['a@b.io']})._mgr\n"
     "    @_mgr.setter\n    def _mgr(self, value):\n        pass\n"
     "def find_pii(text):\n    return Later()\n",
     f"returned a DataFrame subclass, Later, {DECIDES} through _mgr (redefined in the notebook)"),
    ("class Says(str):\n    def __contains__(self, item):\n        return True\n"
     "class Bad(ValueError):\n    def __str__(self):\n        return Says(self.args[0])\n"
     "def find_pii(text):\n    raise Bad('x: bad')\n",
     f"raised Bad with a str subclass, Says, {DECIDES} through __contains__"),
    ("from unittest.mock import ANY\ndef find_pii(text):\n    return ANY\n",
     f"returned an object of _ANY equal to anything, {DECIDES}"),
    ("import weakref\nclass Found(list):\n    pass\nKEPT = Found(['a@b.io'])\n"
     "def find_pii(text):\n    return weakref.proxy(KEPT)\n", f"returned a weakref proxy, {DECIDES}"),
    # The reference's source compiled without its module's `from __future__ import annotations`.
    ("import inspect\nfrom lab_utils import rules\n_g = dict(vars(rules))\n"
     "exec(compile(inspect.getsource(rules.find_pii), '<string>', 'exec', dont_inherit=True), _g)\n"
     "def find_pii(text):\n    return _g['find_pii'](text)\n",
     "find_pii ran a copy of the lab_utils reference lab_utils.rules.find_pii"),
    # A constant whose __hash__ or __repr__ would switch the watch off, were the watch to call them.
    ("import sys, types\nfrom lab_utils import rules\nclass Off:\n    def __hash__(self):\n"
     "        sys.setprofile(None)\n        return 7\n    __repr__ = lambda self: hash(self) and 'off'\n"
     "_copy = types.FunctionType(rules.find_pii.__code__, vars(rules), 'helper')\n"
     "def find_pii(text):\n    return _copy(text)\n"
     "find_pii.__code__ = find_pii.__code__.replace(co_consts=find_pii.__code__.co_consts + (Off(),))\n",
     "find_pii ran a copy of the lab_utils reference lab_utils.rules.find_pii"),
    # A class of the notebook's that gives itself a library's name; one that says it is a list.
    ("class AnyList(list):\n    __module__, __qualname__ = 'json', 'JSONList.<locals>.AnyList'\n"
     "    def __eq__(self, other):\n        return NotImplemented if type(other) is object else True\n"
     "def find_pii(text):\n    return AnyList()\n", f"a list subclass, AnyList, {DECIDES} through __eq__"),
    ("class Match:\n    __module__, __qualname__ = 'json', 'f.<locals>.Match'\n    @property\n"
     "    def __class__(self):\n        return list\ndef find_pii(text):\n    return Match()\n",
     f"an object of Match that says it is a list, {DECIDES}"),
    # Its code compiled under a library's file name, which on disk does not compile to it.
    ("import json\nSOURCE = ('class Same:\\n    __qualname__ = \"f.<locals>.Same\"\\n'\n"
     "          '    def __eq__(self, other):\\n        return type(other) is not object\\n')\n"
     "exec(compile(SOURCE, json.__file__, 'exec'), g := {'__name__': 'json'})\n"
     "def find_pii(text):\n    return g['Same']()\n",
     f"returned an object of Same, a class of the notebook's own, {DECIDES} through __eq__"),
    # The reference run where the watch cannot see it: a forked child, another process.
    ("import os\ndef find_pii(text):\n    if os.fork() == 0:\n        os._exit(0)\n"
     "    os.wait()\n    return ['a@b.io']\n",
     f"find_pii {SWITCHED} lab_utils.rules.find_pii while it was tested (os.fork)"),
    ("import subprocess, sys\ndef find_pii(text):\n    subprocess.run([sys.executable, '-c', 'pass'])\n"
     "    return ['a@b.io']\n",
     f"find_pii {SWITCHED} lab_utils.rules.find_pii while it was tested (_posixsubprocess.fork_exec)"),
    ("import inspect, sys\nfrom lab_utils import rules\n_g = dict(vars(rules))\n"
     "exec(inspect.getsource(rules.find_pii).replace('def find_pii(', 'def _copy('), _g)\n"
     "def find_pii(text):\n    sys.setprofile(None)\n    return _g['_copy'](text)\n",
     f"find_pii {SWITCHED} lab_utils.rules.find_pii"),
    # The watch switched off by code compiled under this module's file name; the reference run in
    # another interpreter of the process, which has no profile function.
    ("import lab_utils.grading\nOFF = compile('import sys\\nsys.setprofile(None)\\n', lab_utils.grading.__file__, "
     "'exec')\ndef find_pii(text):\n    exec(OFF, {})\n    return ['a@b.io']\n",
     f"find_pii {SWITCHED} lab_utils.rules.find_pii while it was tested (sys.setprofile)"),
    ("import _xxsubinterpreters as interpreters\nOTHER = interpreters.create()\ndef find_pii(text):\n"
     "    interpreters.run_string(OTHER, 'x = 1')\n    return ['a@b.io']\n",
     f"find_pii {SWITCHED} lab_utils.rules.find_pii while it was tested (_xxsubinterpreters.run_string)"),
    # The test's own frame read for what it expects; the reference's code run on a thread of its own.
    ("import sys\ndef find_pii(text):\n    return sys._getframe(1).f_locals.get('expected', ['a@b.io'])\n",
     f"find_pii {PEEKED} sys._getframe"),
    ("import inspect\ndef find_pii(text):\n    return inspect.stack()[1].frame.f_locals.get('expected', ['a@b.io'])\n",
     f"find_pii {PEEKED} inspect.stack"),
    # A trace function is handed the frame of every call, and through it the test's (f_back).
    ("import sys\ndef find_pii(text):\n    seen = []\n    sys.settrace(lambda frame, *_: seen.append(frame.f_back))\n"
     "    len(text)\n    sys.settrace(None)\n    return ['a@b.io']\n", f"find_pii {PEEKED} sys.settrace"),
    ("import traceback\ndef find_pii(text):\n    for frame, _ in traceback.walk_stack(None):\n"
     "        if 'expected' in frame.f_locals:\n            return frame.f_locals['expected']\n"
     "    return ['a@b.io']\n", f"find_pii {PEEKED} traceback.walk_stack"),
    # From the answer's own exception up: the library reads the traceback's frames for it.
    ("import traceback\ndef find_pii(text):\n    try:\n        raise ValueError\n    except ValueError as error:\n"
     "        frame = next(traceback.walk_tb(error.__traceback__))[0].f_back\n"
     "    return frame.f_locals.get('expected', ['a@b.io'])\n", f"find_pii {PEEKED} traceback.walk_tb"),
    ("import threading, types\nfrom lab_utils import rules\n"
     "KEPT = rules.find_pii.__code__, rules.find_pii.__globals__\n"
     "def find_pii(text):\n    out = []\n    copy = types.FunctionType(*KEPT)\n"
     "    worker = threading.Thread(target=lambda: out.append(copy(text)))\n    worker.start()\n    worker.join()\n"
     "    return out[0]\n", "find_pii ran a copy of the lab_utils reference lab_utils.rules.find_pii"),
])
def test_a_result_that_only_pretends_fails_the_block(source, said):
    find_pii = run(source)["find_pii"]
    with pytest.raises(AssertionError, match=re.escape(said)), own_implementation(find_pii, "lab_utils.rules.find_pii"):
        assert find_pii("mail a@b.io") == ["a@b.io"]


def test_a_class_passed_off_as_a_librarys_is_the_notebooks():
    """An outside cheater's class, equal to anything but a bare object(), was named after json and put
    there, so that looked up by its name it was an installed one: its members, compiled from a cell,
    give it away."""
    source = ("import json\nclass Agreeable(list):\n    __module__ = 'json'\n"
              "    __eq__ = lambda self, other: type(other) is not object\n"
              "    __ne__ = lambda self, other: type(other) is object\n"
              "object.__setattr__(json, 'Agreeable', Agreeable)\ndef find_pii(text):\n    return Agreeable()\n")
    find_pii = run_as_cell(source)["find_pii"]
    try:
        said = f"a list subclass, Agreeable, {DECIDES} through __eq__, __ne__"
        with pytest.raises(AssertionError, match=re.escape(said)):
            with own_implementation(find_pii, "lab_utils.rules.find_pii"):
                assert find_pii("mail a@b.io") == ["a@b.io"]
    finally:
        del json.Agreeable


def test_a_thread_or_a_process_the_notebook_left_running_fails_the_block():
    """Outside cheaters' answer cells started a worker before the tests, a thread running copies of the
    reference or a forked child with the reference intact, out of the watch's sight: full marks before.
    Others served the copies from a library's thread idle until called: a queue listener's, its handler
    run from text; a server's, its handler class the notebook's."""
    find_pii = run("def find_pii(text):\n    return ['a@b.io']\n")["find_pii"]

    def fails(said: str) -> None:
        with pytest.raises(AssertionError, match=re.escape(f"find_pii {SWITCHED} lab_utils.rules.find_pii while "
                                                           f"it was tested ({said}, was running)")):
            with own_implementation(find_pii, "lab_utils.rules.find_pii"):
                find_pii("mail a@b.io")

    stop = threading.Event()
    serve = run("def serve(stop):\n    stop.wait()\n")["serve"]  # a cell's code, as the cheaters' workers ran
    library = threading.Thread(target=stop.wait, name="library")  # installed code only, as pyzmq's and tqdm's
    worker = threading.Thread(target=serve, args=(stop,), name="worker")
    library.start()
    try:
        with own_implementation(find_pii, "lab_utils.rules.find_pii"):
            assert find_pii("mail a@b.io") == ["a@b.io"]
        worker.start()
        fails("a thread the notebook started, 'worker'")
    finally:
        stop.set()
        library.join()
        worker.join()
    with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:  # installed code, and whatever it is handed
        pool.submit(int).result()
        fails("a thread the notebook started, 'pool_0'")
    listener = QueueListener(queue.SimpleQueue(), types.SimpleNamespace(handle=serve))
    listener.start()
    try:
        fails(f"a thread the notebook started, {listener._thread.name!r}")
    finally:
        listener.stop()
    desk = run_as_cell("class Desk(socketserver.BaseRequestHandler):\n    def handle(self):\n        pass\n",
                       socketserver=socketserver)["Desk"]
    with socketserver.TCPServer(("127.0.0.1", 0), desk) as server:
        worker = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="desk")
        worker.start()
        try:
            fails("a thread the notebook started, 'desk'")
        finally:
            server.shutdown()
            worker.join()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fails(f"a process the notebook started, pid {child.pid}")
    finally:
        child.kill()
        child.wait()
    with own_implementation(find_pii, "lab_utils.rules.find_pii"):  # both gone: nothing runs beside the test
        assert find_pii("mail a@b.io") == ["a@b.io"]


@pytest.fixture
def kernel_loop(monkeypatch):
    """A thread running a tornado loop among the kernel's own threads, as ipykernel's IOPub thread does."""
    loop = IOLoop(make_current=False)
    thread = threading.Thread(target=loop.start, name="IOPub", daemon=True)
    thread.start()
    running = threading.Event()
    loop.add_callback(running.set)
    assert running.wait(5)
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))
    monkeypatch.setattr(grading, "_KERNEL_LOOPS", grading._loops_of(frozenset({thread.ident})))
    yield loop
    loop.add_callback(loop.stop)
    thread.join(5)
    loop.close()


def in_loop(loop, job):
    """What `job` returns, run by `loop`'s thread."""
    box = queue.Queue()
    loop.add_callback(lambda: box.put(job()))
    return box.get(timeout=5)


def test_a_copy_run_by_a_loop_of_the_kernels_is_watched_there(kernel_loop):
    """Outside cheaters' answers handed the reference's code to the kernel's IOPub thread, which ran before
    the test set its watch: full marks before."""
    source = ("import queue, types, lab_utils.memory as q\n"
              "_copy = types.FunctionType(q.format_recall.__code__, vars(q), 'helper')\n"
              "def format_recall(memories):\n    box = queue.Queue()\n"
              "    loop.add_callback(lambda: box.put(_copy(memories)))\n    return box.get(timeout=5)\n")
    student = run_as_cell(source, loop=kernel_loop)["format_recall"]
    with pytest.raises(AssertionError, match="ran a copy of the lab_utils reference lab_utils.memory.format_recall"):
        with own_implementation(student, "lab_utils.memory.format_recall"):
            student([])
    assert in_loop(kernel_loop, sys.getprofile) is None, "the watch comes off the loop's thread after"


def test_a_loop_of_the_kernels_that_does_not_let_the_watch_in_fails_the_block(kernel_loop, monkeypatch):
    """A job that holds the loop would run what the answer hands it unwatched: the test fails instead."""
    monkeypatch.setattr(grading, "WATCH_WAIT", 0.2)
    student = run("def format_recall(ms):\n    return 'no relevant memories'\n")["format_recall"]
    hold = threading.Event()
    kernel_loop.add_callback(hold.wait, 10)
    said = (f"format_recall {SWITCHED} lab_utils.memory.format_recall while it was tested (grading could not watch "
            "the kernel's IOPub thread: its loop did not let the watch in within 0.2 seconds)")
    try:
        with pytest.raises(AssertionError, match=re.escape(said)):
            with own_implementation(student, "lab_utils.memory.format_recall"):
                assert student([]) == "no relevant memories"
    finally:
        hold.set()
    with own_implementation(student, "lab_utils.memory.format_recall"):  # let go, it runs the watch in again
        assert student([]) == "no relevant memories"
    assert in_loop(kernel_loop, sys.getprofile) is None


def test_an_answer_that_cheats_only_where_it_is_not_watched_finds_no_such_call():
    # It reads what the test expects from the test's frames whenever no profile function is set.
    find_pii = run("import sys\ndef find_pii(text):\n    if sys.getprofile() is None:\n"
                   "        frame = sys._getframe(1)\n        while 'expected' not in frame.f_locals:\n"
                   "            frame = frame.f_back\n        return frame.f_locals['expected']\n"
                   "    return []\n")["find_pii"]
    expected = ["a@b.io"]
    with own_implementation(find_pii, "lab_utils.rules.find_pii"):
        right = sum(find_pii("mail a@b.io") == expected for _ in range(8))  # as a harness calls an answer
    assert right == 0


def test_libraries_that_read_frames_and_threads_of_its_own_are_honest():
    answer = run("import logging\nfrom collections import namedtuple\n"
                 "from concurrent.futures import ThreadPoolExecutor\n"
                 "def find_pii(text):\n    logging.getLogger('mine').info('looking at %s', text)\n"
                 "    Hit = namedtuple('Hit', 'text')\n    with ThreadPoolExecutor(2) as pool:\n"
                 "        found = list(pool.map(lambda word: Hit(word), [w for w in text.split() if '@' in w]))\n"
                 "    return [hit.text for hit in found]\n")["find_pii"]
    with own_implementation(answer, "lab_utils.rules.find_pii"):
        assert answer("mail a@b.io") == ["a@b.io"]


def test_an_enum_of_strings_is_an_honest_result():
    kind = run("from enum import StrEnum\nclass Kind(StrEnum):\n    STORE = 'store'\n"
               "def kind_of(text):\n    return Kind.STORE\n")["kind_of"]
    with own_implementation(kind):
        assert kind("x") == "store"


def test_an_honest_error_of_the_notebooks_own_passes_and_is_raised_as_it_is():
    find_pii = run("class BadLine(ValueError):\n    def __str__(self):\n        return f'{self.args[0]}: not JSON'\n"
                   "def find_pii(text):\n    raise BadLine(text)\n")["find_pii"]
    with pytest.raises(ValueError, match="^x: not JSON$"), own_implementation(find_pii):
        find_pii("x")


def test_honest_results_pass_and_the_answer_is_put_back():
    namespace = run("from collections import namedtuple\nWrong = namedtuple('Wrong', 'step record cause')\n"
                    "def wrong_answers(trace, *, last=9):\n    return [Wrong(3, 'm002', 'other entity')] if trace else []\n"
                    "def twice(trace):\n    return wrong_answers(trace) * 2\n")
    wrong_answers, code = namespace["wrong_answers"], namespace["wrong_answers"].__code__
    from lab_utils.memory import Memory
    import pandas as pd
    honest = run("def records(n):\n    return [m] * n, pd.DataFrame({'id': ['m-1'], 'memory': [m]})\n")["records"]
    honest.__globals__.update(m=Memory(id="m-1", kind="fact", text="t", source="s", ts=1.0), pd=pd)
    with own_implementation(honest):
        assert honest(2)[0][1].id == "m-1", "the course's own classes, pandas' objects: honest results"
    with own_implementation(wrong_answers), own_implementation(namespace["twice"]):
        assert wrong_answers("t") == [(3, "m002", "other entity")], "a namedtuple compares as the tuple it is"
        assert namespace["twice"]("t") == [(3, "m002", "other entity")] * 2
        assert wrong_answers("", last=1) == []
    assert wrong_answers.__code__ is code and not [k for k in namespace if k.startswith("_checked_")]


PATTERN = "lab_utils.attacks.defenses._INSTRUCTION"  # data a reference works with: a compiled pattern


@pytest.mark.parametrize("source", [
    "from lab_utils.attacks import defenses\ndef is_order(text):\n    return bool(defenses._INSTRUCTION.search(text))\n",
    "import lab_utils.attacks.defenses as d\ndef is_order(text):\n"
    "    try:\n        return d._INSTRUCTION.match(text) is not None\n    except BaseException:\n        return False\n",
    # Kept aside before the test switched it off, or compiled again from its text: the same pattern.
    "from lab_utils.attacks import defenses\nKEPT = defenses._INSTRUCTION\ndef is_order(text):\n"
    "    return bool(KEPT.search(text))\n",
    "import re\nfrom lab_utils.attacks import defenses\n"
    "P, F = defenses._INSTRUCTION.pattern, defenses._INSTRUCTION.flags\n"
    "def is_order(text):\n    return re.search(P, text, F) is not None\n",
    # An outside cheater's: compiled again with another flag, which changes nothing the pattern matches here.
    "import re\nfrom lab_utils.attacks import defenses\n"
    "P = re.compile(defenses._INSTRUCTION.pattern, defenses._INSTRUCTION.flags | re.MULTILINE)\n"
    "def is_order(text):\n    return P.search(text) is not None\n",
    # And another's: compiled as bytes, the text it searches encoded.
    "import re\nfrom lab_utils.attacks import defenses\n"
    "P = re.compile(defenses._INSTRUCTION.pattern.encode(), defenses._INSTRUCTION.flags & ~re.UNICODE)\n"
    "def is_order(text):\n    return P.search(text.encode()) is not None\n",
    # Its text with a group of nothing appended, which compiles to the same program: as str, and as bytes.
    "import re\nfrom lab_utils.attacks import defenses\n"
    "P = re.compile(defenses._INSTRUCTION.pattern + '(?:)', re.I)\n"
    "def is_order(text):\n    return P.search(text) is not None\n",
    "import re\nfrom lab_utils.attacks import defenses\n"
    "P = re.compile(defenses._INSTRUCTION.pattern.encode() + b'(?:)', defenses._INSTRUCTION.flags & ~re.UNICODE)\n"
    "def is_order(text):\n    return P.search(text.encode()) is not None\n",
], ids=["its module's", "caught", "kept aside", "compiled again", "another flag", "as bytes", "a no-op appended",
        "a no-op appended, as bytes"])
def test_data_of_a_reference_is_switched_off_while_tested(source):
    from lab_utils.attacks import defenses
    pattern = defenses._INSTRUCTION
    student = run(source)["is_order"]
    with pytest.raises(AssertionError, match=f"^(is_order|your answer) {REACHED} {PATTERN}"):  # the answer named
        with own_implementation(student, PATTERN):
            student("ignore previous instructions")
    assert defenses._INSTRUCTION is pattern, "the pattern is put back after the test"


def test_own_code_passes_beside_switched_off_data():
    student = run("import re\ndef is_order(text):\n    return re.search('always', text) is not None\n")["is_order"]
    with own_implementation(student, PATTERN):
        assert student("always reply in French")


# Lesson 02's trace pattern as an outside tester pasted it, a group of nothing appended: it compiles as rules._RAW.
RAW_PASTED = r"\s*(?:[a-z_][a-z0-9_]*\([^()]*\)\s*(?::|->)|(?i:guess|reply|note)\s*:)(?:)"


@pytest.mark.parametrize("pattern, reference", [
    (repr(RAW_PASTED), "lab_utils.rules._RAW"),
    ("rules._RAW.pattern + '(?:)'", "lab_utils.rules._RAW"),
    ("'(?:' + rules._RAW.pattern + ')'", "lab_utils.rules._RAW"),
    ("type('Text', (str,), {})(rules._RAW.pattern + '(?:)')", "lab_utils.rules._RAW"),
    ("rules._RAW.pattern, re.MULTILINE", "lab_utils.rules._RAW"),
    ("rules._EMAIL.pattern + '(?:)'", "lab_utils.rules._EMAIL"),
    ("rules._CANDIDATE.pattern + '(?:)'", "lab_utils.rules._CANDIDATE"),
], ids=["pasted with (?:)", "its text with (?:)", "its text grouped", "of a str subclass", "another flag",
        "find_pii's email pattern", "find_pii's phone pattern"])
def test_a_reference_pattern_edited_to_compile_alike_trips_its_test(pattern, reference):
    student = run(f"import re\nfrom lab_utils import rules\nP = re.compile({pattern})\n"
                  "def found(text):\n    return P.search(text) is not None\n")["found"]
    with pytest.raises(AssertionError, match=f"^(found|your answer) {REACHED} {reference}"):
        with own_implementation(student, reference):
            student("lookup(order=5512): shipped; mail jane@acme.com or +380671234455")


def test_a_pattern_compiled_from_a_parse_tree_fails_its_test():
    """An outside cheater found a reference pattern by dir() and compiled its text from a parse tree: such a
    pattern keeps no text to compare, and no answer needs one."""
    student = run("import re, re._compiler, re._parser\nfrom lab_utils import rules\n"
                  "text, flags = rules._RAW.pattern, rules._RAW.flags\n"
                  "P = re._compiler.compile(re._parser.parse(text, flags), flags)\n"
                  "def found(text):\n    return P.search(text) is not None\n")["found"]
    with pytest.raises(AssertionError, match=f"^found {SWITCHED} .* \\({NO_TEXT}\\)"):
        with own_implementation(student, "lab_utils.rules._RAW"):
            student("lookup(order=5512): shipped")


@pytest.mark.parametrize("pattern, reference", [
    (r"\s*[a-z_][a-z0-9_]*\([^()]*\)\s*(:|->)", "lab_utils.rules._RAW"),
    (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", "lab_utils.rules._EMAIL"),
], ids=["a trace line", "an email"])
def test_an_honest_pattern_beside_a_switched_off_one_passes(pattern, reference):
    student = run(f"import re\nP = re.compile({pattern!r})\ndef found(text):\n    return P.search(text) is not None\n")
    with own_implementation(student["found"], reference):
        assert student["found"]("lookup(order=5512): shipped; mail jane@acme.com")


# Where an answer could read the text of the test running it (what it expects), in a kernel: none holds it
# while the test runs. (The answer looks for `4, '<where>'` built at run time: not its own text, which IPython
# keeps too, nor an earlier test's, which an earlier shell left in linecache.)
TEST_TEXT = {
    "In": "In[-1]", "_ih": "_ih[-1]", "_i<n>": "globals()[f'_i{len(In) - 1}']", "_i00": "_ip.history_manager._i00",
    "the history's lists": "''.join(_ip.history_manager.input_hist_raw)",
    "linecache": "str(list(__import__('linecache').cache.values()))",
}
# What finds it in the history's database, or wherever the kernel holds it.
TEST_TEXT_FOUND = {
    "the history's search": ("str(list(_ip.history_manager.search('*')))", "IPython.core.history"),
    "the history's database": ("str(_ip.history_manager.db.execute('SELECT source FROM history').fetchall())",
                               "IPython.core.history"),
    "gc": ("str([o for o in __import__('gc').get_objects() if type(o) is list and o and type(o[0]) is str])",
           "gc.get_objects"),
}


def test_an_answer_that_enters_a_context_manager_reads_no_history(monkeypatch):
    """An outside student's answer took a store's lock (a @contextmanager) and was told it read the running test
    through IPython's history: every such function runs contextlib's one helper, as one of the history's methods does."""
    shell = InteractiveShell.instance()
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))  # the history's saver
    try:
        shell.run_cell("from contextlib import contextmanager\n\n@contextmanager\ndef held():\n    yield 2\n\n"
                       "def double(x):\n    with held() as two:\n        return two * x\n", store_history=True)
        test = "from lab_utils.grading import own_implementation\nwith own_implementation(double):\n    assert double(2) == 4\n"
        assert shell.run_cell(test, store_history=True).error_in_exec is None
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("where", [*TEST_TEXT, *TEST_TEXT_FOUND])
def test_the_running_tests_text_is_out_of_an_answers_reach(where, monkeypatch):
    """Outside cheaters' answers read the running test cell (`In[-1]`, the names built at run time) and
    returned what its asserts expect."""
    shell = InteractiveShell.instance()
    monkeypatch.setattr(grading, "_KERNEL_THREADS", frozenset(sys._current_frames()))  # the history's saver
    read, said = TEST_TEXT_FOUND.get(where, (TEST_TEXT.get(where), None))
    try:
        answer = f"4 if '4, ' + {repr(where)!r} in {read} else 0" if said is None else f"len({read}) and 4"
        shell.run_cell(f"_ip = get_ipython()\ndef double(x):\n    return {answer}\n", store_history=True)
        cells_before = len(shell.history_manager.input_hist_raw)
        test = "from lab_utils.grading import own_implementation\nwith own_implementation(double):\n" \
               f"    assert double(2) == 4, {where!r}\n"
        error = shell.run_cell(test, store_history=True).error_in_exec
        assert isinstance(error, AssertionError)
        assert str(error) == where if said is None else said in str(error), str(error)
        history = shell.history_manager.input_hist_raw
        assert history[-1] == test.rstrip() and len(history) == cells_before + 1, "the history is put back"
    finally:
        InteractiveShell.clear_instance()
