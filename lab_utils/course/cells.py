"""A notebook cell's code as IPython runs it, for the readers that judge a submission outside the kernel;
and which cells are tests.

IPython turns magics into calls (`%matplotlib inline` becomes `get_ipython().run_line_magic(...)`).
`%%time` and `%timeit` also run the code they are handed, in the notebook's namespace, though to a
parser it is only a string: that code is read as the cell's own, or a cell could hide anything in it.
"""

from __future__ import annotations

import ast
import functools

from IPython.core.inputtransformer2 import TransformerManager
from nbgrader import utils

# Magics that run the Python code they are handed: a line magic's text, a cell magic's line and body.
RUNS_CODE = {"time", "timeit"}
# Where the grader keeps the message of an error it added to a cell itself: in the cell's metadata, which no code
# of the notebook's can write, so feedback can tell that error from one a notebook's code forged to look alike.
GRADERS_ERROR = "graders_error"


def is_test(cell) -> bool:
    """A graded cell that is no answer: a test cell."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def parsed_cell(source: str) -> ast.Module | None:
    """A cell's syntax tree as IPython runs it, with the code its `%%time` and `%timeit` run appended;
    None if it does not parse."""
    try:
        tree = ast.parse(_as_python(source))
    except (SyntaxError, RecursionError):  # RecursionError: code nested past what the parser reads
        return None
    for node in list(ast.walk(tree)):
        for code in _code_run_by(node):
            if (ran := _after_options(code)) is not None:
                tree.body += ran.body
    return tree


@functools.lru_cache(maxsize=4096)  # the released lesson's cells come back with every submission
def _as_python(source: str) -> str:
    """The cell's text as IPython runs it: the costly half of parsing a cell, the same every time."""
    return TransformerManager().transform_cell(source)


def _code_run_by(node: ast.AST) -> list[str]:
    """The texts a `get_ipython().run_line_magic("time", ...)` or `run_cell_magic` call hands its magic."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("run_line_magic", "run_cell_magic") and node.args
            and isinstance(node.args[0], ast.Constant) and node.args[0].value in RUNS_CODE):
        return []
    return [arg.value for arg in node.args[1:] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]


def _after_options(code: str) -> ast.Module | None:
    """The code, read after as few of its leading words as it takes: the magic's options (`-n 3`) come
    first, then the code it runs, which must parse for it to run at all. None when nothing parses."""
    words = code.split(" ")
    for start in range(len(words)):
        if (tree := parsed_cell(" ".join(words[start:]))) is not None:
            return tree
    return None
