"""Code that reaches into the kernel or the interpreter, read in the submission as it was handed in.

The checks that run in the kernel (lab_utils.grading's watch, integrity's reports) share it with the
student's code, so code that studies them can defeat them: hide a hook from a report, switch a check
off, rewrite what a test compares. What such code must do to get there shows in its text, which no
code in the kernel can change: it names the kernel's or the interpreter's machinery (get_ipython,
sys._getframe, a frame's f_back, builtins), runs text as code (exec, eval), reaches a library's
private parts (`rules._TokenPostings`, or by a computed name: `getattr(sys, name)`), patches a
library (an assignment to a module's attribute or item), decides how its objects compare (__eq__),
redefines a helper of the lesson's, or names a reference before the tests that switch it off (a table
filled from it, which the answer then looks up). Every code cell the student wrote or changed is read
outside the kernel, and what it names is listed for a person to review: an honest answer to these
lessons needs none of it.
"""

from __future__ import annotations

import ast
import base64
import codecs
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader import utils

from lab_utils.course.cells import is_test, parsed_cell

# Names that reach the interpreter or the kernel, or run text as code.
# In, _ih: the kernel's input history. _render_traceback_: an error's traceback as the student writes it, which
# feedback could take for a test cell's or the grader's own.
NAMES = {"exec", "eval", "compile", "__import__", "globals", "vars", "locals", "breakpoint", "get_ipython",
         "__builtins__", "setattr", "delattr", "In", "_ih", "_render_traceback_"}
# Modules an answer to these lessons never needs: the interpreter's and the kernel's insides, the grader.
MODULES = {"builtins", "ast", "inspect", "dis", "gc", "ctypes", "importlib", "IPython", "ipykernel", "traceback",
           "threading", "_thread", "multiprocessing", "subprocess", "signal", "atexit", "weakref", "marshal",
           "code", "codeop", "unittest", "_xxsubinterpreters", "_interpreters", "linecache",
           # Running a file as code (a library's source, copied and changed), serving calls from a thread.
           "runpy", "py_compile", "compileall", "imp", "pkgutil", "zipimport", "socket", "socketserver", "asyncio",
           "concurrent", "pty", "site",
           # Code and data out of sight: the notebook's own namespace, objects unpickled, the kernel's history.
           "__main__", "pickle", "_pickle", "copyreg", "shelve", "sqlite3", "_weakref",
           # Text decoded into names a reader would flag (rot13, base64), and runners of code text.
           "codecs", "base64", "binascii", "cProfile", "profile", "pdb", "bdb", "trace", "timeit", "doctest",
           # re's compiler under its old names: a pattern compiled from a parse tree keeps no text to compare.
           "sre_compile", "sre_parse", "sre_constants"}
GRADER = ("lab_utils.grading", "lab_utils.course")
# Attributes of code, frames, tracebacks, classes and the kernel's shell (`_ip`: the shell, as IPython's `quit`
# and `exit` hold it); the kernel's threads and their loops, which run what they are handed out of the test's thread.
ATTRIBUTES = {"__globals__", "__code__", "__closure__", "__builtins__", "__subclasses__", "__bases__", "__base__",
              "__mro__", "__func__", "__self__", "__traceback__", "__defaults__", "__kwdefaults__",
              "__getattribute__", "__loader__", "__spec__", "f_back", "f_locals", "f_globals", "f_lineno",
              "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame", "cr_frame", "co_code", "co_consts",
              "ast_transformers", "input_transformers_cleanup", "input_transformers_post",
              "input_transformer_manager", "user_ns", "user_ns_hidden", "user_global_ns", "displayhook", "excepthook",
              "settrace", "setprofile", "_getframe", "meta_path", "path_hooks", "addaudithook", "breakpointhook",
              "run_cell", "run_code", "ast_parse", "set_custom_exc", "InteractiveTB", "display_pub", "shell_handlers",
              "history_manager", "_GeneratorContextManager", "fork", "forkpty", "_exit", "execv", "execve",
              "__setattr__", "__delattr__", "__file__", "In", "_ih",
              "_render_traceback_", "_ip", "pub_thread", "io_loop", "control_thread", "shell_channel_thread",
              "__annotations__"}  # a class's annotations: what typing.get_type_hints evaluates as code
# Functions of a library an answer never needs, whose names are common words elsewhere (`prompt.system`).
CALLS = {"os.system", "os.popen", "os.spawnv", "os.spawnl", "os.posix_spawn", "os.posix_spawnp", "sys.audit",
         "sys.path", "types.FunctionType", "types.CodeType", "types.LambdaType",
         "typing.get_type_hints"}  # evaluates annotations given as text: eval by another name
# A reference a test switches off, as own_implementation is given it: "lab_utils.temporal.writer.classify_update".
REFERENCE = re.compile(r"[\"'](lab_utils(?:\.\w+)+)[\"']")
# Functions that read an attribute by the name they are given, as getattr does.
GETTERS = {"attrgetter", "methodcaller"}
# How an object of the student's own class compares: a result equal to anything passes any test.
COMPARING = {"__eq__", "__ne__", "__hash__"}
# What a class body of an honest answer may set besides its fields and methods: others (`__eq__ = lambda
# ...`, `__module__ = "json"`) decide how its objects compare or pass the class off as a library's.
CLASS_SETTINGS = {"__slots__", "__doc__", "__match_args__", "__annotations__"}
# Where an assignment into a library is a setting, not a patch (`plt.rcParams[...] = ...`).
SETTINGS = {"rcParams", "options"}
# The kernel's history of inputs and outputs: `_i12` holds the text of cell 12, the running test's included.
HISTORY = re.compile(r"_i{1,3}\d*|_[iod]h|Out")
# A Python file named in a string: a library's source read from disk (`Path(...) / "metrics.py"`, `rglob("*.py")`).
PYTHON_FILE = re.compile(r"[\w./\\*-]*[\w*]\.py")
# A string this long that decodes from hex or base64 to text: code or names hidden from a reader.
ENCODED_LENGTH = 24
# The magics students use out of habit (`%matplotlib inline`), which IPython turns into get_ipython() calls.
HABITS = {"matplotlib", "load_ext", "autoreload", "xmode", "time", "timeit", "pip", "env"}


def _defined(tree: ast.Module) -> set[str]:
    """The functions and classes a cell defines at its top level."""
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _magic(node: ast.Call) -> bool:
    """`get_ipython().run_line_magic("matplotlib", ...)`: a habit's magic as IPython writes it."""
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr in ("run_line_magic", "run_cell_magic")
            and isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "get_ipython" and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and node.args[0].value in HABITS)


def _reads_fields(call: ast.Call, imported: dict[str, str]) -> bool:
    """`vars(skill.meta)`: the fields of an object the code made or was handed, as its `__dict__` holds them,
    which is ordinary code. What counts as reading a namespace instead: `vars()` (the caller's), vars of
    what an import gave, a module or a class or function of one (`vars(sys)`, `vars(rules.redact)`), and
    `vars` handed on uncalled (`look = vars`), which could then be called either way."""
    given = call.args[0] if len(call.args) == 1 and not call.keywords else None
    return (isinstance(call.func, ast.Name) and call.func.id == "vars" and given is not None
            and not isinstance(given, ast.Starred)
            and not (isinstance(given, (ast.Name, ast.Attribute)) and _dotted(given, imported) is not None))


def _denied(module: str) -> bool:
    """A module an answer never needs: one of MODULES, the grader, one of CALLS, or a library's private one
    (re._compiler, which compiles a pattern from a parse tree)."""
    return (module.split(".")[0] in MODULES or module.startswith(GRADER) or module in CALLS
            or any(_private(part) for part in module.split(".")[1:]))


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the module or the module's name it stands for, as the cell imports them."""
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0]: a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return imported


def reaches(tree: ast.Module, helpers: set[str], given: dict[str, str], shared: frozenset[str] = frozenset(),
            references: frozenset[str] = frozenset()) -> list[str]:
    """What a cell names that reaches into the kernel or the interpreter, in the order found; `helpers`
    are the functions the lesson's own cells define, `given` the names they import, `shared` the names
    they bind (a test's list of references or helper, which an answer's `global` could replace), `references`
    what the test cells after the cell switch off (the cell could call it before they run)."""
    imported = given | _imports(tree)
    # Names of NAMES in ordinary code: a habit's magic as IPython writes it, vars of an object's fields.
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    ordinary = {id(call.func.value.func) for call in calls if _magic(call)}
    ordinary |= {id(call.func) for call in calls if _reads_fields(call, imported)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if _denied(a.name)]
        elif isinstance(node, ast.ImportFrom):
            found += [f"from {node.module} import {a.name}" for a in node.names
                      if _denied(f"{node.module}.{a.name}") or f"{node.module}.{a.name}" == "sys.modules"
                      or a.name in ATTRIBUTES | NAMES or _private(a.name)]
            # Every name of a reference's module, the reference among them: called before its tests, unnamed.
            held = sorted(r for r in references if r.rpartition(".")[0] == node.module)
            if node.names[0].name == "*" and held:
                found.append(f"from {node.module} import * (with {held[0]}, a reference its tests switch off)")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imported \
                and _inside(imported[node.value.id], node.attr):
            found.append(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Call) and _getattr_inside(node, imported):
            found.append(f"{node.func.id}({ast.unparse(node.args[0])}, ...)")
        elif isinstance(node, ast.Call) and (name := _got_inside(node, imported)) is not None:
            found.append(f"{name}({ast.unparse(node.args[0])})")
        elif isinstance(node, ast.Global):
            found += [f"global {name} (a name of the lesson's cells)" for name in node.names if name in shared]
        elif isinstance(node, ast.ClassDef):
            found += [f"{target.id} = ... in class {node.name}" for item in node.body if isinstance(item, ast.Assign)
                      for target in item.targets if isinstance(target, ast.Name) and target.id.startswith("__")
                      and target.id.endswith("__") and target.id not in CLASS_SETTINGS]
        elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
            found.append(f".{node.attr}")
        elif isinstance(node, ast.MatchClass):  # `case object(__code__=body)` reads the attribute as well
            found += [f"case ...({name}=...)" for name in node.kwd_attrs if name in ATTRIBUTES or name.startswith("__")]
        elif isinstance(node, ast.Name) and node.id in NAMES and id(node) not in ordinary:
            found.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in NAMES | COMPARING:
            found.append(f"def {node.name}")
        elif (spelled := _spelled(node)) is not None and (spelled in NAMES | ATTRIBUTES | MODULES
                                                          or spelled.startswith("__")):
            found.append(f"{spelled!r} spelled in pieces")
        elif (coded := _codes_text(node)) is not None and (named := _flagged_words(coded)):
            found.append(f"{named!r} spelled as character codes")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                named := _named_in_text(node.value)) is not None:
            found.append(named)  # getattr(f, "__code__"), Formatter().get_field("0.__globals__")
        elif isinstance(node, ast.Name) and HISTORY.fullmatch(node.id):
            found.append(node.id)
        elif isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node, imported) in references:
            found.append(f"{ast.unparse(node)} (a reference its tests switch off)")
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            parts, root = [], target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                parts.append(getattr(root, "attr", None))
                root = root.value
            if parts and isinstance(root, ast.Name) and root.id in imported and not SETTINGS & set(parts):
                found.append(f"{ast.unparse(target)} = ...")
    found += [f"def {name} (the lesson's own helper)" for name in sorted(_defined(tree) & helpers)]
    found += [f"{name} = ... (the lesson's own helper)" for name in sorted(_assigned(tree) & helpers)]
    return list(dict.fromkeys(found))


def _assigned(tree: ast.Module) -> set[str]:
    """The names a cell assigns at its top level."""
    targets = [t for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
    targets += [node.target for node in tree.body if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For))]
    return {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}


def _named_in_text(text: str) -> str | None:
    """What a string names that a cell should not reach, said: an attribute of code, frames or the shell
    as a word of it (also spelled backwards or in rot13), an entry of the kernel's history, a Python file;
    None for anything else."""
    if HISTORY.fullmatch(text) or PYTHON_FILE.fullmatch(text):
        return f"{text!r} in a string"
    if (encoding := _encoded(text)) is not None:
        return f"text encoded as {encoding} in a string"
    for spelling, how in ((text, ""), (text[::-1], "backwards "), (codecs.encode(text, "rot13"), "in rot13 ")):
        words = set(re.findall(r"\w+", spelling)) & (ATTRIBUTES | NAMES)
        if named := min((word for word in words if "_" in word), default=None):
            return f"{named!r} {how}in a string"
    return None


def _codes_text(node: ast.AST) -> str | None:
    """The text that character codes spell: `f(101, 120, 101, 99)`, `[101, 120, 101, 99]` (for `bytes(...)` or
    `map(chr, ...)`), two or more printable ones; None for anything else."""
    items = node.args if isinstance(node, ast.Call) and not node.keywords else \
        node.elts if isinstance(node, (ast.List, ast.Tuple)) else []
    codes = [item.value for item in items if isinstance(item, ast.Constant) and type(item.value) is int]
    if len(codes) < 2 or len(codes) < len(items) or not all(32 <= code < 127 for code in codes):
        return None
    return "".join(map(chr, codes))


def _flagged_words(text: str) -> str | None:
    """The first word of `text` that names what a cell should not reach (NAMES, ATTRIBUTES, MODULES), or None."""
    return next((word for word in re.findall(r"\w+", text) if word in NAMES | ATTRIBUTES | MODULES), None)


def _encoded(text: str) -> str | None:
    """'hex' or 'base64' when `text` is long and decodes from it to printable text, else None."""
    if len(text) < ENCODED_LENGTH or not re.fullmatch(r"[A-Za-z0-9+/=\s]+", text):
        return None
    for encoding, decode in (("hex", bytes.fromhex), ("base64", lambda t: base64.b64decode(t, validate=True))):
        try:
            decoded = decode("".join(text.split())).decode("utf-8")
        except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
            continue
        if all(c.isprintable() or c.isspace() for c in decoded):
            return encoding
    return None


def _dotted(node: ast.Name | ast.Attribute, imported: dict[str, str]) -> str | None:
    """`redact` or `reflection.metrics.skill_metrics` as the dotted name it stands for, through the cell's
    imports; None for a name no import gave."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id in imported):
        return None
    return ".".join([imported[node.id], *reversed(parts)])


def _spelled(node: ast.AST) -> str | None:
    """The string that `"fo" + "rk"` or `"".join(["fo", "rk"])` spells: pieces of constants joined
    (a name in pieces hides from a reader); None for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _constant_text(node.left), _constant_text(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
            and _constant_text(node.func.value) is not None and len(node.args) == 1 \
            and isinstance(node.args[0], (ast.List, ast.Tuple)):
        pieces = [_constant_text(item) for item in node.args[0].elts]
        return None if None in pieces else _constant_text(node.func.value).join(pieces)
    return None


def _constant_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return _spelled(node)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _inside(library: str | None, attr: str) -> bool:
    """Whether `library.attr` is a library's inside: a private name, its namespace, the modules loaded, a
    module it imported that an answer may not (`socketserver.threading`), a function no answer needs."""
    return (_private(attr) or attr in ATTRIBUTES or attr == "__dict__" or (library, attr) == ("sys", "modules")
            or attr in MODULES or f"{library}.{attr}" in CALLS)


def _getattr_inside(call: ast.Call, imported: dict[str, str]) -> bool:
    """`getattr(sys, name)`, `hasattr(rules.redact, name)`: an attribute of a library or of what it holds
    by a computed name, or by a constant naming an inside."""
    if not (isinstance(call.func, ast.Name) and call.func.id in ("getattr", "hasattr") and len(call.args) > 1
            and isinstance(call.args[0], (ast.Name, ast.Attribute))
            and (library := _dotted(call.args[0], imported)) is not None):
        return False
    name = call.args[1]
    return not isinstance(name, ast.Constant) or _inside(library, str(name.value))


def _got_inside(call: ast.Call, imported: dict[str, str]) -> str | None:
    """`operator.attrgetter("_pattern")`, also under another name: the getter's name when it is given a name
    it computes, or a constant that names an inside of whatever it is given (_inside); else None."""
    name = getattr(call.func, "id", getattr(call.func, "attr", None))
    name = imported.get(name, name).rpartition(".")[2] if isinstance(call.func, ast.Name) else name
    if name not in GETTERS or not call.args:
        return None
    given = call.args[:1] if name == "methodcaller" else call.args  # methodcaller's others are the call's
    if not all(isinstance(arg, ast.Constant) and isinstance(arg.value, str) for arg in given):
        return name
    named = [part for arg in given for part in arg.value.split(".")]
    return name if any(_inside(None, part) for part in named) else None


@dataclass(frozen=True)
class _Lesson:
    """What the checks need of the lesson as released, read once for a whole class."""

    unchanged: frozenset[str]  # each code cell's text, stripped: a cell left as released is not read
    # Each cell's id -> its statements as released (ast.dump): a cell of another id is one the student added.
    statements: dict[str, frozenset[str]]
    answers: frozenset[str]  # the answer cells' grade_ids
    tests: dict[str, frozenset[str]]  # the test cells' grade_ids -> the references each switches off
    helpers: frozenset[str]  # the functions the lesson's cells define, but those an answer cell is there to define
    imported: dict[str, str]  # name -> what the lesson's cells import under it
    shared: frozenset[str]  # the names the lesson's cells but the answers' bind


@functools.lru_cache(maxsize=64)
def _lesson(released: Path, stamp: tuple[int, int]) -> _Lesson:
    """The released notebook at `released` as _Lesson (`stamp`: its mtime and size, so that a lesson
    released again is read again)."""
    theirs = nbformat.read(released, as_version=4)
    given = [(c, parsed_cell(c.source)) for c in theirs.cells if c.cell_type == "code"]
    statements = {c.get("id"): frozenset() for c in theirs.cells}
    statements |= {c.get("id"): frozenset(map(ast.dump, t.body)) for c, t in given if t}
    answers = frozenset(_grade_id(c) for c, _ in given if utils.is_solution(c))
    helpers = set().union(*(_defined(t) for c, t in given if t and not utils.is_solution(c)))
    helpers -= set().union(*(_defined(t) for c, t in given if t and utils.is_solution(c)))
    return _Lesson(
        unchanged=frozenset(c.source.strip() for c, _ in given), statements=statements,
        answers=answers, tests={_grade_id(c): frozenset(REFERENCE.findall(c.source)) for c, _ in given if is_test(c)},
        helpers=frozenset(helpers),
        imported={name: dotted for _, t in given if t for name, dotted in _imports(t).items()},
        shared=frozenset().union(*(_assigned(t) | _defined(t) | _imports(t).keys()
                                   for c, t in given if t and not utils.is_solution(c))))


def findings(submitted: Path, released: Path) -> list[str]:
    """For each code cell the student wrote or changed (an answer, a cell of their own, a plain cell of
    the lesson's), what its statements that are not the release's name that reaches into the kernel or
    the interpreter, or a reference that a test after the cell switches off (a table filled from it before
    the test runs needs no call while it runs); [] when nothing does (or a notebook cannot be read:
    autograde says why). Test cells are left out: autograde runs them as released whatever the student
    made of them."""
    try:
        mine = nbformat.read(submitted, as_version=4)
        stat = released.stat()
        lesson = _lesson(released, (stat.st_mtime_ns, stat.st_size))
    except Exception:  # a broken file can make nbformat raise almost anything
        return []
    found = []
    for number, cell in enumerate(mine.cells, 1):
        grade_id = _grade_id(cell)
        if cell.cell_type != "code" or cell.source.strip() in lesson.unchanged or grade_id in lesson.tests:
            continue
        tree = parsed_cell(cell.source)
        if tree is not None:  # what a cell holds as released is the lesson's (a reference it demonstrates)
            tree.body = [s for s in tree.body if ast.dump(s) not in lesson.statements.get(cell.get("id"), ())]
        later = frozenset().union(*(lesson.tests.get(_grade_id(test), ()) for test in mine.cells[number:]))
        named = [] if tree is None else reaches(tree, lesson.helpers, lesson.imported, lesson.shared, later)
        if named:
            where = (f"answer {grade_id}" if grade_id in lesson.answers
                     else f"cell {number} (changed from the release)" if cell.get("id") in lesson.statements
                     else f"cell {number} (added by the student)")
            shown = "; ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
            found.append(f"{where} can get around the grading: {shown}; read it")
    return found


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def of_submission(root: Path, student: str, lesson: str) -> list[str]:
    """findings() for submitted/<student>/<lesson>/, against the lesson as released."""
    name = f"{lesson}.ipynb"
    return findings(Path(root) / "submitted" / student / lesson / name, Path(root) / "lessons" / lesson / name)
