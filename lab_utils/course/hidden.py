"""Feedback without the hidden tests' code: the hidden tests stay the course's from one term to the next.

nbgrader's feedback shows the graded notebook whole, hidden tests included, and a failing test's
traceback quotes the lines around the one that failed. Here each hidden test shows its header line
(what it checks) and, when it failed, its error and message, which name the broken rule.
"""

from __future__ import annotations

from nbgrader.preprocessors import ClearHiddenTests


class HiddenTestsOut(ClearHiddenTests):
    """nbgrader's ClearHiddenTests for the feedback step, the tracebacks of hidden tests cut to their last line."""

    def preprocess_cell(self, cell, resources, index):
        hidden = self.begin_test_delimeter in cell.source
        cell, resources = super().preprocess_cell(cell, resources, index)
        if hidden:
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
