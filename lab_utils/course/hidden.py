"""Feedback without the hidden tests' code: the hidden tests stay the course's from one term to the next.

nbgrader's feedback shows the graded notebook whole, hidden tests included, and a failing test's
traceback quotes the lines around the one that failed. Here each hidden test shows its header line
(what it checks) and, when it failed, its error and message, which name the broken rule. Student
code can print a hidden test's code too (from IPython's history, or its call stack): an output line
that holds a line of a hidden test is replaced by HIDDEN.
"""

from __future__ import annotations

import html

from nbgrader.preprocessors import ClearHiddenTests

from lab_utils.course.cells import is_test

HIDDEN = "[a line of a hidden test]"
SHORTEST = 8  # characters: a shorter line (`else:`, `pass`) is no test's own, and may well be printed


class HiddenTestsOut(ClearHiddenTests):
    """nbgrader's ClearHiddenTests for the feedback step, in test cells only, the tracebacks of hidden tests
    cut to their last line, and no hidden test's line in any output."""

    def preprocess(self, nb, resources):
        self._removed: set[str] = set()  # the lines nbgrader takes out of the test cells
        nb, resources = super().preprocess(nb, resources)
        # As the line is, and as HTML shows it (a result's text/html).
        hidden = {shown for line in self._removed if len(line) >= SHORTEST for shown in (line, html.escape(line))}
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                _scrub(output, hidden)
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if not is_test(cell):  # a student's cell is the student's: its text is no hidden test, whatever it says
            return cell, resources
        hidden, written = self.begin_test_delimeter in cell.source, cell.source.splitlines()
        cell, resources = super().preprocess_cell(cell, resources, index)
        if hidden:
            kept = set(cell.source.splitlines())
            self._removed |= {line.strip() for line in written if line not in kept}
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


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
