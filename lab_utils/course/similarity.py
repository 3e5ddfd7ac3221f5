"""Near-copies: answers too close to the reference or to another student's, for a person to review.

Each answer cell is parsed as IPython runs it and normalized (each use of a name replaced by how far
back it was used last, literals reduced to their type, docstrings, comments and annotations dropped),
so renaming variables or rewording strings does not hide a copy. Statements that do nothing inside a
function are dropped first (`pass`, a name or a constant alone, a constant stored to names nothing in the
function reads, such as an outside tester's `_pad = 0` at the top of each function of a pasted reference):
every comparison below sees the answer without them, and the library without them too. Nothing outside
functions is dropped: other cells read an answer's constants. The strings of a dict, list, tuple or
set display keep their text: they are data the answer states, and an answer that is data (lesson 08's
attack, a dict in a given format) has no shape of its own, so any two would look alike as types.
Two normalized answers are compared token by token with difflib.
An answer is compared with the solution cell, with every other student's answer to the same
exercise, and function by function with lab_utils (the references later lessons import): the
functions of a student's answers to a lesson that are near-copies of library functions count when
together they are as long as a written answer, so pasting the library's helpers one by one, each short,
in one answer or in several, is found too; a long function is a near-copy at a lower bar; a function that
is a library function verbatim (its names and literals too) counts whatever its length, and so does
a string that is the pattern of one of the library's regular expressions.
Blank answers (the released stub, or a body that still raises NotImplementedError) are skipped, and
so are short ones: honest short answers to one exercise converge, so their likeness proves nothing.
Written answers are compared as their words (case, punctuation and layout set aside), with the
solution's and with every other student's.
"""

from __future__ import annotations

import ast
import bisect
import collections
import difflib
import functools
import importlib
import itertools
import re
from pathlib import Path

import nbformat

from lab_utils.course.cells import parsed_cell
from lab_utils.grading import PACKAGE_DIR, module_name

# Outside students' own long answers came as close to the reference as 0.88 (lesson 03's remember,
# 232 tokens) and 0.86 (lesson 05's wrong-answers): a lower bar would flag honest work. A copy
# reworded or trimmed by hand (two of them: 0.70 and 0.72) stays under it.
THRESHOLD = 0.9
# An answer this many normalized tokens longer than its stub at least: shorter ones are too alike
# whoever writes them. Outside students' own short answers came out the same as the solution's
# (lesson 04's choose-b, 50 tokens: 1.00) or close (lesson 06's blind-spots, 81 tokens: 0.94).
# Every lesson has a longer exercise, so a whole lesson copied is still flagged.
MIN_WRITTEN_TOKENS = 100
# A function shorter than this is not compared with lab_utils: one-line helpers written honestly
# coincide with the library's by shape alone.
MIN_FUNCTION_TOKENS = 20
# A function this long at least that is a lab_utils function verbatim, its names and literals too, is a
# copy though its answer is short: no function of 60 outside students' notebooks was one, and a short
# reference pasted as it is (lesson 07's failed_for_real, 49 tokens) went unflagged before. A one-line
# body can be the library's word for word when written honestly (lesson 03's forget_source, 30 tokens).
MIN_VERBATIM_TOKENS = 40
# A regular expression of lab_utils this long at least, pasted as a string, is a copy: its pattern is the
# reference's work (lesson 02's _RAW, 70 characters, went unflagged before). Shorter ones, such as
# lesson 07's words of correction (37), an honest student can write the same.
MIN_PATTERN_CHARS = 40
# A function this long is a near-copy of a lab_utils function at the lower bar below: outside students' own
# functions of this length came no closer to any library function than 0.52, the solutions' own no closer
# than 0.59 (the library does not write these exercises as the lessons ask for them), while an outside
# cheater's lesson 01 memory_from_json, the library's renamed and trimmed (two checks dropped, another error
# class), came to 0.84 and went unflagged at THRESHOLD.
LONG_FUNCTION_TOKENS = 200
LONG_FUNCTION_THRESHOLD = 0.75
# A written answer shorter than this is not compared: a sentence or two can coincide.
MIN_WRITTEN_WORDS = 30


class _DropNoOps(ast.NodeTransformer):
    """Drops the statements of functions that do nothing (_does_nothing): padding hides no copy. A block
    left empty gets a `pass`. Nothing outside functions is dropped: other cells read an answer's constants."""

    def __init__(self):
        self.read: set[str] | None = None  # the names the function being visited reads; None outside functions

    def _scope(self, node, read: set[str] | None):
        outer, self.read = self.read, read
        self.generic_visit(node)
        self.read = outer
        return node

    def visit_FunctionDef(self, node):
        return self._scope(node, _read_names(node))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):  # a class body's names are attributes, read from outside
        return self._scope(node, None)

    def _statement(self, node):
        return None if self.read is not None and _does_nothing(node, self.read) else self.generic_visit(node)

    visit_Pass = visit_Expr = visit_Assign = _statement

    def generic_visit(self, node):
        blocks = [field for field in ("body", "orelse", "finalbody") if getattr(node, field, None)]
        super().generic_visit(node)
        for field in blocks:  # an emptied clause keeps a `pass`: a `try` with no handler needs its `finally`
            setattr(node, field, getattr(node, field) or [ast.Pass()])
        return node


def _read_names(function: ast.FunctionDef) -> set[str]:
    """The names a function (its inner functions too) reads, or shares with another scope: a store to any
    other is dead. A name alone as a statement reads it to no end."""
    nodes = list(ast.walk(function))
    alone = {id(node.value) for node in nodes if isinstance(node, ast.Expr)}
    read = {node.id for node in nodes
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store) and id(node) not in alone}
    added = {node.target.id for node in nodes if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)}
    shared = {name for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    return read | added | shared


def _does_nothing(statement: ast.stmt, read: set[str]) -> bool:
    """`pass`, a name or a constant alone (a docstring too), or a constant stored to names nothing reads."""
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, (ast.Name, ast.Constant))
    if isinstance(statement, ast.Assign):
        return isinstance(statement.value, ast.Constant) and all(
            isinstance(target, ast.Name) and target.id not in read for target in statement.targets)
    return isinstance(statement, ast.Pass)


def _parsed(source: str) -> ast.Module | None:
    """A cell's code as IPython runs it (parsed_cell), without its functions' statements that do nothing:
    what every comparison sees of an answer. None if it does not parse."""
    tree = parsed_cell(source)
    return None if tree is None else _DropNoOps().visit(tree)


class _Normalize(ast.NodeTransformer):
    def __init__(self):
        self.names: dict[str, str] = {}
        self.data: set[ast.Constant] = set()  # the strings of displays, which keep their text

    def _rename(self, name: str) -> str:
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_Name(self, node):
        node.id = self._rename(node.id)
        return node

    def visit_arg(self, node):
        node.arg, node.annotation = self._rename(node.arg), None
        return node

    def visit_Constant(self, node):
        return node if node in self.data else ast.Constant(type(node.value).__name__)

    def _display(self, node):
        self.data.update(item for item in ast.iter_child_nodes(node)
                         if isinstance(item, ast.Constant) and isinstance(item.value, str))
        return self.generic_visit(node)

    visit_Dict = visit_List = visit_Tuple = visit_Set = _display

    def _definition(self, node):
        node.name = self._rename(node.name)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            node.body = body[1:] or [ast.Pass()]  # the docstring
        if hasattr(node, "returns"):
            node.returns = None
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_AnnAssign(self, node):
        node.annotation = ast.Constant("annotation")
        return self.generic_visit(node)


def tokens(source: str) -> list[str] | None:
    """The normalized tokens of a cell's code, as IPython runs it (_parsed); None if it does not parse."""
    tree = _parsed(source)
    return None if tree is None else _normalized(tree)


def _normalized(tree: ast.AST) -> list[str]:
    """The normalized tokens of a parsed tree (which normalizing changes). Each use of a name becomes
    how many tokens back the name was last used ("p0" at its first use): a numbering by first use would
    shift every number after one name put in front (a `%matplotlib inline` line was enough)."""
    normalize = _Normalize()
    found = re.findall(r"\w+|[^\w\s]", ast.unparse(normalize.visit(tree)))
    names, last = set(normalize.names.values()), {}
    for i, token in enumerate(found):
        if token in names:
            found[i], last[token] = f"p{i - last[token]}" if token in last else "p0", i
    return found


def similarity(a: list[str], b: list[str], at_least: float = 0.0) -> float:
    """difflib's ratio of two token lists; 0 when its cheap upper bound (difflib's quick_ratio: the
    tokens they share, however ordered) is below `at_least`, as it is for most pairs of a class."""
    if not (a or b):
        return 1.0  # as difflib has it
    if 2.0 * (_counted(tuple(a)) & _counted(tuple(b))).total() / (len(a) + len(b)) < at_least:
        return 0.0
    matcher = _matcher(tuple(b))
    matcher.set_seq1(a)
    return matcher.ratio()


# Each answer and library function is compared with many others: what difflib makes of it, kept.
@functools.lru_cache(maxsize=8192)
def _counted(tokens: tuple[str, ...]) -> collections.Counter:
    return collections.Counter(tokens)


@functools.lru_cache(maxsize=8192)
def _matcher(tokens: tuple[str, ...]) -> difflib.SequenceMatcher:
    """A matcher of `tokens` as its second sequence, which difflib indexes: once for every comparison."""
    return difflib.SequenceMatcher(None, b=tokens, autojunk=False)


def _answers(path: Path, cell_type: str = "code") -> dict[str, str]:
    """grade_id -> source of every answer cell of a notebook of this type (markdown: the written
    answers); {} if the notebook cannot be read."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:  # a broken submission is reported by autograde; here it has no answers
        return {}
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.cell_type == cell_type and c.get("metadata", {}).get("nbgrader", {}).get("solution")
            and "grade_id" in c.metadata["nbgrader"]}


def words(text: str) -> list[str]:
    """A written answer as the words it is made of: case, punctuation and layout set aside."""
    return re.findall(r"\w+", text.lower())


def _blank(source: str, stub: list[str] | None) -> bool:
    written = tokens(source)
    if written is None or _stubs_only(source):
        return True
    return stub is not None and len(written) - len(stub) < MIN_WRITTEN_TOKENS


def _stubs_only(source: str) -> bool:
    """Whether every function the answer defines still starts by raising NotImplementedError, as the
    released stub does (a word in a comment, or a raise after the code, is no stub)."""
    functions = [node for node in ast.walk(_parsed(source))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return bool(functions) and all(_raises_not_implemented(f.body[0]) for f in functions)  # docstrings dropped


def _raises_not_implemented(statement: ast.stmt) -> bool:
    raised = getattr(statement, "exc", None) if isinstance(statement, ast.Raise) else None
    raised = raised.func if isinstance(raised, ast.Call) else raised
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _functions(source: str) -> list[ast.FunctionDef]:
    """Each function an answer defines at its top level (in the code its `%%time` runs too)."""
    return [node for node in _parsed(source).body if isinstance(node, ast.FunctionDef)]


def _verbatim(function: ast.FunctionDef) -> str:
    """The function as written, its docstrings, comments, annotations and layout set aside, and its own
    name: a pasted helper is renamed first (an outside cheater's `_for_real`, lesson 07's failed_for_real).
    Rewrites the tree, as _normalized does."""
    function.name = ""
    for node in ast.walk(function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                node.body = node.body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
    return ast.dump(function)


def _library_modules() -> list[tuple[Path, str]]:
    """(file, dotted name) of every lab_utils module, the course's wing excepted."""
    return [(path, module) for path in sorted(PACKAGE_DIR.rglob("*.py"))
            if not (module := module_name(path)).startswith("lab_utils.course")]


def _tree_copy(node):
    """A copy of a syntax tree, made of its fields alone. Not copy.deepcopy, which follows every
    attribute: Python shares one ast.Load (and Store, Del) among all the trees it parses, and IPython's
    tracebacks (the `executing` library) give each node a `parent`, so after one traceback in the
    process a deep copy of any function took whichever whole module that shared node last pointed into."""
    if isinstance(node, list):
        return [_tree_copy(item) for item in node]
    if not isinstance(node, ast.AST):
        return node
    return type(node)(**{name: _tree_copy(getattr(node, name)) for name in node._fields if hasattr(node, name)},
                      **{name: getattr(node, name) for name in node._attributes if hasattr(node, name)})


@functools.cache  # read once per process: grades compares every lesson's answers with it
def _library_functions() -> tuple[list[int], list[tuple[str, list[str]]], dict[str, str]]:
    """Every function in lab_utils (the course's wing excepted), shortest first, as (dotted name,
    normalized tokens); their lengths, to find those of a given length quickly; and the dotted name
    of each as written (_verbatim)."""
    found: list[tuple[str, list[str]]] = []
    verbatim: dict[str, str] = {}
    for path, module in _library_modules():
        # Without statements that do nothing, as the answers: a library function pasted is the same.
        for node in ast.walk(_DropNoOps().visit(ast.parse(path.read_text(encoding="utf-8")))):
            if isinstance(node, ast.FunctionDef):
                # The node itself, not its source text: ast.get_source_segment splits the whole file per call.
                # Copies: the walk goes on into the node's own functions, which must be as written.
                found.append((f"{module}.{node.name}", _normalized(_tree_copy(node))))
                verbatim.setdefault(_verbatim(_tree_copy(node)), f"{module}.{node.name}")
    found.sort(key=lambda function: len(function[1]))
    return [len(tokens) for _, tokens in found], found, verbatim


@functools.cache
def _library_patterns() -> dict[str, str]:
    """pattern -> dotted name of each regular expression a lab_utils module (the course's wing excepted)
    compiles, MIN_PATTERN_CHARS long at least; read from the modules, as many are built from pieces."""
    found: dict[str, str] = {}
    for _, module in _library_modules():
        if module.endswith("__main__"):  # a command, which runs when imported
            continue
        for name, value in vars(importlib.import_module(module)).items():
            if isinstance(value, re.Pattern) and len(value.pattern) >= MIN_PATTERN_CHARS:
                found.setdefault(value.pattern, f"{module}.{name}")
    return found


def _library_copies(source: str) -> tuple[list[tuple[str, float]], int, bool]:
    """(dotted name, score) of each lab_utils function that a function of the answer nearly copies; how
    many tokens those functions of the answer hold; and whether one of them is a library function verbatim,
    or a string a library pattern: a copy whatever its length."""
    lengths, library, verbatim = _library_functions()
    patterns = _library_patterns()
    copies = [(patterns[node.value], 1.0) for node in ast.walk(_parsed(source))
              if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in patterns]
    copied_tokens, pasted = 0, bool(copies)
    for function, twin in zip(_functions(source), _functions(source)):  # a tree each: both rewrite theirs
        as_written, mine = _verbatim(twin), _normalized(function)
        if len(mine) < MIN_FUNCTION_TOKENS:
            continue
        if len(mine) >= MIN_VERBATIM_TOKENS and as_written in verbatim:
            copies.append((verbatim[as_written], 1.0))
            copied_tokens, pasted = copied_tokens + len(mine), True
            continue
        bar = LONG_FUNCTION_THRESHOLD if len(mine) >= LONG_FUNCTION_TOKENS else THRESHOLD
        # Two token lists `bar` alike differ in length by a factor under 2 / bar - 1 (2·shorter / both >= bar).
        reach = 2 / bar - 1
        nearby = library[bisect.bisect_left(lengths, len(mine) / reach):bisect.bisect_right(lengths, len(mine) * reach)]
        score, dotted = max(((similarity(mine, theirs, bar), dotted) for dotted, theirs in nearby), default=(0.0, ""))
        if score >= bar:
            copies.append((dotted, score))
            copied_tokens += len(mine)
    return copies, copied_tokens, pasted


def near_copies(root: Path, lesson: str) -> dict[str, str]:
    """student -> why their answers to `lesson` look copied (the exercise and the other party)."""
    root = Path(root)
    name = f"{lesson}.ipynb"
    solution = {k: tokens(v) or [] for k, v in _answers(root / "solutions" / lesson / name).items()}
    prose = {k: words(v) for k, v in _answers(root / "solutions" / lesson / name, "markdown").items()}
    stubs = {k: tokens(v) for k, v in _answers(root / "lessons" / lesson / name).items()}
    submitted = sorted(p for p in (root / "submitted").glob(f"*/{lesson}/{name}"))
    # student -> exercise -> (source of a code answer or None for a written one, its tokens or words)
    written: dict[str, dict[str, tuple[str | None, list[str]]]] = {}
    short: list[tuple[str, str, str]] = []  # (student, exercise, source): compared with lab_utils alone
    for path in submitted:
        student = path.parent.parent.name
        for exercise, source in _answers(path).items():
            if exercise in solution and not _blank(source, stubs.get(exercise)):
                written.setdefault(student, {})[exercise] = (source, tokens(source))
            elif exercise in solution and tokens(source) is not None and not _stubs_only(source):
                short.append((student, exercise, source))
        for exercise, text in _answers(path, "markdown").items():
            if exercise in prose and len(said := words(text)) >= MIN_WRITTEN_WORDS:
                written.setdefault(student, {})[exercise] = (None, said)
    solution |= prose
    # student -> the other party -> [(exercise, score)]: one reason per party keeps a row readable.
    reasons: dict[str, dict[str, list[tuple[str, float]]]] = {}
    # student -> [(exercise, its library copies, their tokens, pasted)], weighed together below.
    library: dict[str, list[tuple[str, list[tuple[str, float]], int, bool]]] = {}

    def flag(student: str, exercise: str, other: str, score: float) -> None:
        reasons.setdefault(student, {}).setdefault(other, []).append((exercise, score))

    def note_library(student: str, exercise: str, source: str) -> None:
        copies, copied_tokens, pasted = _library_copies(source)
        if copies:
            library.setdefault(student, []).append((exercise, copies, copied_tokens, pasted))

    for student, answers in written.items():
        for exercise, (source, mine) in answers.items():
            score = similarity(mine, solution[exercise], THRESHOLD)
            if score >= THRESHOLD:
                flag(student, exercise, "the reference solution", score)
            elif source is not None:
                note_library(student, exercise, source)
    for student, exercise, source in short:
        note_library(student, exercise, source)
    for student, found in library.items():
        # Across the lesson: short library functions renamed into several short answers are a copy too.
        whole = sum(copied_tokens for _, _, copied_tokens, _ in found) >= MIN_WRITTEN_TOKENS
        for exercise, copies, _, pasted in found:
            if whole or pasted:
                flag(student, exercise, ", ".join(dotted for dotted, _ in copies), max(s for _, s in copies))
    for (one, a), (two, b) in itertools.combinations(sorted(written.items()), 2):
        for exercise in sorted(a.keys() & b.keys()):
            score = similarity(a[exercise][1], b[exercise][1], THRESHOLD)
            if score >= THRESHOLD:
                flag(one, exercise, f"{two}'s answer", score)
                flag(two, exercise, f"{one}'s answer", score)
    return {student: "; ".join(
                f"near-copy of {other} in {', '.join(e for e, _ in found)} (up to {max(x for _, x in found):.2f})"
                for other, found in parties.items())
            for student, parties in sorted(reasons.items())}
