"""Feedback without the hidden tests' code: the hidden tests stay the course's from one term to the next.

nbgrader's feedback shows the graded notebook whole, hidden tests included, and a failing test's
traceback quotes the lines around the one that failed. Here each hidden test shows its header line
(what it checks) and, when it failed, its error and message, which name the broken rule.

Student code can carry a hidden test's text into what it prints, shows or raises, in any disguise
(reversed, hex, compressed): once a hidden test has run, the kernel holds its text, and what the student's
functions were handed (the hidden tests' inputs). So from the first cell with hidden tests on, feedback shows
no cell's output but its error, as one line: `name: message` (WITHHELD_AFTER characters at most). The grader's
message is shown as it is (its checks and tripwires in lab_utils/grading.py, an error it added to the cell
itself). One a test cell's own code raised (its assert or raise: the innermost frame of the traceback is a test
cell's) is shown as the cell writes it: its words, and `…` for each value put in them (`got {ids!r}` quotes
what the student's code returned, which can carry anything); a message that is a value alone only if the
released tests hold it word for word. Any other is NOT_THE_TESTS, since the message of an error raised in the
student's code, or in anything it or the test called, is the student's to write; so is the name of its class,
shown only if it is one of Python's own (else NOT_PYTHONS). An output line that holds a
line of a hidden test is replaced by HIDDEN wherever it is.
"""

from __future__ import annotations

import ast
import builtins
import html
import re
import textwrap

from nbformat.v4 import new_output
from nbgrader.preprocessors import ClearHiddenTests

from lab_utils.course.cells import GRADERS_ERROR, is_test

HIDDEN = "[a line of a hidden test]"
SHORTEST = 8  # characters: a shorter line (`else:`, `pass`) is no test's own, and may well be printed
WITHHELD = "[not shown in feedback: this cell ran after a hidden test, whose text an output could carry]\n"
# Characters of the message of an error a test cell's own code raised, past the first hidden test: the tests'
# messages are shorter. Any other error's message is NOT_THE_TESTS there.
WITHHELD_AFTER = 500
NOT_THE_TESTS = ("[its message is not shown in feedback: it was raised outside the test cell's own code "
                 "(in your code, or in code the test called), after a hidden test had run]")
NOT_PYTHONS = "Exception"  # shown for the name of an error's class that is not one of Python's own
MADE_OF_VALUES = ("[its message is not shown in feedback: the test makes it from values, which after a hidden "
                  "test had run could carry its text]")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A traceback entry that is a frame, as IPython writes it: `Cell In[3], line 2` (the cell run as In[3], its line
# 2) or `File /path/to/module.py:7` (a file's, or `<string>` for code run by exec).
FRAME = re.compile(r"\s*(?:Cell In\[(\d+)\], line (\d+)|File (.+?):\d+)")
# The grader's own frames: its checks and the tripwires that stand in for switched-off references say which rule
# an answer broke, in words of the course's.
GRADING = ("lab_utils/grading.py", "<tripwire of ")


class HiddenTestsOut(ClearHiddenTests):
    """nbgrader's ClearHiddenTests for the feedback step, in test cells only; from the first cell with hidden
    tests on, outputs withheld but errors, each cut to its name and message, the message as the grader or the
    test cell wrote it, or withheld; no hidden test's line in any output."""

    def preprocess(self, nb, resources):
        self._removed: set[str] = set()  # the lines nbgrader takes out of the test cells
        self._hidden_at: list[int] = []  # the cells they were in
        self._written: dict[int, str] = {}  # each test cell's text as it ran, by its execution count
        nb, resources = super().preprocess(nb, resources)
        # As the line is, and as HTML shows it (a result's text/html).
        hidden = {shown for line in self._removed if len(line) >= SHORTEST for shown in (line, html.escape(line))}
        released = "\n".join(cell.source for cell in nb.cells if is_test(cell))  # hidden tests taken out
        for index, cell in enumerate(nb.cells):
            for output in cell.get("outputs", []):
                _scrub(output, hidden)
            if self._hidden_at and index >= self._hidden_at[0] and cell.get("outputs"):
                cell.outputs = _errors_alone(cell.outputs, self._written, released, cell.metadata.get(GRADERS_ERROR))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if is_test(cell):  # a student's cell is the student's: its text is no hidden test, whatever it says
            hidden, written = self.begin_test_delimeter in cell.source, cell.source.splitlines()
            if cell.get("execution_count") is not None:
                self._written[cell.execution_count] = cell.source
            cell, resources = super().preprocess_cell(cell, resources, index)
            if hidden:
                kept = set(cell.source.splitlines())
                self._removed |= {line.strip() for line in written if line not in kept}
                self._hidden_at.append(index)
        return cell, resources


def _errors_alone(outputs: list, written: dict[int, str], released: str, graders: str | None = None) -> list:
    """The errors among `outputs`, each as one line, and a note for what else there was. `written`: the test
    cells' texts by execution count; `released`: what students have of them; `graders`: the message of the
    error the grader added to the cell."""
    errors = [output for output in outputs if output.output_type == "error"]
    for error in errors:
        cell, line, file = _innermost_frame(error.traceback)
        if error.evalue == graders or file is not None and (file.endswith(GRADING[0]) or file.startswith(GRADING[1])):
            message = error.evalue
        else:
            # The class's name is the student's to choose, as its message is: Python's own are shown.
            if not (isinstance(pythons := getattr(builtins, error.ename, None), type)
                    and issubclass(pythons, BaseException)):
                error.ename = NOT_PYTHONS
            message = _as_written(error.evalue, written[cell], line, released) if cell in written else NOT_THE_TESTS
        if len(message) > WITHHELD_AFTER:
            message = message[:WITHHELD_AFTER] + " [cut]"
        error.evalue, error.traceback = message, [f"{error.ename}: {message}"]
    return ([new_output("stream", name="stdout", text=WITHHELD)] if len(errors) < len(outputs) else []) + errors


def _innermost_frame(traceback: list[str]) -> tuple[int | None, int | None, str | None]:
    """(cell's execution count, line) or (None, None, file) of the traceback's innermost frame; all None
    when none is found. Its last entry is the error's own line, not a frame: an error class the student
    names `Cell In[3], line 1` must not pass for one."""
    frames = [frame for entry in traceback[:-1] if (frame := FRAME.match(ANSI.sub("", entry)))]
    if not frames:
        return None, None, None
    cell, line, file = frames[-1].groups()
    return (int(cell), int(line), None) if cell is not None else (None, None, file)


def _as_written(message: str, source: str, line: int, released: str) -> str:
    """The message of the error a test cell's `line` raised, as the cell writes it (MADE_OF_VALUES when it
    cannot be told, or is a value the released tests do not hold word for word)."""
    if (tree := _parsed(source)) is None:  # a cell with IPython's syntax: the statement alone, from its line
        lines = source.splitlines()[line - 1:]
        statements = (_parsed(textwrap.dedent("\n".join(lines[:end]))) for end in range(1, len(lines) + 1))
        tree = next(filter(None, statements), None)
        line = 1
    raising = [node for node in ast.walk(tree or ast.Module(body=[], type_ignores=[]))
               if isinstance(node, (ast.Assert, ast.Raise)) and node.lineno <= line <= node.end_lineno]
    if not raising:
        return MADE_OF_VALUES
    node = max(raising, key=lambda node: node.lineno)  # the innermost
    if isinstance(node, ast.Assert):
        said = node.msg
    else:
        said = node.exc.args[0] if isinstance(node.exc, ast.Call) and node.exc.args else None
    if said is None:
        return message if message == "" else MADE_OF_VALUES
    if (words := _words(said)).strip("…"):
        return words
    return message if message and message in released else MADE_OF_VALUES


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _words(node: ast.expr) -> str:
    """A message's text with `…` for each value put in it; '' for a value alone."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "…" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (_words(node.left) or "…") + (_words(node.right) or "…")
    return ""


def _scrub(output, hidden: set[str]) -> None:
    """Every text of an output (a stream's, a result's in each of its formats, an error's) without the
    lines that hold a hidden test's."""
    def clean(text):
        if isinstance(text, list):  # a traceback, or a text kept as a list of lines
            return [clean(part) for part in text]
        if not isinstance(text, str):
            return text
        return "".join(HIDDEN + "\n" * line.endswith("\n") if any(h in line for h in hidden) else line
                       for line in text.splitlines(keepends=True))

    for key in ("text", "evalue", "traceback"):
        if key in output:
            output[key] = clean(output[key])
    for kind, value in output.get("data", {}).items():
        if kind.startswith("text/"):
            output["data"][kind] = clean(value)
