"""Tampering flagged: every graded test cell proves that it ran as released.

nbgrader puts back the released source of a locked test cell before grading, but the student's
cells run first, in the same kernel, and can change what that source does: an input transformer
that turns every later cell into `pass`, an AST transformer or an audit hook that drops asserts,
asserts compiled away (the optimization level raised), a trace function,
a custom exception handler, an event callback that clears a failed test's error, a patched
lab_utils.grading or a patched judge of the tests (pandas.testing.assert_frame_equal, math.isclose),
a fake module in sys.modules, a kernel that exits early or stops answering.
`install` adds three steps to nbgrader's autograde:

- `CompareWithRelease`, before nbgrader's own checks: notes test cells edited (unlike the release,
  and unlike every committed earlier one: releases.py), deleted or renamed and grading flags edited
  (a test's points, an answer made graded), and puts the release's flags back (a renamed cell
  becomes a plain cell, so nbgrader restores the released one instead of crashing); notes Python
  files handed in with the notebook, which a kernel started in that folder could import in place of
  the course's own;
- `Seal`, before execution: a first cell adds an audit hook that refuses any other and holds the
  notebook's cells for lab_utils.grading (`_refuse_audit_hooks`), and reports the kernel's state
  (`_kernel_state`), each graded test cell
  gets a last line with a fresh nonce that reports it again, and a last cell reports it once more;
- `Verify`, after execution: a test cell that passed without a sound report (its nonce, the code
  that ran equal to the released code, run by IPython as the cell's last statement, on the main
  thread, outside the handling of an error, with only installed files' code below it; nothing added
  or replaced since the first report, nor in what carries an error to nbgrader) gets an
  error output, so nbgrader gives it no points and the feedback says why. A cheat that failed
  (a swallowed error is still an error) changes no score, but the last report still names it.
  Only an error fails a test cell: nbgrader would also take a value it displays for partial credit,
  and a warning for a failure; both are kept as what they show.

The reasons are written beside the autograded notebook (`<lesson>.integrity.json`); `findings`
reads them. The reports come from inside the student's kernel: a student who studied this module
could forge one. What it stops is every known cheat, and the general means of hiding one
(transformers, tracing, patched modules and builtins), whatever the cheat.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import inspect
import json
import re
import secrets
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearHiddenTests, Execute, NbGraderPreprocessor
from traitlets.config import Config

from lab_utils.course import shadowing
from lab_utils.course.cells import GRADERS_ERROR, is_test, parsed_cell
from lab_utils.course.releases import released_test_cells
from lab_utils.grading import COPIED, DECIDES, PACKAGE_DIR, PEEKED, REACHED, SEALED_CELLS, SWITCHED, TAKEN

MIME = "application/vnd.agent-memory-lab.integrity+json"
GRADERS_CELL_SECONDS = 60  # at least, for the grader's first cell, whatever c.Execute.timeout says
KEY = "lab_integrity"  # notebook metadata (between nbgrader's two passes) and resources
RECORD = ".integrity.json"  # beside the autograded notebook: <lesson>.integrity.json
NOT_AS_RELEASED = " did not run as released: "  # between a test cell's grade_id and why, in a finding
# Files in a submission's folder that Python could import.
IMPORTABLE = {".py", ".pyc", ".pth", ".so", ".zip", ".egg", ".whl", ".pyz"}
# Event callbacks that common habits add (`%load_ext autoreload`, matplotlib's inline figures): as
# their modules have them, from their modules' files, they are not a cheat.
HARMLESS_CALLBACKS = (("IPython.extensions.autoreload", "AutoreloadMagics.pre_run_cell"),
                      ("IPython.extensions.autoreload", "AutoreloadMagics.post_execute_hook"),
                      ("matplotlib.pyplot", "_draw_all_if_interactive"),
                      ("matplotlib_inline.backend_inline", "flush_figures"))
# The kernel's machinery that runs a cell: patching any of it can change what a cell does.
MACHINERY = ("IPython.core.interactiveshell", "IPython.core.history", "IPython.core.compilerop",
             "IPython.core.inputtransformer2", "IPython.core.events", "ipykernel.zmqshell",
             "ipykernel.ipkernel", "ipykernel.kernelbase", "ipykernel.iostream", "ipykernel.displayhook",
             "jupyter_client.session")
# What the test cells judge with: patching it (pandas.testing.assert_frame_equal = a no-op) passes tests.
# (pandas.api.types is left out: watching it, the fork-bomb test's kernels failed, for a reason not found yet.)
JUDGES = ("math", "pandas.testing")
# What lab_utils.grading judges an answer with, and the report hashes with: patched (sys.setprofile a
# no-op, inspect.getattr_static lying about a reference), its checks would pass a copy of the reference.
# own_implementation is a context manager: an __exit__ patched swallows a test's error. The watch compiles a
# searched pattern's text with re's own parser and compiler: patched, a reference's pattern would compile to nothing.
# ipykernel's parent poller calls os.getppid and time.sleep on a thread of its own, where no watch runs: patched,
# they would run the notebook's code there.
TOOLS = ("inspect", "posixpath", "threading", "linecache", "functools", "traceback", "importlib", "hashlib",
         "contextlib", "re._parser", "re._compiler", "os", "time")


# What the grader's hook says when a notebook's code reads a frame it could climb to a running test from,
# or looks up through ctypes a C function of the system's that starts a process: a process the watch never
# sees starting runs the reference unwatched, and is gone before a test looks for it.
REFUSED_FRAME = "while a notebook is graded, its code may not read a traceback's or a generator's frame"
REFUSED_PROCESS = "while a notebook is graded, its code may not start a process through ctypes"
REFUSED_C_API = "while a notebook is graded, its code may not reach Python's C API or read memory through ctypes"
C_API = ("Py", "_Py")  # the names of Python's C API: PyEval_GetFrame hands over the running frame, the test's
PROCESS_STARTERS = ("system", "popen", "fork", "vfork", "clone", "clone3", "syscall", "posix_spawn", "posix_spawnp",
                    "execl", "execle", "execlp", "execv", "execve", "execvp", "execvpe", "fexecve")


def _refuse_audit_hooks(asked: str, cells: tuple[str, ...], refused_frame: str, refused_process: str,
                        starters: tuple[str, ...], refused_c_api: str, c_api: tuple[str, ...]) -> None:
    """Add an audit hook that refuses any later one, any change to itself, Python's test modules, and
    ctypes' ways around the watch (a process started, Python's C API reached, memory read at an address),
    and hands the notebook's `cells` as sealed (once: to lab_utils.grading) and the kernel's shell (to
    the reports) when it raises the event `asked`.
    Runs inside the kernel before the notebook's first cell, shipped as source: self-contained."""
    import os
    import sys

    from IPython.core.getipython import get_ipython

    # Found before any cell of the notebook's runs: a report that asked IPython's functions for it would
    # run whatever the notebook put in their place, which could hide a hook while the report looks.
    shell = get_ipython()
    # Where installed code lives: Python's and the environment's. A frame read from elsewhere (a cell) is
    # the way from an answer's own exception, or a generator, up to the test that called it.
    installed = tuple({path + os.sep for p in (sys.prefix, sys.base_prefix) for path in (p, os.path.realpath(p))})
    installed += ("<frozen ",)
    frames = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")

    def refuse(event, args, me=None, asked=None, cells=None, shell=None, getframe=None, installed=(), frames=(),
               refused_frame="", refused_process="", starters=(), refused_c_api="", c_api=()):
        # An audit hook sees each statement's syntax tree before it is compiled and could rewrite it
        # (drop a test's asserts); once added, none can be removed. The C API's test modules can
        # change how Python compiles (_testinternalcapi.set_config: asserts compiled away). Raising
        # refuses the addition, the change or the import. It looks up no name, which the notebook
        # could rebind: the KeyError says why.
        changed = event in ("object.__setattr__", "object.__delattr__") and args[0] is me
        if event == "sys.addaudithook" or changed:
            {}["while a notebook is graded, no audit hook may be added, nor the grader's changed"]
        if event == "import" and args[0] in ("_testinternalcapi", "_testcapi"):
            {}["while a notebook is graded, Python's test modules cannot be imported"]
        if event == "object.__getattr__" and args[1] in frames \
                and not getframe(1).f_code.co_filename.startswith(installed):
            {}[refused_frame]
        if event == "ctypes.dlsym" and args[1] in starters:  # whoever asks: a library's function can be handed it
            {}[refused_process]
        # No watch sees a call through ctypes: the C API's frame functions or memory read at an address would
        # show an answer the test that called it. No library a lesson imports asks for either.
        if event == "ctypes.dlsym" and args[1].startswith(c_api) or event == "ctypes.cdata":
            {}[refused_c_api]
        if event == asked:  # out of the notebook's reach: a record of IPython's could be forged
            # The cells, hidden tests and all, once: to lab_utils.grading, imported before the notebook.
            args[0].extend((cells.pop() if cells else None, shell))

    refuse.__defaults__ = (refuse, asked, [cells], shell, sys._getframe, installed, frames, refused_frame,
                           refused_process, starters, refused_c_api, c_api)
    sys.addaudithook(refuse)


def _kernel_state(mime: str, asked: str, nonce: str, preload: list[str], machinery: tuple[str, ...],
                  imported: dict[str, list], harmless_callbacks: tuple[tuple[str, str], ...],
                  helpers: tuple[str, ...] = ()) -> None:
    """Publish what grading depends on, through the shell the grader's audit hook hands over when it
    raises the event `asked`. Runs inside the kernel, shipped as source: self-contained."""
    # First, before anything of the notebook's could run: raised to -O (by a C-level call), Python
    # compiles every later cell without its asserts.
    try:
        exec(compile("assert False", "<are asserts compiled>", "exec"), {})
        compiling = ["assert statements are compiled away (the interpreter's optimization level was raised)"]
    except AssertionError:
        compiling = []
    import ast
    import builtins
    import hashlib
    import importlib
    import inspect
    import os
    import sys
    import threading
    import types

    for name in preload:
        importlib.import_module(name)
    handed: list = []
    sys.audit(asked, handed)
    shell = handed[1]

    def describe(obj):
        obj = getattr(obj, "__func__", obj)
        name = getattr(obj, "__qualname__", type(obj).__qualname__)
        return f"{getattr(obj, '__module__', None) or type(obj).__module__}.{name}#{id(obj)}"

    cells = set(shell.compile._filename_map)  # the files IPython compiled the notebook's cells as

    def digest(func):
        # A decorator's wrapper and what it wraps (which may be a builtin, without code), each once: most
        # functions wrap nothing, and a report digests every function of lab_utils and of the machinery.
        codes = {id(code): code for code in (func.__code__, getattr(inspect.unwrap(func), "__code__", func.__code__))}
        if any(code.co_filename in cells for code in codes.values()):
            return "defined in the notebook"
        summary = hashlib.sha256()
        for code in codes.values():
            add(summary, code)
        return summary.hexdigest()[:16]

    def add(summary, code):  # not marshal: its bytes depend on reference counts
        summary.update(code.co_code)  # the bytecode as bytes: its repr would cost most of a report
        # The constants in one repr, a nested function's code by its place: it is digested after.
        consts = ["<code>" if isinstance(const, types.CodeType) else const for const in code.co_consts]
        summary.update(repr((len(code.co_code), code.co_names, code.co_varnames, code.co_filename,
                             code.co_firstlineno, consts)).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                add(summary, const)

    modules, objects = {}, {}
    watched = [n for n in sys.modules if n.split(".")[0] == "lab_utils" and not n.startswith("lab_utils.course")]
    for name in sorted(watched) + list(machinery):
        module = sys.modules.get(name)
        if module is None:
            continue
        modules[name] = (f"{type(module).__module__}.{type(module).__qualname__} "
                         f"{getattr(module, '__file__', None)} #{id(module)}")
        for key, value in list(vars(module).items()):
            if name in watched and key.isupper() and not isinstance(value, (types.ModuleType, type)):
                # A constant of the course's (lesson 08's DEFENSES): the same object, holding the same
                # objects, whether a cell rebinds it or puts something else in it.
                held = value.values() if isinstance(value, (dict, types.MappingProxyType)) else value
                held = held if isinstance(held, (list, tuple, set, frozenset, type({}.values()))) else ()
                objects[f"{name}.{key}"] = f"{describe(value)} {hash(tuple(map(id, held)))}"
            elif isinstance(value, types.FunctionType):
                objects[f"{name}.{key}"] = digest(value)
            elif isinstance(value, type):
                objects[f"{name}.{key}"] = describe(value)
                if value.__module__ == name:
                    for attr, member in list(vars(value).items()):
                        member = getattr(member, "__func__", member)
                        if isinstance(member, types.FunctionType):
                            objects[f"{name}.{key}.{attr}"] = digest(member)
    for key, value in vars(builtins).items():
        if callable(value):
            objects[f"builtins.{key}"] = describe(value)
    for key, value in vars(sys).items():  # its functions (setprofile...), not what a cell's error leaves (last_type)
        if isinstance(value, types.BuiltinFunctionType):
            objects[f"sys.{key}"] = describe(value)
    # The grader's own settings (which results pretend, which files are installed): data, not code.
    grading = sys.modules.get("lab_utils.grading")
    for key, value in (vars(grading) if grading else {}).items():
        if not (key.startswith("__") or isinstance(value, (types.FunctionType, type, types.ModuleType))):
            content = hashlib.sha256(repr(value).encode()).hexdigest()[:16]
            objects[f"lab_utils.grading.{key}"] = f"{describe(value)} {content}"

    manager, kernel = shell.input_transformer_manager, getattr(shell, "kernel", None)
    harmless = []
    for module, dotted in harmless_callbacks:
        found = home = sys.modules.get(module)
        for part in dotted.split("."):
            found = getattr(found, part, None)
        if getattr(getattr(found, "__code__", None), "co_filename", None) == getattr(home, "__file__", 0):
            harmless.append(found)
    hooks = {
        "input transformer": [describe(manager)] + [describe(t) for t in (
            manager.cleanup_transforms + manager.line_transforms + manager.token_transformers
            + shell.input_transformers_post)],
        "AST transformer": [describe(t) for t in shell.ast_transformers],
        # A callback can change a cell before it runs, or its outcome after (clear an error away).
        "event callback": [f"{event}: {describe(f)}" for event, fs in shell.events.callbacks.items() for f in fs
                           if getattr(f, "__func__", f) not in harmless],
        "event manager": [describe(shell.events), describe(type(shell.events))],
        "compiler": [describe(shell.compile), describe(type(shell.compile))],
        "history": [describe(shell.history_manager)],
        "shell method replaced": [k for k, v in vars(shell).items()
                                  if callable(v) and callable(getattr(type(shell), k, None))],
        "kernel handler": [f"{k}: {describe(v)}" for k, v in getattr(kernel, "shell_handlers", {}).items()],
    }
    # What shows a cell's error and carries it to nbgrader: an error dropped on its way is never seen.
    carriers = {"kernel": kernel, "traceback formatter": shell.InteractiveTB, "displayhook": shell.displayhook,
                "display trap": shell.display_trap, "display trap's hook": shell.display_trap.hook,
                "display publisher": shell.display_pub, "message session": getattr(kernel, "session", None),
                "displayhook's session": getattr(shell.displayhook, "session", None),
                "display publisher's session": getattr(shell.display_pub, "session", None),
                "iopub socket": getattr(kernel, "iopub_socket", None)}
    for what, carrier in carriers.items():
        hooks[what] = [describe(carrier), describe(type(carrier))] + [
            f"{k} replaced" for k, v in getattr(carrier, "__dict__", {}).items()
            if callable(v) and callable(getattr(type(carrier), k, None))]
    tracing = [f"{what} {describe(f)}" for what, f in (
        ("sys.settrace", sys.gettrace()), ("sys.setprofile", sys.getprofile()),
        ("threading.settrace", threading.gettrace()), ("threading.setprofile", threading.getprofile())) if f]
    frame = sys._getframe()
    while frame is not None:
        if frame.f_trace is not None:
            tracing.append(f"a trace function on {frame.f_code.co_name} ({describe(frame.f_trace)})")
        frame = frame.f_back
    # The report must run from its cell's own code, on Python's and the kernel's code alone: run from
    # anywhere else (an error's way out of the kernel), it would vouch for a test that failed.
    installed = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix})
    frame, ran_from = sys._getframe(2), []  # 2: past this function and the exec that runs it
    runner = frame.f_back  # IPython's run_code, running this very code as the cell's last statement
    run_code = getattr(getattr(sys.modules.get("IPython.core.interactiveshell"), "InteractiveShell", None),
                       "run_code", None)
    if not (frame.f_code.co_filename in cells and frame.f_code.co_name == "<module>" and runner is not None
            and runner.f_code is getattr(run_code, "__code__", None)
            and runner.f_locals.get("code_obj") is frame.f_code):
        ran_from.append(f"{frame.f_code.co_name} ({frame.f_code.co_filename}), not its cell as IPython runs it")
    if sys.exc_info()[0] is not None:
        ran_from.append(f"the handling of an error ({sys.exc_info()[0].__name__})")
    if threading.current_thread() is not threading.main_thread():
        ran_from.append(f"a thread of its own ({threading.current_thread().name})")
    while (frame := frame.f_back) is not None:
        file = frame.f_code.co_filename
        if file in cells or not (file.startswith("<frozen ")
                                 or os.path.realpath(file).startswith(installed) and os.path.isfile(file)):
            ran_from.append(f"{frame.f_code.co_name} ({'a notebook cell' if file in cells else file})")
    rebound = []  # names the test uses that the released cells imported, bound to something else now
    for name, (module, attr) in imported.items():
        target = sys.modules.get(module)
        absent = object()
        value = shell.user_ns.get(name, absent)
        # The shell's own stand-ins for builtins (IPython's `open`, `exit`) are kept in user_ns_hidden.
        if value is not absent and value is not (getattr(target, attr, None) if attr else target) \
                and not (module == "builtins" and value is shell.user_ns_hidden.get(name, absent)):
            rebound.append(f"{name} is no longer {module}{'.' + attr if attr else ''}")
    # The test cells' own functions that this cell calls (lesson 01's rejects), as the cell that compiled
    # them wrote them (its syntax tree): Verify compares them with the test cell that defines them.
    defined = {}
    for name in helpers:
        code = getattr(shell.user_ns.get(name), "__code__", None)
        number = shell.compile._filename_map.get(getattr(code, "co_filename", None))
        history = shell.history_manager.input_hist_parsed
        text = history[number] if isinstance(number, int) and 0 < number < len(history) else ""
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):  # a record of IPython's made to hold something else
            tree = ast.Module(body=[], type_ignores=[])
        written = [ast.dump(node) for node in ast.walk(tree)
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and min([node.lineno] + [d.lineno for d in node.decorator_list]) == code.co_firstlineno]
        defined[name] = hashlib.sha256("".join(written[:1]).encode()).hexdigest()
    ran = shell.history_manager.input_hist_parsed[-1] if nonce else ""
    shell.display_pub.publish({mime: {
        "nonce": nonce, "ran": hashlib.sha256(ran.encode()).hexdigest(), "tracing": tracing,
        "custom_exceptions": [getattr(e, "__name__", repr(e)) for e in shell.custom_exceptions], "rebound": rebound,
        "hooks": hooks, "modules": modules, "objects": objects, "ran_from": ran_from, "compiling": compiling,
        "helpers": defined}})


@functools.cache  # read once: every sealed test cell carries _kernel_state's
def _source(func) -> str:
    return inspect.getsource(func)


def _shipped(func, *args) -> str:
    """One line of code that runs the self-contained `func(*args)` in the kernel, in a namespace of its own."""
    return f"exec({_source(func) + func.__name__ + repr(args)!r}, {{}})"


def _guard(nb) -> str:
    """The grader's first line: its audit hook, holding the notebook's code cells as IPython will run them,
    but the tests: this line is the kernel's first input, which any cell can read back (`In[1]`), and the
    test cells hold the hidden tests. (lab_utils.grading asks whether code is a cell's own only of the
    code of answers: of code shaped like a reference's.)"""
    cells = tuple(TransformerManager().transform_cell(c.source) for c in nb.cells
                  if c.cell_type == "code" and not is_test(c))
    return _shipped(_refuse_audit_hooks, SEALED_CELLS, cells, REFUSED_FRAME, REFUSED_PROCESS, PROCESS_STARTERS,
                    REFUSED_C_API, C_API)


def _report_call(nonce: str, preload: list[str], imported: dict[str, tuple], helpers: tuple[str, ...] = ()) -> str:
    return _shipped(_kernel_state, MIME, SEALED_CELLS, nonce, preload, MACHINERY + JUDGES + TOOLS, imported,
                    HARMLESS_CALLBACKS, helpers)


def _proof(seal: dict) -> str:
    return ("\n\n# Added by the grader: this cell's proof that it ran as released.\n"
            f"{_report_call(seal['nonce'], [], seal['imported'], tuple(seal['helpers']))}\n")


CHECKERS = ("own_implementation", "assert_own_implementation")


def _defines(node: ast.stmt) -> list[str]:
    """The names a top-level statement defines: a function's, a class's, or those it assigns (`rule = Rule()`)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _imports(nb) -> dict[str, tuple[str, str | None]]:
    """name -> (module, attribute) for every import in the notebook's cells other than answers, but
    for the answers the tests check that answer cells define (an answer's own function, once its
    namesake was imported); a name the tests judge with stays, however an answer cell rebinds it.
    Also each builtin the tests name and do not bind themselves (`any`, `abs`, `list`): a notebook's
    own `any` would answer for the builtin in every test that calls it (no lesson binds one)."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or utils.is_solution(cell) or (tree := parsed_cell(cell.source)) is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update({a.asname or a.name.split(".")[0]: (a.name if a.asname else a.name.split(".")[0], None)
                              for a in node.names})
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.update({a.asname or a.name: (node.module, a.name) for a in node.names if a.name != "*"})
    answers = [tree for c in nb.cells
               if c.cell_type == "code" and utils.is_solution(c) and (tree := parsed_cell(c.source))]
    tests = [tree for c in nb.cells if is_test(c) and (tree := parsed_cell(c.source))]
    # The answers the tests check (`own_implementation(top_k, ...)`), not names the tests judge with.
    tested = {node.args[0].id for tree in tests for node in ast.walk(tree)
              if isinstance(node, ast.Call) and getattr(node.func, "id", None) in CHECKERS
              and node.args and isinstance(node.args[0], ast.Name)}
    defined = {name for tree in answers for node in tree.body for name in _defines(node)} & tested
    names = [node for tree in tests for node in ast.walk(tree) if isinstance(node, ast.Name)]
    kept = found.keys() | {node.id for node in names if isinstance(node.ctx, ast.Store)}
    builtin = {node.id: ("builtins", node.id) for node in names
               if node.id in dir(builtins) and not node.id.startswith("__") and node.id not in kept}
    return {name: where for name, where in found.items() if name not in defined} | builtin


def _functions(source: str) -> dict[str, str]:
    """name -> the hash of its syntax tree, for each function a cell defines at its top level (lesson
    01's test cell defines rejects, which its hidden tests call too): what the reports compare it with."""
    tree = parsed_cell(source)
    return {node.name: hashlib.sha256(ast.dump(node).encode()).hexdigest() for node in (tree.body if tree else [])
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _names(source: str) -> set[str]:
    tree = parsed_cell(source)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} if tree else set()


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


class CompareWithRelease(NbGraderPreprocessor):
    """Before nbgrader's checks: note edited, deleted and renamed graded cells and undo the change
    to their grading flags, so that nbgrader runs and scores the released cells."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            notebook = gb.find_notebook(info["notebook"], info["assignment"])
            # A test cell as released, or as the instructor wrote it (hidden tests included).
            released = {c.name: ({self._as_released(c.source), c.source}, c.locked, c.cell_type)
                        for c in notebook.source_cells}
            graded = {c.name: c.max_score for c in notebook.grade_cells}
            answers = {c.name for c in notebook.solution_cells}
        folder = Path(resources["metadata"]["path"])  # autograded/<student>/<lesson>/ in the course folder
        earlier = released_test_cells(folder.parents[2], info["assignment"])  # handed in before a fix
        notes, renamed = [], set()
        present = {_meta(c).get("grade_id") for c in nb.cells}
        for cell in nb.cells:
            grade_id = _meta(cell).get("grade_id")
            if grade_id is None:
                continue
            if grade_id not in released:
                was = [n for n in graded if n not in present and cell.source in released[n][0]]
                renamed.update(was[:1])
                notes.append(f"test cell {was[0]} renamed to {grade_id}" if was
                             else f"a graded cell {grade_id} that is not in the release")
                del cell.metadata["nbgrader"]  # a plain cell: nbgrader puts the released one back
                continue
            sources, locked, cell_type = released[grade_id]
            flags = {"grade": grade_id in graded, "solution": grade_id in answers}
            if flags["grade"]:
                flags["points"] = graded[grade_id]
            edited = [f"{flag} set to {_meta(cell).get(flag)!r}, released {value!r}" for flag, value in flags.items()
                      if _meta(cell).get(flag, False) != value]
            if edited:
                notes.append(f"grading flags of {grade_id} edited: {', '.join(edited)}; graded as released")
            cell.metadata.nbgrader.update(flags)
            if locked and cell.source not in sources | earlier.get(grade_id, frozenset()):
                notes.append(f"test cell {grade_id} edited (the released version was run)")
        for grade_id, (_, _, cell_type) in released.items():
            if grade_id in graded and grade_id not in answers | present | renamed and cell_type == "code":
                notes.append(f"test cell {grade_id} deleted (the released version was put back and run)")
        # The kernel starts in the submission's folder: a module there runs in place of the course's
        # (an ipykernel_launcher.py replaces the kernel itself, before any check).
        brought = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.suffix in IMPORTABLE)
        if brought:
            notes.append(f"Python files handed in with the notebook: {', '.join(brought)}")
        nb.metadata[KEY] = {"submission": notes, "brought": brought}
        return nb, resources

    def _as_released(self, source: str) -> str:
        """The gradebook keeps a test cell with its hidden tests; students get it without them."""
        cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade": True}})
        return ClearHiddenTests(parent=self).preprocess_cell(cell, {}, 0)[0].source


def _preload(nb) -> list[str]:
    """The lab_utils modules the notebook names (imports and tripwire targets), course excepted."""
    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    named = {m for source in sources for m in re.findall(r"\blab_utils(?:\.\w+)*", source)}
    # `from lab_utils.attacks import defenses` names a module too.
    imports = r"\bfrom\s+(lab_utils(?:\.\w+)*)\s+import\s+(\([\w\s,]+\)|[\w \t,]+)"
    named |= {f"{package}.{name.split()[0]}" for source in sources for package, names in re.findall(imports, source)
              for name in names.strip("()").split(",") if name.strip()}
    modules = {"lab_utils.grading"}
    for dotted in named:
        parts = dotted.split(".")
        for cut in range(len(parts), 1, -1):
            path = PACKAGE_DIR.joinpath(*parts[1:cut])
            if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
                modules.add(".".join(parts[:cut]))
                break
    return sorted(m for m in modules if not m.startswith("lab_utils.course"))


class Seal(NbGraderPreprocessor):
    """Before execution: a first cell that reports the kernel's state, a proof line per test cell."""

    def preprocess(self, nb, resources):
        sealed, imported = {}, _imports(nb)
        helpers = set().union(*(_functions(cell.source) for cell in nb.cells if is_test(cell)))
        for cell in nb.cells:
            if is_test(cell):
                uses = {name: imported[name] for name in sorted(_names(cell.source) & set(imported))}
                defines = _functions(cell.source)
                seal = {"nonce": secrets.token_hex(16), "source": cell.source, "imported": uses, "defines": defines,
                        "helpers": sorted(_names(cell.source) & helpers - defines.keys())}
                sealed[_meta(cell)["grade_id"]] = seal
                cell.source += _proof(seal)
        nb.cells.insert(0, nbformat.v4.new_code_cell(f"{_guard(nb)}\n{_report_call('', _preload(nb), {})}"))
        nb.cells.append(nbformat.v4.new_code_cell(_report_call("", [], {})))
        resources[KEY] = {"sealed": sealed, "died_at": None, "how": None}
        return nb, resources


class SurviveKernelDeath:
    """Mixed into nbgrader's Execute by `install`: a kernel that dies (`os._exit`, a crash) or stops
    answering (its output machinery broken, e.g. by a patched `builtins.isinstance`) ends the run
    instead of failing it, so the cells that did not run can be judged and scored zero."""

    _index = 0  # the cell running when the kernel died

    def preprocess_cell(self, cell, resources, index):
        self._index = index
        if index:
            return super().preprocess_cell(cell, resources, index)
        # Seal's cell, the grader's own: it loads the notebook's libraries, which on a busy machine can outlast a
        # short c.Execute.timeout, and its time is not the notebook's (c.Sandbox.wall_seconds still bounds it).
        kept, self.timeout = self.timeout, max(self.timeout, GRADERS_CELL_SECONDS)
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            self.timeout = kept

    def preprocess(self, nb, resources=None, km=None):
        try:
            return super().preprocess(nb, resources, km)
        except (DeadKernelError, CellTimeoutError) as ended:
            # A cell past the per-cell timeout is interrupted and run on; this one's output never came.
            resources[KEY]["died_at"] = self._index
            resources[KEY]["how"] = "exited" if isinstance(ended, DeadKernelError) else "stopped answering"
            return nb, resources


def _errors(cell) -> list:
    return [out for out in cell.get("outputs", []) if out["output_type"] == "error"]


def _reports(cell) -> list[dict]:
    return [out["data"][MIME] for out in cell.get("outputs", []) if MIME in out.get("data", {})]


def _loaded_elsewhere(state: dict) -> list[str]:
    """lab_utils modules that are not the course's own files (a package shipped with the submission)."""
    return sorted(f"{name} was loaded from {desc.split(' ')[1]}" for name, desc in state["modules"].items()
                  if name.startswith("lab_utils") and not _inside_package(desc.split(" ")[1]))


def _inside_package(file: str) -> bool:
    return file != "None" and Path(file).resolve().is_relative_to(PACKAGE_DIR)


def _changes(kind: str, before: dict, after: dict) -> list[str]:
    """The names whose value differs from `before`, or that are gone from `after`."""
    names = sorted(k for k in before if after.get(k) != before[k])
    if not names:
        return []
    listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return [f"{'sys.modules entries replaced' if kind == 'modules' else 'changed'}: {listed}"]


def _machinery_changed(report: dict, first: dict) -> list[str]:
    """How the way the kernel runs a cell differs from the first report: tracing, a custom exception
    handler, hooks added or removed."""
    reasons = [f"tracing was on ({t})" for t in report["tracing"]] + report["compiling"]
    if report["custom_exceptions"]:
        reasons.append(f"a custom exception handler was set for {', '.join(report['custom_exceptions'])}")
    for kind, items in report["hooks"].items():
        added = [i for i in items if i not in first["hooks"].get(kind, [])]
        gone = [i for i in first["hooks"].get(kind, []) if i not in items]
        if added or gone:
            reasons.append(f"{kind}: {', '.join(added + gone)}")
    return reasons


def _judge(cell, seal: dict, first: dict, seen: dict, helpers: dict[str, set[str]]) -> list[str]:
    """Why a test cell that shows no error did not run as released ([] if it did)."""
    reports = _reports(cell)
    if not reports:
        if cell.get("execution_count") is None:
            return ["it did not run"]
        return ["it never reached its last line (its code was replaced or cut short)"]
    report = reports[-1]
    reasons = []
    # After the report, only what a callback after the cell shows (matplotlib's figures) may follow it.
    after = cell.outputs[[MIME in o.get("data", {}) for o in cell.outputs].index(True) + 1:]
    if len(reports) > 1 or report["nonce"] != seal["nonce"] \
            or any(o["output_type"] not in ("display_data", "stream") for o in after):
        reasons.append("its proof was forged")
    # IPython's history keeps the transformed cell without its trailing newlines.
    expected = TransformerManager().transform_cell(seal["source"] + _proof(seal)).rstrip("\n")
    if report["ran"] != hashlib.sha256(expected.encode()).hexdigest():
        reasons.append("the code that ran is not the released cell")
    reasons += [f"its proof ran from {where}" for where in report["ran_from"]][:3]
    reasons += _machinery_changed(report, first) + report["rebound"] + _loaded_elsewhere(report)
    reasons += [f"{name} was replaced by code defined in the notebook"
                for name, value in report["objects"].items() if value == "defined in the notebook"][:3]
    reasons += [f"{name}, a function of the test cells', was defined again by the notebook"
                for name, where in report["helpers"].items() if where not in helpers.get(name, {where})][:3]
    for kind in ("modules", "objects"):
        # A module imported after the first report is compared with the first proof that saw it.
        seen[kind] = {**report[kind], **seen[kind], **first[kind]}
        reasons += _changes(kind, seen[kind], report[kind])
    return reasons


def _shown_not_scored(output):
    """A test cell's output as nbgrader should score it: only an error fails a test. nbgrader would
    take a value the cell displayed (`get_ipython().displayhook(1.0)` in an answer) for partial credit,
    and a warning on stderr for a failure: both are kept, as what they show."""
    if output["output_type"] == "execute_result":
        return nbformat.v4.new_output("display_data", data=output["data"], metadata=output.get("metadata", {}))
    if output["output_type"] == "stream" and output["name"] == "stderr":
        return nbformat.v4.new_output("stream", name="stdout", text=output["text"])
    return output


class Verify(NbGraderPreprocessor):
    """After execution: drop the first and last cells, judge every test cell's proof, give a test
    cell that did not run as released an error output, and write the reasons beside the notebook."""

    def preprocess(self, nb, resources):
        state, submission = resources[KEY], nb.metadata.pop(KEY, {})
        died_at = state["died_at"]
        opening = nb.cells.pop(0)
        first = (_reports(opening) or [None])[0]
        last = (_reports(nb.cells.pop()) or [None])[0]
        if first:
            notes = [f"before any test ran: {r}" for r in _loaded_elsewhere(first)]
        else:  # the kernel could not load what grading checks (a broken environment), or died first
            failed = "".join(f" ({error.ename}: {error.evalue})" for error in _errors(opening))
            notes = [f"the grader's first cell did not report{failed}: no test can be trusted"]
        # Reasons that no proof can outweigh: nothing to compare with, or code that ran first.
        untrusted = ("the grader's first cell did not report" if first is None else
                     f"Python files handed in beside the notebook could run in place of the course's "
                     f"({', '.join(submission['brought'])}): no test cell can be trusted; review it by hand"
                     if submission.get("brought") else None)
        seen = {"modules": {}, "objects": {}}
        # The test cells' own functions: name -> how the test cells that define them write them.
        helpers = {}
        for seal in state["sealed"].values():
            for name, written in seal["defines"].items():
                helpers.setdefault(name, set()).add(written)
        for index, cell in enumerate(nb.cells, start=1):
            grade_id = _meta(cell).get("grade_id")
            seal = state["sealed"].get(grade_id)
            if not (seal and is_test(cell)):
                continue
            if died_at is not None and index >= died_at:
                # Not named again here: the finding names its cell, and grades.csv counts the cells of one reason.
                reasons = [f"the kernel {state['how']} before the cell finished"]
            elif _errors(cell):
                reasons = []  # the test failed: no points in any case
            else:
                reasons = [untrusted] if untrusted else _judge(cell, seal, first, seen, helpers)
            cell.source = seal["source"]
            cell.outputs = [_shown_not_scored(o) for o in cell.outputs if MIME not in o.get("data", {})]
            if reasons:
                why = f"{grade_id}{NOT_AS_RELEASED}{'; '.join(reasons)}"
                cell.outputs.append(nbformat.v4.new_output("error", ename="IntegrityError", evalue=why,
                                                           traceback=[f"IntegrityError: {why}"]))
                cell.metadata[GRADERS_ERROR] = why
                notes.append(why)
        if not notes and first and died_at is None:
            # Nothing named yet, so no cheat changed a test's outcome; one that failed may still be there.
            left = _machinery_changed(last, first) if last else ["the grader's last cell did not report"]
            notes += [f"after the last cell, though no test's outcome shows it: {'; '.join(left)}"] if left else []
        record = {"submission": submission.get("submission", []), "execution": notes}
        path = Path(resources["metadata"]["path"]) / f"{resources['nbgrader']['notebook']}{RECORD}"
        path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        return nb, resources


def install(c: Config) -> None:
    """Add the three steps to nbgrader's autograde in `c`. Call it last: it wraps whichever Execute
    step the config has (the sandbox's), and a later step that looks for nbgrader's own Execute
    would no longer find it."""
    sanitize = list(c.Autograde.get("sanitize_preprocessors", Autograde.sanitize_preprocessors.default()))
    steps = list(c.Autograde.get("autograde_preprocessors", Autograde.autograde_preprocessors.default()))
    if CompareWithRelease in sanitize:
        return
    # nbgrader copies every other file of a folder along: the record must not reach the feedback
    # students get, nor a record handed in the autograded folder.
    ignore = list(c.CourseDirectory.get("ignore", CourseDirectory.ignore.default()))
    c.CourseDirectory.ignore = [*ignore, f"*{RECORD}"]
    at = next(i for i, step in enumerate(steps) if isinstance(step, type) and issubclass(step, Execute))
    execute = type(f"Surviving{steps[at].__name__}", (SurviveKernelDeath, steps[at]), {"__module__": __name__})
    c.Autograde.sanitize_preprocessors = [CompareWithRelease, *sanitize]
    c.Autograde.autograde_preprocessors = [*steps[:at], Seal, execute, Verify, *steps[at + 1:]]


def in_short(found: list[str]) -> list[str]:
    """`found` (findings) with one line per kind: the test cells that did not run as released for one reason are
    counted, not listed."""
    cells_by_reason: dict[str, list[str]] = {}
    short = []
    for finding in found:
        cell, said, why = finding.partition(NOT_AS_RELEASED)
        if said:
            cells_by_reason.setdefault(why, []).append(cell)
        else:
            short.append(finding)
    return [f"{cells[0]}{f' and {len(cells) - 1} more test cells' if len(cells) > 1 else ''}{NOT_AS_RELEASED}{why}"
            for why, cells in cells_by_reason.items()] + short


def findings(autograded_notebook: Path) -> list[str]:
    """Why a submission did not run as released, from the record beside its autograded notebook."""
    record = Path(autograded_notebook).with_suffix(RECORD)
    if not record.exists():
        return [f"not checked for tampering: no {record.name} (autograde did not finish, or ran without "
                "lab_utils.course.integrity)"]
    data = json.loads(record.read_text(encoding="utf-8"))
    return data["submission"] + data["execution"]


REFUSED = re.compile(f"({'|'.join(map(re.escape, (REFUSED_FRAME, REFUSED_PROCESS, REFUSED_C_API)))})")
DECIDED = re.compile(rf"(\w+) (?:returned|raised \w+ with) .+?, {re.escape(DECIDES)}(?: through [\w, ]+)?")
USED = re.compile(rf"({'|'.join(map(re.escape, (TAKEN, REACHED, COPIED, SWITCHED, PEEKED)))}) ([\w.]+)")


def _first_caught(graded: Path, pattern: re.Pattern, prefix: str) -> list[str]:
    """For each thing `pattern` finds in the errors of a graded notebook's cells (told apart by its
    groups), the first test cell that caught it and what it says."""
    found = {}
    for cell in nbformat.read(graded, as_version=4).cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and (caught := pattern.search(output.get("evalue", ""))):
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "a cell")
                found.setdefault(caught.groups(), f"{grade_id}: {prefix}{caught[0].strip()}")
    return list(found.values())


def reference_used(graded: Path) -> list[str]:
    """The references a test caught the answer being (imported, or built from its code), calling, or
    running a copy of: that costs the test's points, and a person should know why (a first test cell
    per reference named)."""
    return _first_caught(graded, USED, "the answer ")


def comparison_decided(graded: Path) -> list[str]:
    """The answers a test caught returning (or raising with) a value of a class the notebook made to
    decide how tests compare it, an object equal to everything: a first test cell per answer."""
    return _first_caught(graded, DECIDED, "")


def refused(graded: Path) -> list[str]:
    """The first cell whose code the grader's hook refused a traceback's or a generator's frame (the
    way from an answer up to the test that called it), and the first refused a process started through
    ctypes (where the reference would run unwatched)."""
    return _first_caught(graded, REFUSED, "refused: ")


def flags(autograded_notebook: Path) -> list[str]:
    """What a person should know about a graded submission: tampering, use of the reference, results
    made to pass any comparison, what the grader's hook refused the notebook's code, and test cells that
    rebind a name the answers read (shadowing)."""
    return (findings(autograded_notebook) + reference_used(autograded_notebook)
            + comparison_decided(autograded_notebook) + refused(autograded_notebook)
            + shadowing.rebound_by_tests(autograded_notebook))
