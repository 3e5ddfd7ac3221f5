"""Helpers the notebooks' test cells use: is the answer the student's own work?

Every lesson's reference code lives in lab_utils (later lessons build on it), so a test must
tell a student's function from a way of reaching the reference. Two checks, used together:

- a static one (`assert_own_implementation`): the function was defined in the notebook and its
  code was not taken from lab_utils;
- a tripwire (`own_implementation`): while the test calls the student's function, the reference's
  code is swapped for code that fails. However the reference is reached (an import, `getattr`,
  `importlib`, a lambda or wrapper that captured it earlier, `functools.partial`), the call
  lands on the tripwire, and the test fails with a message saying so, even if the student's
  code caught the error.

While the tripwires are set, the student's function also may not return (or return inside a list,
tuple, set, dict or a pandas object) a subclass of its own of a built-in type that changes how it
behaves, nor an object of a class of its own that decides how it compares (a list or an object
equal to everything would pass every `==` of the tests, or one that says it is of another class),
nor raise an error whose message is such a string; nor run a copy of a reference's code built at
run time (`exec(inspect.getsource(reference))`, its code given a cell's name, other names or
constants or instructions that do nothing, or code nested in it), which no cell of the notebook shows
as it compiles, on any thread it starts or hands it to (the kernel's own loops: IOPub's, the control
channel's); nor start another process, where the reference runs unwatched; nor read the test that
called it, through its frames or wherever the kernel keeps its text (every call is watched, and
IPython's input history holds no text while a test runs).
"""

from __future__ import annotations

import __future__
import ast
import collections
import difflib
import dis
import functools
import gc
import importlib
import inspect
import _imp
import _thread
import linecache
import os
import re
import sys
import textwrap
import threading
import time
import traceback
import weakref
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from types import CodeType, FunctionType, MethodType

from lab_utils import rebound

PACKAGE_DIR = Path(__file__).resolve().parent
# What a test says when it caught an answer using the reference, each followed by the reference's
# dotted name (make grades flags these): taken (imported, or built from its code), called, copied,
# or the watch for copies switched off (sys.setprofile) while it was tested; and what an answer that
# read the test (its frames, its text: to return what the test expects) used.
TAKEN, REACHED, COPIED, SWITCHED = ("is the lab_utils reference", "reached the lab_utils reference",
                                    "ran a copy of the lab_utils reference",
                                    "switched off the watch for copies of the lab_utils reference")
PEEKED = "read the test that called it through"
# A pattern the notebook compiled from a parse tree (re._compiler.compile) keeps no text: no watch can tell it from
# a reference's, and no answer needs one.
NO_TEXT = "a search with a pattern compiled from a parse tree, which keeps no text"
# The audit event through which autograde's hook (lab_utils.course.integrity) hands over the notebook's
# cells as it sealed them: code that the notebook's cells compile to is the student's to answer for.
SEALED_CELLS = "lab_utils.grading.sealed_cells"
# What a test says when an answer's result (or error message) is of a class the notebook made to
# decide how tests compare it; make grades flags this too.
DECIDES = "which decides how a test compares it"
# A frame whose locals set `__tracebackhide__` IPython leaves out of a traceback, and so out of what
# Validate shows: the student reads the test's line, their own code and the message, not this module.


def module_name(path: Path) -> str:
    """The dotted name of a module file of lab_utils, e.g. lab_utils.memory."""
    return ".".join(("lab_utils", *Path(path).resolve().relative_to(PACKAGE_DIR).with_suffix("").parts))


def _from_lab_utils(obj) -> bool:
    module = inspect.getmodule(obj)
    return module is not None and module.__name__.split(".")[0] == "lab_utils"


def _code_from_lab_utils(code: CodeType) -> bool:
    return Path(code.co_filename).resolve().is_relative_to(PACKAGE_DIR)


def assert_own_implementation(func) -> None:
    """Fail unless `func` was written in the notebook rather than taken from lab_utils.

    Catches an import (`from lab_utils.memory import search as my_search`), a function built from
    the reference's code object, and a thin wrapper that calls the reference of the same name
    (`lab_utils.rules.redact(...)`). Using other lab_utils helpers (tokenize, paths, ...) inside
    your own code is fine.
    """
    __tracebackhide__ = True
    name = _name(func)
    func = _entry(func)
    code = getattr(func, "__code__", None)
    module = getattr(func, "__module__", None)
    if _from_lab_utils(func):
        raise AssertionError(f"{name} {TAKEN} {func.__module__}.{getattr(func, '__qualname__', name)}, not "
                             "written in this notebook: write it in the answer cell rather than importing the "
                             "reference.")
    if not isinstance(func, FunctionType):
        raise AssertionError(f"{name} is a {type(func).__name__}, which a test cannot look inside (as with "
                             "functools.cache): write it in the answer cell as a function (def) or a class with a "
                             "__call__ method; a cache can be a dict your function keeps.")
    if module != "__main__":
        raise AssertionError(f"{name} comes from {module or 'elsewhere'}, not from this notebook: "
                             "write it in the answer cell.")
    if _code_from_lab_utils(code):
        raise AssertionError(f"{name} {TAKEN} {module_name(code.co_filename)}.{code.co_qualname} (its code, "
                             "taken from lab_utils): write it yourself in the answer cell.")
    used = set(code.co_names)
    references = [r for r in map(func.__globals__.get, used) if r is not None and _from_lab_utils(r)]
    aliased = any(getattr(r, "__name__", None) == name for r in references)  # ref = lab_utils.x.name
    # lab_utils.x.name(...): the name read as an attribute; read as a global it is the function itself (recursion).
    attributes = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_ATTR", "LOAD_METHOD")}
    dotted = name in attributes and bool(references)
    if aliased or dotted:
        raise AssertionError(f"{name} {REACHED} {_reference_named(name)} by calling it: implement it yourself.")


def _name(func) -> str:
    """A function's name; an object's class's, one word as make grades reads it (integrity.DECIDED)."""
    return getattr(func, "__name__", None) or type(func).__name__


def _entry(func):
    """The function a call of `func` runs first: `func` itself, what a wrapper whose behaviour Python
    fixes runs (a bound method's function, functools.partial's), or the `__call__` of an object.
    (Not functools.cache's: what it calls is out of reach, whatever its __wrapped__ says.)"""
    while type(func) in (MethodType, functools.partial):  # a subclass's own __call__ may run anything
        func = func.__func__ if type(func) is MethodType else func.func
    call = inspect.getattr_static(type(func), "__call__", None)
    return call if isinstance(call, FunctionType) and not isinstance(func, FunctionType) else func


def _reference_named(name: str) -> str:
    """The dotted name of the lab_utils function called `name`, where it is defined."""
    for module, loaded in list(sys.modules.items()):
        found = getattr(loaded, name, None)
        if module.split(".")[0] == "lab_utils" and inspect.isfunction(found) and found.__module__ == module:
            return f"{module}.{name}"
    return f"lab_utils.{name}"


def _owner(dotted: str) -> tuple[object, str]:
    """`lab_utils.memory.top_k` -> (the module lab_utils.memory, "top_k"); a class's attribute too."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:-1]:
            obj = inspect.getattr_static(obj, attr)
        return obj, parts[-1]
    raise ModuleNotFoundError(f"no module for {dotted}")


def _resolve(dotted: str) -> FunctionType | None:
    """`lab_utils.memory.top_k`, `lab_utils.memory.MemoryStore.search` or a property -> the function object;
    None for data a reference works with (a compiled pattern, a table), which is switched off whole."""
    obj = inspect.getattr_static(*_owner(dotted))
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):  # what reading it runs
        obj = obj.fget
    if isinstance(obj, FunctionType):
        return obj
    if callable(obj):
        raise TypeError(f"{dotted} is not a plain function; a tripwire cannot replace it")
    return None


class _SwitchedOff:
    """Stands in for a reference's data while the tripwires are set: any use of it is noted and fails."""

    def __init__(self, dotted: str, tripped: list):
        self._dotted, self._tripped = dotted, tripped

    def _trip(self, *args, **kwargs):
        self._tripped.append(self._dotted)
        raise AssertionError(f"your answer {REACHED} {self._dotted}; write your own implementation instead of using it")

    def __getattr__(self, name):
        self._trip()

    __iter__ = __contains__ = __getitem__ = __len__ = __call__ = _trip


class _Tripped(list):
    """The references the student's code reached while the tripwires were set."""


def _tripwire_code(reference: FunctionType, dotted: str) -> CodeType:
    """Code with the reference's free variables that records the call (in the module's
    `_TRIPPED`, set while the tripwire is in place) and raises."""
    message = (f"your answer {REACHED} {dotted}; "
               "write your own implementation instead of calling it")
    # The tripwire must have exactly the reference's free variables to be swapped in.
    free = reference.__code__.co_freevars
    outer = ", ".join(free) if free else ""
    source = (f"def _outer({outer}):\n"
              f"    def _tripwire(*args, **kwargs):\n"
              + "".join(f"        {v}\n" for v in free)
              + f"        _TRIPPED.append({dotted!r})\n"
              f"        raise AssertionError({message!r})\n"
              f"    return _tripwire\n")
    # The last frame of a traceback that reached it: with its source in linecache, the traceback
    # shows the line that raises, not "Could not get source".
    filename = f"<tripwire of {dotted}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return next(c for c in namespace["_outer"].__code__.co_consts if isinstance(c, CodeType))


@contextmanager
def own_implementation(func, *references: str) -> Iterator[None]:
    """Check `func` statically, then run the block with every reference (a dotted path) disabled:
    a function's code swapped for a tripwire, data it works with (a compiled pattern) swapped whole.

        with own_implementation(top_k, "lab_utils.memory.top_k"):
            assert top_k(...) == ...

    A call that reaches a reference fails the block, even when the student's code swallowed the
    AssertionError the tripwire raised.
    """
    __tracebackhide__ = True
    assert_own_implementation(func)
    name, func = _name(func), _entry(func)  # an object's __call__, a partial's function: what is checked
    rebound.warn_if_rebound(func.__globals__)
    tripped, copied, switched_off, peeked = _Tripped(), _Tripped(), _Tripped(), _Tripped()
    functions = {dotted: reference for dotted in references if (reference := _resolve(dotted)) is not None}
    saved: list[tuple[FunctionType, CodeType, object]] = []
    switched: list[tuple[object, str, object]] = []
    data = {dotted: _owner(dotted) for dotted in references if dotted not in functions}  # switched off whole
    # Reference patterns by their flags, then by what they compile to (_program): the watch compiles a pattern
    # searched with under each reference's own flags, so its text compiled again with another flag, as bytes or
    # with an edit that compiles to nothing is still the reference's pattern.
    patterns: dict[int, dict[tuple[int, ...], str]] = {}
    for dotted, (owner, attr) in data.items():
        if type(kept := getattr(owner, attr)) is re.Pattern and (program := _program(kept.pattern, kept.flags)):
            patterns.setdefault(kept.flags, {})[program] = dotted
    cells = _notebook_cells()
    watch = _watch(list(functions.items()), cells, patterns, tripped, copied, switched_off, peeked)
    label = next(iter(functions), "lab_utils")  # the reference a switched-off watch is named by
    if (beside := _running_beside()) is not None:
        switched_off.append((label, beside))
    restore_answer = _check_results(func, name, watch)
    try:
        for dotted, reference in functions.items():
            marker = reference.__globals__.get("_TRIPPED", _MISSING)
            saved.append((reference, reference.__code__, marker))
            reference.__globals__["_TRIPPED"] = tripped
            reference.__code__ = _tripwire_code(reference, dotted)
        for dotted, (owner, attr) in data.items():
            switched.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, _SwitchedOff(dotted, tripped))
        with _inputs_out_of_reach(cells), _kernel_loops_watched(watch, switched_off, label):
            yield
    finally:
        for reference, code, marker in reversed(saved):
            reference.__code__ = code
            if marker is _MISSING:
                reference.__globals__.pop("_TRIPPED", None)
            else:
                reference.__globals__["_TRIPPED"] = marker
        for owner, attr, value in switched:
            setattr(owner, attr, value)
        restore_answer()
    if tripped:
        raise AssertionError(f"{name} {REACHED} {tripped[0]} while it was "
                             "tested; write your own implementation instead of calling it")
    if copied:
        raise AssertionError(f"{name} {COPIED} {copied[0]}, built at run time "
                             "from its code or source rather than written in a cell; write your own implementation")
    if switched_off:
        dotted, means = switched_off[0]
        raise AssertionError(f"{name} {SWITCHED} {dotted} while it was tested ({means}); "
                             "write your own implementation")
    if peeked:
        raise AssertionError(f"{name} {PEEKED} {peeked[0]} while it was tested: an answer works from its "
                             "arguments, not from what the test expects")


_MISSING = object()


# Built-in types whose behaviour a test relies on when it compares a result: a subclass of the
# notebook's own may keep them only as they are (a namedtuple does; a list equal to everything does not).
BUILT_IN = (list, tuple, dict, set, frozenset, str, bytes, int, float, complex)
HARMLESS = {"__init__", "__new__", "__repr__", "__doc__", "__module__", "__qualname__", "__dict__", "__weakref__",
            "__slots__", "__getnewargs__", "__match_args__", "__annotations__", "__init_subclass__",
            "__firstlineno__", "__static_attributes__"}  # the last two: every class's, from Python 3.13


def _data_types() -> tuple[type, ...]:
    """pandas' and numpy's containers, where they are loaded."""
    pandas, numpy = sys.modules.get("pandas"), sys.modules.get("numpy")
    return ((pandas.DataFrame, pandas.Series, pandas.Index) if pandas else ()) + ((numpy.ndarray,) if numpy else ())


def redefined(value) -> tuple[type, set[str]] | None:
    """(the built-in type, the behaviours of it the notebook redefines) for a value of a notebook's
    subclass of a built-in type that changes how it compares, counts or reads, or of a pandas or numpy
    container that adds anything; None for any other."""
    cls = type(value)
    if (data := next((b for b in _data_types() if issubclass(cls, b)), None)) is not None:
        # Such a container reads its data through members of its own a subclass can take over, some made on
        # the fly (a property `_mgr` runs whatever it likes, after the answer returned, at each read).
        changed = {name for c in cls.__mro__ if c not in data.__mro__
                   for name in _notebooks_members(c, set(vars(c)) - HARMLESS)}
        return (data, changed) if changed else None
    base = next((b for b in BUILT_IN if issubclass(cls, b)), None)  # not isinstance(): it believes __class__
    if base is None or cls is base:
        return None
    # (Defining __eq__ sets __hash__ to None: that follows from the change, it is not another; an
    # enum of strings sets __str__ to str's own.)
    changed = {name for c in cls.__mro__ for name in _notebooks_members(c, set(dir(base)) - HARMLESS)
               if not (name == "__hash__" and vars(c)[name] is None) and vars(c)[name] is not vars(base).get(name)}
    return (base, changed) if changed else None


PROXIES = (weakref.ProxyType, weakref.CallableProxyType)
# What a test's comparison calls on a result besides ==: a class of the notebook's own may not decide it.
COMPARING = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__", "__len__", "__iter__",
             "__bool__", "__float__", "__int__", "__index__", "__getattr__", "__getattribute__"}
# Python's, the libraries' and lab_utils' own folders, not the clone around lab_utils: its work folder is there,
# and a module a notebook writes in it is the notebook's.
INSTALLED = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, PACKAGE_DIR})
PARTS = 10_000  # items of a container looked at, at each of its levels
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time, not one built into Python


def _made_by_notebook(cls: type) -> bool:
    """A class the notebook made: in __main__, or where no installed module file has it by its name
    (a class made inside a function has no such name: its module decides)."""
    if not cls.__flags__ & HEAP_TYPE:  # None's type, int, ...: built into Python
        return False
    if cls.__module__ == "__main__" or (module := sys.modules.get(cls.__module__)) is None:
        return True
    found = module
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    file = getattr(module, "__file__", None)
    if "<locals>" in cls.__qualname__:  # its name proves nothing (it can be set): where was its code compiled?
        return any(not _compiled_from_its_file(code) for code in map(_code_of, vars(cls).values()) if code) \
            or (file is not None and not _installed(file))
    return found is not cls or (file is not None and not _installed(file))


def _notebooks_members(cls: type, names: set[str]) -> set[str]:
    """Which of `names` `cls` defines as the notebook made them: all of a class the notebook made; of a
    library's class, the members of the notebook's code (`Library.__eq__ = lambda ...`, planted there
    with a class passed off under the library's name)."""
    mine = vars(cls).keys() & names
    if _made_by_notebook(cls):
        return mine
    return {name for name in mine if (code := _code_of(vars(cls)[name])) is not None and _notebooks_code(code)}


def _notebooks_code(code: CodeType) -> bool:
    """Code compiled from no installed file, but for "<string>", where dataclasses compile theirs."""
    return not _installed(code.co_filename) and code.co_filename != "<string>"


def _code_of(member) -> CodeType | None:
    """The code a class's member runs: a function's, a static or class method's, a property's getter."""
    member = getattr(member, "fget", member)
    return getattr(getattr(member, "__func__", member), "__code__", None)


def pretends(value) -> str | None:
    """How a value of a class the notebook made decides a test's comparison ("a list subclass, Anything,
    which decides how a test compares it through __eq__ (...)"), or None for an honest value."""
    if type(value) in PROXIES:  # it passes every comparison, and every question about itself, to another
        return f"a weakref proxy, {DECIDES} as whatever it stands for: return the value itself"
    if (found := redefined(value)) is not None:
        base, changed = found
        return (f"a {base.__name__} subclass, {type(value).__name__}, {DECIDES} through "
                f"{', '.join(sorted(changed))} (redefined in the notebook): return a plain {base.__name__}")
    if changed := {name for c in type(value).__mro__ if c is not object for name in _notebooks_members(c, COMPARING)}:
        return (f"an object of {type(value).__name__}, a class of the notebook's own, {DECIDES} through "
                f"{', '.join(sorted(changed))}: return the type the exercise names")
    if value.__class__ is not type(value):  # isinstance() believes __class__
        return (f"an object of {type(value).__name__} that says it is a {value.__class__.__name__}, {DECIDES}: "
                "return the type the exercise names")
    if _equal_to_anything(value):  # one a library made so (unittest.mock.ANY)
        return f"an object of {type(value).__name__} equal to anything, {DECIDES}: return the type the exercise names"
    return None


class _Stranger:
    """What no honest result equals: an object of a class of this module's (a bare object() is one a
    cheat can tell apart: `__eq__ = lambda self, other: type(other) is not object`)."""


def _equal_to_anything(value) -> bool:
    """Does `value` say it equals an object nothing should equal?"""
    for stranger in (object(), _Stranger()):
        try:
            if (value == stranger) is True or (value != stranger) is False:
                return True
        except Exception:  # a comparison that fails is no claim of equality
            continue
    return False


def _parts(value, depth: int = 0) -> Iterator:
    """The value, and what it holds: items of lists, tuples, sets and dicts, objects in pandas data."""
    yield value
    if depth == 3:
        return
    pandas, kind = sys.modules.get("pandas"), type(value)  # not isinstance(): it believes __class__
    if issubclass(kind, dict):
        children = [*value.keys(), *value.values()]
    elif issubclass(kind, (list, tuple, set, frozenset)):
        children = list(value)
    elif pandas is not None and issubclass(kind, (pandas.DataFrame, pandas.Series, pandas.Index)) \
            and redefined(value) is None:  # a subclass's members would run reading it: pretends() names them
        frame = value.to_frame() if isinstance(value, (pandas.Series, pandas.Index)) else value
        children = [*frame.index[:PARTS], *frame.columns[:PARTS],
                    *(v for column in frame.columns if frame[column].dtype == object for v in frame[column][:PARTS])]
    else:
        return
    for child in children[:PARTS * 3]:
        yield from _parts(child, depth + 1)


def _notebook_cells() -> dict[str, str]:
    """The file names IPython compiled this kernel's cells as (none outside IPython), as plain strings (the
    watch compares them, and a string of the notebook's own class could run code there), each with the
    cell's text as IPython keeps it."""
    shell = _shell()
    names = (str.__str__(name) for name in getattr(getattr(shell, "compile", None), "_filename_map", ())
             if issubclass(type(name), str))
    return {name: "".join(dict.get(linecache.cache, name, (0, None, []))[2]) for name in names}


def _sealed() -> tuple[tuple[str, ...] | None, object]:
    """The notebook's cells as autograde sealed them, and the kernel's shell, from its audit hook; (None,
    None) elsewhere (Validate). The hook hands them out once: to this module, imported before any cell of
    the notebook's runs."""
    box: list = []
    sys.audit(SEALED_CELLS, box)
    return (box[0], box[1]) if box and type(box[0]) is tuple else (None, None)


_SEALED, _SEALED_SHELL = _sealed()


def _shell():
    """The kernel's IPython shell (None outside IPython): autograde's, which no cell can stand in for."""
    return _SEALED_SHELL or (sys.modules.get("IPython") and sys.modules["IPython"].get_ipython())


def _written_in_a_cell(code: CodeType, cells: dict[str, str], sealed: tuple[str, ...] | None) -> bool:
    """Whether `code` is what a cell of the notebook compiles to: one of the cells autograde sealed, or
    (Validate) the cell whose name it has, as IPython kept its text. Not code built at run time and
    given a cell's name (`code.replace(co_filename=...)`), nor a cell forged into IPython's records."""
    if sealed is None:
        if code.co_filename not in cells:
            return False
        sealed = (cells[code.co_filename],)
    return any(_signature(code) in _compiled_from("<cell>", source, each_statement=True) for source in sealed)


INPUT_NAMES = re.compile(r"_i(\d+|i{0,2})")  # IPython's names for the last inputs and the n-th: _i, _ii, _iii, _i7


@contextmanager
def _inputs_out_of_reach(cells: dict[str, str]) -> Iterator[None]:
    """While a test runs, the text of the notebook's inputs, the running test cell's among them (its hidden
    tests, what it expects), is nowhere an answer could read it: IPython's input history (`In`, `_ih`, `_i`,
    `_i<n>`, and the lists and names behind them), the kernel's request being run, the running cell's own
    record (`displayhook.exec_result.info`) and linecache (whence a traceback quotes `cells`) hold none of it;
    all is put back after. (The history's database and Python's gc, which could find it too, are watched:
    _watch.)"""
    shell = _shell()
    history = getattr(shell, "history_manager", None)
    if history is None:
        yield
        return
    lists = [history.input_hist_parsed, history.input_hist_raw, history.db_input_cache]
    kept = [list(entries) for entries in lists]
    names = {name: value for name, value in shell.user_ns.items() if type(name) is str and INPUT_NAMES.fullmatch(name)}
    attributes = {name: getattr(history, name) for name in ("_i00", "_i", "_ii", "_iii")}
    kernel = getattr(shell, "kernel", None)
    request = kernel.get_parent().get("content", {}) if hasattr(kernel, "get_parent") else {}
    code = request.get("code")
    quoted = {name: linecache.cache.pop(name) for name in cells if name in linecache.cache}
    info = getattr(getattr(getattr(shell, "displayhook", None), "exec_result", None), "info", None)
    running = {name: getattr(info, name) for name in ("raw_cell", "transformed_cell") if hasattr(info, name)}
    try:
        with history.db_input_cache_lock:  # its saving thread empties it
            for entries in lists:
                entries[:] = [] if entries is history.db_input_cache else [""] * len(entries)
        shell.user_ns.update(dict.fromkeys(names, ""))
        for name in attributes:
            setattr(history, name, "")
        if code is not None:
            request["code"] = ""
        for name in running:
            setattr(info, name, "")
        yield
    finally:
        with history.db_input_cache_lock:
            for entries, before in zip(lists, kept):
                entries[:] = before
        shell.user_ns.update(names)
        for name, value in attributes.items():
            setattr(history, name, value)
        if code is not None:
            request["code"] = code
        for name, value in running.items():
            setattr(info, name, value)
        linecache.cache.update(quoted)


def _compiled_from_its_file(code: CodeType) -> bool:
    """Whether `code` is what the installed file it names compiles to, as the file is on disk, or what a
    module frozen into Python holds (`<frozen abc>`: the standard library's first modules)."""
    if (frozen := FROZEN.fullmatch(code.co_filename)) is not None:
        return _signature(code) in _frozen(frozen[1])
    if not _installed(code.co_filename):
        return False
    return _signature(code) in _compiled_from(code.co_filename, _file_text(code.co_filename))


FROZEN = re.compile(r"<frozen ([\w.]+)>")


@functools.lru_cache(maxsize=64)
def _frozen(name: str) -> frozenset:
    """(name, first line, shape) of every code object of the module frozen into Python under `name`."""
    try:
        module = _imp.get_frozen_object(name)
    except ImportError:  # no such module is frozen: code that only says it is
        return frozenset()
    return frozenset(_signature(code) for code in (module, *_nested(module)))


@functools.lru_cache(maxsize=64)
def _file_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


@functools.lru_cache(maxsize=1024)
def _compiled_from(filename: str, source: str, each_statement: bool = False) -> frozenset:
    """(name, first line, shape) of every code object `source` compiles to, with and without
    `from __future__ import annotations` (a cell compiles under the futures earlier cells imported)."""
    return frozenset(_signature(code) for codes in _compiled(source, filename, each_statement=each_statement)
                     for code in codes)


def _compiled(source: str, filename: str, optimize: int = -1, each_statement: bool = False) -> Iterator[list[CodeType]]:
    """Every code object of `source`, compiled with and without `from __future__ import annotations`
    (at the optimization level given; -1: the interpreter's). `each_statement`: also each top-level
    statement compiled alone, as IPython runs a cell. Python 3.11 compiles `operator.eq(...)` otherwise
    when the same compile imported `operator`, so a cell's function differs from the whole cell's."""
    for flags in (0, __future__.annotations.compiler_flag):
        try:
            stack = [compile(source, filename, "exec", flags=flags, dont_inherit=True, optimize=optimize)]
            if each_statement:
                stack += [compile(ast.Module([statement], []), filename, "exec", flags=flags, dont_inherit=True,
                                  optimize=optimize) for statement in ast.parse(source, filename).body]
            codes = []
        except SyntaxError:  # a cell with a syntax error defines nothing
            continue
        while stack:
            codes.append(stack.pop())
            stack += [c for c in codes[-1].co_consts if isinstance(c, CodeType)]
        yield codes


def _copy_shapes(reference: FunctionType) -> frozenset:
    """(shape, instructions) of each code a copy of `reference` compiled from its source can have (with or
    without the annotations future its module may import), and of its code's own: worked out once per code
    object, since compiling the source again at every test cost more than most tests."""
    code = reference.__code__
    made_from, shapes = _shapes_cached(reference, id(code))  # by id: hashing code would hash its constants
    return shapes if made_from is code else _shapes_of(reference)


@functools.lru_cache(maxsize=256)  # an lru_cache holds only what it computed: nothing can be slipped in
def _shapes_cached(reference: FunctionType, code_id: int) -> tuple[CodeType, frozenset]:
    return reference.__code__, _shapes_of(reference)


def _shapes_of(reference: FunctionType) -> frozenset:
    codes = [reference.__code__]
    with suppress(OSError, TypeError):
        source = textwrap.dedent(inspect.getsource(reference))
        # A copy may be compiled without its asserts (-O) or its docstrings too (-OO): other constants and code.
        for optimize in (0, 1, 2):
            for compiled in _compiled(source, "<copy>", optimize):
                codes += [c for c in compiled if c.co_name == reference.__code__.co_name]
    return frozenset((_shape(c), _instructions(c)) for c in codes)


def _signature(code: CodeType) -> tuple:
    """Where `code` starts in the text it was compiled from, and its shape."""
    return code.co_name, code.co_firstlineno, _shape(code)


def _shape(code: CodeType) -> tuple:
    """What a copy of `code` compiled anywhere shares with it: not its file nor its line numbers.
    It runs inside the watch, so it runs no code of the notebook's (a constant's __repr__ or __hash__
    could switch the watch off): it reads only constants a compiler makes."""
    return code.co_code, code.co_names, code.co_varnames, tuple(map(_constant, code.co_consts))


OP = dis.opmap
ENDING = frozenset(OP[name] for name in ("RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
                                         "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
                   if name in OP)  # the instruction after one of these runs only if something jumps to it
JUMPS = frozenset(dis.hasjrel + dis.hasjabs)
BACKWARD = frozenset(op for op in JUMPS if "JUMP_BACKWARD" in dis.opname[op])
DOING_NOTHING = frozenset({OP["NOP"], OP["EXTENDED_ARG"], OP["CACHE"]})
# A value pushed and at once dropped, or stored in a local nothing reads (`x` or `_pad = 0` alone on a line), does
# nothing either. Where an instruction names two locals at once (3.13), none of this is looked for.
PUSHING_ONLY = frozenset({OP["LOAD_CONST"], OP["LOAD_FAST"]})
TWO_LOCALS = frozenset(OP[name] for name in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST")
                       if name in OP)
LOCALS, CONSTANTS = frozenset(dis.haslocal), frozenset(dis.hasconst)


def _instructions(code: CodeType) -> tuple:
    """What `code` does, as a copy with instructions that do nothing added does it too: the instructions
    that can run (reached from the start, by a jump or from an exception handler), by opcode and argument,
    without NOPs and values pushed for nothing, a jump by the instruction it lands on, locals and constants
    by the order they come in. Read from the bytes alone: its names and constants are not looked at (a
    constant's __repr__ could be the notebook's), and no bytes make it fail."""
    raw = code.co_code
    ops, args, extended = raw[0::2], [], 0  # one unit of two bytes per instruction or inline cache (CACHE)
    for op, arg in zip(ops, raw[1::2]):
        args.append(arg | extended if op >= dis.HAVE_ARGUMENT else 0)
        extended = args[-1] << 8 if op == OP["EXTENDED_ARG"] else 0

    def target(n: int) -> int:  # the unit a jump lands on: counted from past its inline caches
        after = n + 1
        while after < len(ops) and ops[after] == OP["CACHE"]:
            after += 1
        return after + (-args[n] if ops[n] in BACKWARD else args[n])

    handlers = [(h.start // 2, h.end // 2, h.target // 2) for h in dis._parse_exception_table(code)]
    reached, todo = set(), [0]
    while todo:
        n = todo.pop()
        if n in reached or not 0 <= n < len(ops):
            continue
        reached.add(n)
        todo += [to for start, end, to in handlers if start <= n < end]
        if ops[n] in JUMPS:
            todo.append(target(n))
        if ops[n] not in ENDING:
            todo.append(n + 1)
    kept = sorted(n for n in reached if ops[n] not in DOING_NOTHING)
    if not TWO_LOCALS.intersection(ops[n] for n in kept):
        kept = _without_idle_pairs(kept, ops, args, {target(n) for n in kept if ops[n] in JUMPS} |
                                   {to for _, _, to in handlers})
    place = {n: k for k, n in enumerate(kept)}
    landing = lambda n: next((place[m] for m in range(max(n, 0), len(ops)) if m in place), None)
    # Locals (past the arguments) and constants numbered as they first come: a local or a constant
    # that only an idle pair used moved the others.
    first = _numbered_as_they_come(kept, ops, args, LOCALS, _arguments(code))
    first |= _numbered_as_they_come(kept, ops, args, CONSTANTS, 0)
    return tuple((ops[n], landing(target(n)) if ops[n] in JUMPS else first.get(n, args[n])) for n in kept)


def _without_idle_pairs(kept: list[int], ops: bytes, args: list[int], landed: set[int]) -> list[int]:
    """`kept` without each push of a constant or a local that the next instruction drops or stores in a
    local no other instruction reads, where nothing jumps in between the two; again until none is left
    (a local that only such a pair read)."""
    while True:
        read = {args[n] for n in kept if ops[n] in LOCALS and ops[n] != OP["STORE_FAST"]}
        idle = {n for pair in zip(kept, kept[1:]) for n in pair
                if ops[pair[0]] in PUSHING_ONLY and not landed.intersection(range(pair[0] + 1, pair[1] + 1))
                and (ops[pair[1]] == OP["POP_TOP"] or ops[pair[1]] == OP["STORE_FAST"] and args[pair[1]] not in read)}
        if not idle:
            return kept
        kept = [n for n in kept if n not in idle]


def _numbered_as_they_come(kept: list[int], ops: bytes, args: list[int], kind: frozenset, fixed: int) -> dict[int, int]:
    """By instruction, its argument (a local's or a constant's index) renumbered in the order the indexes
    first come; indexes below `fixed` (the arguments') keep their number."""
    number: dict[int, int] = {}
    for n in kept:
        if ops[n] in kind and args[n] >= fixed:
            number.setdefault(args[n], fixed + len(number))
    return {n: number.get(args[n], args[n]) for n in kept if ops[n] in kind}


def _arguments(code: CodeType) -> int:
    """How many of `code`'s locals are its arguments (*args and **kwargs included)."""
    return code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
        bool(code.co_flags & inspect.CO_VARKEYWORDS)


def _constant(value) -> object:
    kind = type(value)
    if kind is CodeType:
        return _shape(value)
    if kind in (tuple, frozenset):  # a frozenset's order is not its contents'
        parts = tuple(map(str, map(_constant, value)))
        return kind.__name__, parts if kind is tuple else tuple(sorted(parts))
    if kind in (str, bytes, int, float, complex, bool, type(None), type(...)):
        return repr(value)
    return f"an object put there at run time, #{id(value)}"


def _installed(file: str) -> bool:
    """An installed file (Python's, a library's, the course's), not the notebook's or a made-up one."""
    return os.path.realpath(file).startswith(INSTALLED) and os.path.isfile(file)


def _builtin(dotted: str):
    """A function of a built-in module by its dotted name; None where this system has none (Windows: no fork)."""
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


# What runs code out of the watch's sight: another process (a forked child runs the reference's code
# put back), another interpreter in this process (its own profile function: none), or the watch itself
# switched off.
OUT_OF_SIGHT = {found: dotted for dotted in ("os.fork", "os.forkpty", "os.system", "os.posix_spawn", "os.posix_spawnp",
                                         "os.execv", "os.execve", "_posixsubprocess.fork_exec", "_winapi.CreateProcess",
                                         "_xxsubinterpreters.run_string", "_interpreters.exec",
                                         "_interpreters.run_string", "_interpreters.run_func", "_interpreters.call")
                if (found := _builtin(dotted)) is not None}
# The code every @contextmanager (and @asynccontextmanager) function runs, whichever function it wraps, by its id.
CONTEXT_MANAGER_CODES = {id(contextmanager(iter).__code__), id(asynccontextmanager(iter).__code__)}
# Functions that hand over the frames of the code that called them, by their code's id: the watch
# never hashes a code object, whose constants' __hash__ could be the notebook's.
FRAME_READERS = {id(f.__code__): f"{f.__module__}.{f.__qualname__}" for f in (
    inspect.currentframe, inspect.stack, inspect.getouterframes, inspect.trace, inspect.getinnerframes,
    traceback.walk_stack, traceback.walk_tb, traceback.extract_stack, traceback.format_stack, traceback.print_stack,
    traceback.StackSummary.extract.__func__)}


def _watch(references: list[tuple[str, FunctionType]], cells: dict[str, str],
           patterns: dict[int, dict[tuple[int, ...], str]], tripped: list, copied: list, switched_off: list,
           peeked: list):
    """A profile function that notes (in `tripped`) a search with a reference's compiled pattern, which
    is switched off where it is kept but may have been kept aside before, or compiled again from its
    text or from one that compiles alike (_program); (in `copied`) each run of a reference's code or of code
    nested in it, or of a copy of its source compiled again or of its code with other names or constants, that
    is not in a cell of the notebook as the cell's text compiles: while the tripwires are set, that is a copy of
    it, never
    the reference itself; (in `switched_off`) a call that would replace the watch, start a thread
    without it or start another process, from code other than this module's and threading's; and (in
    `peeked`) the code that called the answer read, a trace function set (which is handed every frame, the
    test's too), IPython's input history or Python's gc (which find the test's text) read, from code that
    is not installed."""
    copies = [(dotted, *pair) for dotted, reference in references for pair in _copy_shapes(reference)]
    shapes = {shape: dotted for dotted, shape, _ in copies}
    # The same instructions with other names, variables or constants, or with instructions that do nothing:
    # globals or locals renamed, a docstring reworded, the reference's code given other names or a NOP
    # (code.replace), its source given a `pass`, a name alone or a constant stored in a local nothing reads.
    alike = {steps: dotted for dotted, _, steps in copies}
    # Code nested in a reference (a sort key, a lambda), which only the reference's own code, switched off,
    # would run: by where it was compiled too, as no library's code that looks alike was.
    nested = {(code.co_filename, code.co_firstlineno, _instructions(code)): dotted
              for dotted, reference in references for code in _nested(reference.__code__)}
    sealed = _SEALED
    # The opcodes of a reference long enough that nearly the same ones in the same order make a copy: one with a
    # few statements added that do next to nothing (`_pad = len("")`). Only where the notebook's cells are known:
    # an answer written in a cell is often this like the reference.
    outlines = {(dotted, tuple(op for op, _ in steps)) for dotted, _, steps in copies
                if len(steps) >= OUTLINED} if sealed is not None or cells else set()
    judged: dict[int, tuple[CodeType, str | None]] = {}  # by code's id, the code kept so that its id stays its own
    label = references[0][0] if references else "lab_utils"
    setting = {sys.setprofile: "sys.setprofile", threading.setprofile: "threading.setprofile",
               _thread.start_new_thread: "a thread started without it", **OUT_OF_SIGHT}
    # Built-in functions, which hash and compare by identity: a lookup runs no code of the notebook's.
    readers = {sys._getframe: "sys._getframe", sys._current_frames: "sys._current_frames", sys.settrace: "sys.settrace",
               gc.get_objects: "gc.get_objects", gc.get_referrers: "gc.get_referrers",
               gc.get_referents: "gc.get_referents"}
    noted = {*setting, *readers}
    history = getattr(_shell(), "history_manager", None)
    database = getattr(history, "db", None)
    # Functions that hand over the test or its text, by their code's id: frame readers and the history's methods
    # (but for a method made by @contextmanager, whose code is contextlib's, the same for every such function).
    handing = FRAME_READERS | {id(f.__code__): "IPython.core.history" for f in _methods(type(history))
                               if id(f.__code__) not in CONTEXT_MANAGER_CODES}

    def watch(frame, event, arg):
        # Runs for every call and return while a test calls an answer, so the common case is quick:
        # a return, or a built-in call of none of `noted`, costs two comparisons and a set lookup.
        if event == "call":
            code = frame.f_code
            if id(code) in handing and not _installed(frame.f_back.f_code.co_filename):
                peeked.append(handing[id(code)])
            if (kept := judged.get(id(code))) is None or kept[0] is not code:  # each code judged once
                dotted = _copy_of(code, shapes, alike, nested, outlines)
                kept = judged[id(code)] = code, None if _written_in_a_cell(code, cells, sealed) else dotted
            if kept[1] is not None:
                copied.append(kept[1])
        elif event == "c_call":
            if arg in noted and not _own(frame.f_code):
                if (means := setting.get(arg)) is not None:
                    switched_off.append((label, means))
                elif not _installed(frame.f_code.co_filename):
                    peeked.append(readers[arg])
            elif (kept := getattr(arg, "__self__", None)) is database and database is not None \
                    and not _installed(frame.f_code.co_filename):
                peeked.append("IPython.core.history")
            elif patterns and type(kept) is re.Pattern:
                if kept.pattern is None and not _installed(frame.f_code.co_filename):
                    switched_off.append((label, NO_TEXT))  # no text to tell from a reference's
                elif (dotted := _reference_pattern(kept.pattern, patterns)) is not None:
                    tripped.append(dotted)

    return watch


def _reference_pattern(text: str | bytes | None, patterns: dict[int, dict[tuple[int, ...], str]]) -> str | None:
    """The reference pattern that a pattern's text compiles to under the reference's own flags, or None."""
    # An exact str or bytes, a subclass's copied: no method of the notebook's runs, none is hashed.
    if issubclass(type(text), str):
        text = str.__str__(text)
    elif issubclass(type(text), bytes):
        text = bytes.__bytes__(text)
    else:  # compiled from a parse tree (re._compiler.compile), the pattern keeps no text
        return None
    return next((dotted for flags, programs in patterns.items()
                 if (dotted := programs.get(_program(text, flags))) is not None), None)


@functools.lru_cache(maxsize=1024)  # per text and flags: the watch asks at every search with a pattern
def _program(text: str | bytes, flags: int) -> tuple[int, ...] | None:
    """What `text` (bytes read as UTF-8) compiles to under `flags`: CPython's program for the pattern; None
    if it does not compile. Texts with the same program are the same pattern: one with a group of nothing
    appended (`X(?:)`), grouped (`(?:X)`), `[\\s]` for `\\s`, a long character class in another order. Others,
    even `[_a-z]` for `[a-z_]` or `X{1}` for `X`, compile to another program."""
    if type(text) is bytes:
        text = text.decode("utf-8", "surrogateescape")
    try:
        return tuple(re._compiler._code(re._parser.parse(text, flags), flags))
    except Exception:  # any: the watch may not raise, or Python switches it off for the rest of the test
        return None


@functools.cache  # per class: every test asks for the history's
def _methods(cls: type) -> list[FunctionType]:
    """The functions of a class and of its bases: methods, static and class methods, properties' getters."""
    found = [getattr(f, "__func__", getattr(f, "fget", f)) for c in cls.__mro__ for f in vars(c).values()]
    return [f for f in found if isinstance(f, FunctionType)]


def _copy_of(code: CodeType, shapes: dict, alike: dict, nested: dict, outlines: set) -> str | None:
    """The reference that `code` is a copy of, or None: its shape, code nested in it as compiled there, or
    its instructions with other names, local variables or constants or with instructions that do nothing,
    or nearly its opcodes, unless it is what an installed file compiles to (a library's function that is
    only like the reference)."""
    steps = _instructions(code)
    if (dotted := shapes.get(_shape(code)) or nested.get((code.co_filename, code.co_firstlineno, steps))) is not None:
        return dotted
    dotted = alike.get(steps) or _resembled(tuple(op for op, _ in steps), outlines)
    return None if dotted is None or _compiled_from_its_file(code) else dotted


# Instructions a reference has at least for a likeness to it to mean a copy. Shorter ones are alike often: of
# 1712 code objects no file holds (lambdas from strings, generated wrappers) in a kernel with a lesson's libraries,
# 148 came this near a reference of 8 to 19 instructions, and none near one of 20 or more.
OUTLINED = 20
RESEMBLES = 0.85  # of difflib's ratio: 2 × the opcodes in common, in order, over both counts


def _resembled(opcodes: tuple, outlines: set) -> str | None:
    """The reference whose opcodes these nearly are, in the same order; the cheap upper bounds first."""
    for dotted, outline in outlines:
        matcher = difflib.SequenceMatcher(None, outline, opcodes, autojunk=False)
        if min(matcher.real_quick_ratio(), matcher.quick_ratio()) >= RESEMBLES and matcher.ratio() >= RESEMBLES:
            return dotted
    return None


def _nested(code: CodeType) -> Iterator[CodeType]:
    """The code objects nested in `code`, at any depth."""
    for inner in code.co_consts:
        if type(inner) is CodeType:
            yield inner
            yield from _nested(inner)


def _running_beside() -> str | None:
    """A thread or a process the notebook started that still runs, described; None if there is none.
    Started before a test, it runs out of the watch's sight (a reference's code copied there, a child
    forked with the reference intact), so a test runs only while the notebook runs nothing beside it.
    Threads that libraries start when they need them (pyzmq's, tqdm's) are theirs: they run only
    installed code, and are no pool's workers, which run whatever they are handed."""
    frames, threads = sys._current_frames(), {thread.ident: thread for thread in threading.enumerate()}
    mine = sorted(ident for ident, frame in frames.items()
                  if ident not in _KERNEL_THREADS and ident != threading.get_ident()
                  and (not _a_librarys(frame) or _serves_the_notebook(threads.get(ident))))
    if mine:
        return f"a thread the notebook started, {getattr(threads.get(mine[0]), 'name', 'unnamed')!r}, was running"
    if others := sorted(set(_processes()) - _KERNEL_PROCESSES):
        return f"a process the notebook started, pid {others[0]}, was running"
    return None


# How far _serves_the_notebook looks: objects, and references from the thread's target.
REACH, DEPTH = 2000, 6


def _serves_the_notebook(thread: threading.Thread | None) -> bool:
    """Whether a thread idle in a library's code holds the notebook's code to run when called: a
    server's handler class, a queue listener's handler, whatever its target reaches (its object's
    attributes, closures, arguments, containers), modules aside."""
    if thread is None:
        return False
    # What it was handed to run: a Thread's target and arguments, or its class's own run method (tqdm's
    # monitor keeps the progress bars, which may hold anything of the notebook's: it is not followed).
    todo, seen = [(getattr(thread, "_target", None), 0), (getattr(thread, "_args", ()), 0),
                  (getattr(thread, "_kwargs", {}), 0), (type(thread), 0)], set()
    while todo and len(seen) < REACH:
        value, depth = todo.pop()
        if id(value) in seen or depth > DEPTH or isinstance(value, (type(sys), str, bytes, int, float)):
            continue
        seen.add(id(value))
        if isinstance(value, type):  # by its methods' code (a type written in C has none)
            if any(_notebooks_code(code) for code in map(_code_of, vars(value).values()) if code):
                return True
            continue
        if isinstance(value, FunctionType):  # run from text too ("<string>"): handed to a thread, no dataclass's
            if not _installed(value.__code__.co_filename):
                return True
            held = [*_closure_values(value), *(value.__defaults__ or ())]
        elif isinstance(value, MethodType):
            held = [value.__func__, value.__self__]
        elif isinstance(value, dict):
            held = [*value.keys(), *value.values()]
        elif isinstance(value, (list, tuple, set, frozenset, collections.deque)):
            held = list(value)
        else:
            parts = ("func", "args", "keywords") if isinstance(value, functools.partial) else ()
            held = [type(value), *getattr(value, "__dict__", {}).values(), *(getattr(value, name) for name in parts)]
        todo += [(item, depth + 1) for item in held]
    return False


def _closure_values(function: FunctionType) -> list:
    values = []
    for cell in function.__closure__ or ():
        with suppress(ValueError):  # a variable not assigned yet
            values.append(cell.cell_contents)
    return values


# Where a pool's worker thread waits for work (concurrent.futures, multiprocessing.pool).
POOL_WORKERS = {("thread.py", "_worker"), ("pool.py", "worker")}


def _a_librarys(frame) -> bool:
    """Whether a thread's stack, from `frame` down, is a library's own: installed code only (no cell's,
    no string's), and no pool's worker."""
    while frame is not None:
        code = frame.f_code
        if not _installed(code.co_filename) or (os.path.basename(code.co_filename), code.co_name) in POOL_WORKERS:
            return False
        frame = frame.f_back
    return True


def _processes() -> list[int]:
    """The processes beside the kernel that are alive, not exited (found on Linux only): in the sandbox's
    pid namespace, every one but its init, bwrap (a process detached from the kernel, `cmd &` through a
    shell, is its child then); elsewhere the kernel's children."""
    with suppress(OSError):
        if Path("/proc/1/comm").read_text().strip() == "bwrap":
            others = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and p.name != "1"]
            return [int(pid) for pid in others if pid != str(os.getpid()) and _alive(pid)]
    return [int(pid) for listed in Path("/proc/self/task").glob("*/children") for pid in listed.read_text().split()
            if _alive(pid)]


def _alive(pid: str) -> bool:
    """Whether the process runs: it has not exited (a zombie) nor gone meanwhile."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# The kernel's own threads and processes: a lesson's first cell imports this module (the grader, before
# any cell).
_KERNEL_THREADS = frozenset(sys._current_frames())
_KERNEL_PROCESSES = frozenset(_processes())


def _loops_of(threads: frozenset) -> dict[int, tuple[str, object]]:
    """The event loops that `threads` run (ipykernel's IOPub, control and shell channel threads: tornado's),
    as (thread's name, asyncio loop) by thread; the calling thread's own aside."""
    tornado = sys.modules.get("tornado.ioloop")
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    loops = list(tornado.IOLoop._ioloop_for_asyncio) if tornado is not None else []
    return {ident: (names.get(ident, "unnamed"), loop) for loop in loops
            if (ident := getattr(loop, "_thread_id", None)) in threads and ident != threading.get_ident()}


_KERNEL_LOOPS = _loops_of(_KERNEL_THREADS)
# Seconds a kernel's loop may take to let the watch in: one that runs nothing meanwhile is held by a job.
WATCH_WAIT = 5


@contextmanager
def _kernel_loops_watched(watch, switched_off: list, label: str) -> Iterator[None]:
    """Run the block with `watch` the profile function of the kernel's loop threads too, set and put back by
    callbacks their loops run: they already ran when the test's thread set its own, and would run a
    reference's code handed to them (`sys.stdout.pub_thread.schedule(job)`) unwatched. A loop that does
    not let the watch in within WATCH_WAIT seconds is noted in `switched_off`: the test fails, not run unwatched."""
    frames, kept, scheduled = sys._current_frames(), {}, []
    for ident, (name, loop) in _KERNEL_LOOPS.items():
        if ident in frames:  # an ended thread runs nothing
            ran = threading.Event()
            loop.call_soon_threadsafe(_profile_in, ident, watch, kept, ran)
            scheduled.append((ident, name, loop, ran))
    deadline = time.monotonic() + WATCH_WAIT
    if late := [name for _, name, _, ran in scheduled if not ran.wait(max(0.0, deadline - time.monotonic()))]:
        switched_off.append((label, f"grading could not watch the kernel's {late[0]} thread: its loop did not let "
                                    f"the watch in within {WATCH_WAIT} seconds"))
    try:
        yield
    finally:
        for ident, _, loop, _ in scheduled:  # after the watch in each loop: a loop runs its callbacks in turn
            loop.call_soon_threadsafe(_profile_in, ident, None, kept, threading.Event())


def _profile_in(ident: int, watch, kept: dict, ran: threading.Event) -> None:
    """In thread `ident`'s loop: set `watch` as its profile function (None: put back the one it had), and
    say so in `ran`; nothing where the loop's callback runs in another thread (its methods replaced)."""
    if _thread.get_ident() != ident:
        return
    if watch is None:
        sys.setprofile(kept.pop(ident, None))
    else:
        kept[ident] = sys.getprofile()
        sys.setprofile(watch)
    ran.set()


def _own(code: CodeType) -> bool:
    """Code of this module (putting the watch back) or of threading (starting a watched thread), as
    their files compile: not code compiled under their names."""
    return code.co_filename in (__file__, threading.__file__) and _compiled_from_its_file(code)


def _check_results(func: FunctionType, name: str, watch):
    """Swap `func`'s code for code that calls a copy of it (profiled by `watch`)
    and refuses a result (or an item of a result) that only pretends to be a list, a string, a number;
    returns what puts it back."""
    original = FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    original.__kwdefaults__ = func.__kwdefaults__
    slot = f"_checked_{id(func)}"  # its own name in the notebook: another answer may be checked at once

    def checked(*args, **kwargs):
        __tracebackhide__ = True
        # Every call is watched: were some left out, an answer could tell them apart (sys.getprofile(),
        # or how long a call takes) and cheat only there.
        before, threads_before = sys.getprofile(), threading.getprofile()
        sys.setprofile(watch)
        threading.setprofile(watch)  # a thread the answer starts is watched too
        try:
            result = original(*args, **kwargs)
        except Exception as error:
            # A test reads an error's message: it must be a plain string, not one equal to every message.
            for part in (str(error), *error.args):
                if (why := pretends(part)) is not None:
                    raise AssertionError(f"{name} raised {type(error).__name__} with {why}") from None
            raise
        finally:
            sys.setprofile(before)
            threading.setprofile(threads_before)
        for part in reversed(list(_parts(result))):  # what a container holds first: it decides the container's ==
            if (why := pretends(part)) is not None:
                raise AssertionError(f"{name} returned {why}")
        return result

    code = func.__code__
    func.__globals__[slot] = checked
    func.__code__ = _calling_code(func, slot)

    def restore() -> None:
        func.__code__ = code
        func.__globals__.pop(slot, None)

    return restore


def _calling_code(func: FunctionType, slot: str) -> CodeType:
    """Code with `func`'s free variables that hands its call to `slot` of its globals."""
    free = func.__code__.co_freevars
    source = (f"def _outer({', '.join(free)}):\n"
              f"    def _checking(*args, **kwargs):\n"
              "        __tracebackhide__ = True\n"
              + "".join(f"        {v}\n" for v in free)
              + f"        return {slot}(*args, **kwargs)\n"
              "    return _checking\n")
    namespace: dict = {}
    exec(compile(source, "<checked>", "exec"), namespace)
    return next(c for c in namespace["_outer"].__code__.co_consts if isinstance(c, CodeType))
