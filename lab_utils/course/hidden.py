"""Feedback without the hidden tests' code: the hidden tests stay the course's from one term to the next.

nbgrader's feedback shows the graded notebook whole, hidden tests included, and a failing test's
traceback quotes the lines around the one that failed. Here each hidden test shows its header line
(what it checks) and, when it failed, its error and message, which name the broken rule.

Student code can carry a hidden test's text into what it prints, shows or raises, in any disguise
(reversed, hex, compressed): once a hidden test has run, the kernel holds its text, and what the student's
functions were handed (the hidden tests' inputs). So from the first cell with hidden tests on, feedback shows
no cell's output but its error, as one line: `name: message` (WITHHELD_AFTER characters at most) when a test
cell's own code raised it (its assert or raise: the innermost frame of the traceback is a test cell's) or the
grader did (its checks and tripwires in lab_utils/grading.py, an error it added to the cell itself), else
`name: NOT_THE_TESTS`, since the message of an error raised in the student's code, or in anything it or the
test called, is the student's to write. An output line that holds a line of a hidden test is replaced by
HIDDEN wherever it is.
"""

from __future__ import annotations

import html
import re

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
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# A traceback entry that is a frame, as IPython writes it: `Cell In[3], line 2` (the cell run as In[3]) or
# `File /path/to/module.py:7` (a file's, or `<string>` for code run by exec).
FRAME = re.compile(r"\s*(?:Cell In\[(\d+)\]|File (.+?):\d+)")
# The grader's own frames: its checks and the tripwires that stand in for switched-off references say which rule
# an answer broke, in words of the course's.
GRADING = ("lab_utils/grading.py", "<tripwire of ")


class HiddenTestsOut(ClearHiddenTests):
    """nbgrader's ClearHiddenTests for the feedback step, in test cells only; from the first cell with hidden
    tests on, outputs withheld but errors, each cut to its name and message, the message withheld too unless a
    test cell's own code raised it; no hidden test's line in any output."""

    def preprocess(self, nb, resources):
        self._removed: set[str] = set()  # the lines nbgrader takes out of the test cells
        self._hidden_at: list[int] = []  # the cells they were in
        nb, resources = super().preprocess(nb, resources)
        # As the line is, and as HTML shows it (a result's text/html).
        hidden = {shown for line in self._removed if len(line) >= SHORTEST for shown in (line, html.escape(line))}
        tests = {cell.get("execution_count") for cell in nb.cells if is_test(cell)} - {None}
        for index, cell in enumerate(nb.cells):
            for output in cell.get("outputs", []):
                _scrub(output, hidden)
            if self._hidden_at and index >= self._hidden_at[0] and cell.get("outputs"):
                cell.outputs = _errors_alone(cell.outputs, tests, cell.metadata.get(GRADERS_ERROR))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if is_test(cell):  # a student's cell is the student's: its text is no hidden test, whatever it says
            hidden, written = self.begin_test_delimeter in cell.source, cell.source.splitlines()
            cell, resources = super().preprocess_cell(cell, resources, index)
            if hidden:
                kept = set(cell.source.splitlines())
                self._removed |= {line.strip() for line in written if line not in kept}
                self._hidden_at.append(index)
        return cell, resources


def _errors_alone(outputs: list, tests: set[int], graders: str | None = None) -> list:
    """The errors among `outputs`, each as one line, and a note for what else there was. `tests`: the
    execution counts of the test cells; `graders`: the message of the error the grader added to the cell."""
    errors = [output for output in outputs if output.output_type == "error"]
    for error in errors:
        if not (_raised_by_test(error.traceback, tests) or error.evalue == graders):
            message = NOT_THE_TESTS
        elif len(error.evalue) <= WITHHELD_AFTER:
            message = error.evalue
        else:
            message = error.evalue[:WITHHELD_AFTER] + " [cut]"
        error.evalue, error.traceback = message, [f"{error.ename}: {message}"]
    return ([new_output("stream", name="stdout", text=WITHHELD)] if len(errors) < len(outputs) else []) + errors


def _raised_by_test(traceback: list[str], tests: set[int]) -> bool:
    """Whether the traceback's innermost frame is a test cell's (`tests`: their execution counts) or the
    grader's own; not when no frame is found in it. Its last entry is the error's own line, not a frame: an
    error class the student names `Cell In[3]` must not pass for one."""
    frames = [frame for entry in traceback[:-1] if (frame := FRAME.match(ANSI.sub("", entry)))]
    if not frames:
        return False
    cell, file = frames[-1].groups()
    return int(cell) in tests if cell is not None else file.endswith(GRADING[0]) or file.startswith(GRADING[1])


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
