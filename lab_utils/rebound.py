"""A module the lesson imported from lab_utils, rebound by a cell of the notebook (`rules = [...]`).

The lesson's own cells that use the module then fail, and the student may not connect the error to
the helper they named. Tests reach lab_utils by its full name, so they are not affected. The first test
after the rebinding names it on stderr: Validate lists a test cell that wrote there, and grading counts
only errors.
"""

from __future__ import annotations

import ast
import sys
from types import ModuleType


def rebound_modules(namespace: dict) -> list[tuple[str, str]]:
    """(name, module) for each lab_utils module that a cell run in `namespace` imported
    (`from lab_utils import rules`) under a name that now holds something else."""
    found = {}
    for source in namespace.get("In", ()):  # IPython's history of the cells run, where there is one
        if "from lab_utils" not in source:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lab_utils"):
                package = sys.modules.get(node.module)
                for alias in node.names:
                    if isinstance(imported := getattr(package, alias.name, None), ModuleType):
                        found[alias.asname or alias.name] = imported
    return [(name, module.__name__) for name, module in found.items()
            if name in namespace and namespace[name] is not module]


def warn_if_rebound(namespace: dict) -> None:
    """Say so on stderr, once per kernel and name: Validate shows the line, which grading does not count."""
    for name, module in rebound_modules(namespace):
        if (name, id(namespace[name])) not in _told:
            _told.add((name, id(namespace[name])))
            print(f"`{name}` is a {type(namespace[name]).__name__} now, not the module {module} that the lesson "
                  "imported: rename yours, or the lesson's cells that use it fail.", file=sys.stderr)


_told: set[tuple[str, int]] = set()  # (name, object) already named in this kernel: state, not a constant
