"""lessons/ is exactly what `make release` makes from solutions/.

The nbgrader round trip (solution full marks, blank zero, partial in between, per lesson) is
test_grading_day.py, which grades a whole class the way an instructor does.
"""

import ast
import builtins
import collections
import importlib.util
import json
import re
import shutil

import nbformat
import pytest

from lab_utils import course
from lab_utils.course.cells import parsed_cell
from lab_utils.paths import ROOT
from nbtools import LESSONS, exercises, is_test, nbgrader_meta, notebook_path

# A reference a test cell switches off while the answer is tested: own_implementation(answer, "lab_utils.x.y", ...).
REFERENCE = re.compile(r"""["'](lab_utils(?:\.\w+)+)["']""")
EXERCISE_HEADER = re.compile(r"^### .*\((\d+) points?", re.M)


@pytest.fixture(scope="module")
def course_root(tmp_path_factory):
    """A throwaway course: a copy of solutions/, released by the same code as `make release`."""
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "solutions", root / "solutions")
    course.release(root)
    return root


@pytest.mark.parametrize("lesson", LESSONS)
def test_lessons_are_what_release_makes(lesson, course_root):
    generated = json.loads(notebook_path("lessons", lesson, course_root).read_text())
    committed = json.loads(notebook_path("lessons", lesson).read_text())
    assert committed == generated, f"lessons/{lesson} is stale: run `make release` and commit"


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_exercise_header_states_its_points(lesson):
    """"### Exercise 3 — … (9 points)": the points of the graded cells up to the next ### header."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    stated, counted, header = {}, {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (headers := re.findall(r"^### .*$", cell.source, re.M)):
            said = re.search(r"\((\d+) points?", headers[-1])
            header = headers[-1] if said else None
            if said:
                stated[header], counted[header] = int(said[1]), 0
        meta = cell.metadata.get("nbgrader", {})
        if header and meta.get("grade"):
            counted[header] += meta.get("points", 0)
    assert stated, f"{lesson} states no exercise's points"
    assert stated == counted, f"{lesson}: the headers' points, then the graded cells' ({counted})"


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_exercise_names_the_lab_utils_functions_its_tests_switch_off(lesson):
    """An answer that calls a switched-off reference loses points, so the exercise's text (from its
    header to its answer cell) names each one, in code: `hit_any` or `metrics.hit_any`."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    unnamed = {}
    for exercise in exercises(nb):
        header = max(i for i in range(exercise.answer)
                     if nb.cells[i].cell_type == "markdown" and EXERCISE_HEADER.search(nb.cells[i].source))
        text = "\n".join(c.source for c in nb.cells[header:exercise.answer] if c.cell_type == "markdown")
        switched_off = {name for i in exercise.tests for name in REFERENCE.findall(nb.cells[i].source)}
        missing = [name for name in sorted(switched_off)
                   if not re.search(rf"`[^`\n]*\b{re.escape(name.rsplit('.', 1)[1])}\b[^`\n]*`", text)]
        if missing:
            unnamed[exercise.grade_id] = missing
    assert not unnamed, f"{lesson}: the tests switch these off, and the exercise's text does not say so: {unnamed}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_assert_of_a_test_cell_says_which_rule_it_checks(lesson):
    """A failed assert shows its message in Validate and in the feedback, hidden ones included: a bare
    AssertionError would leave the student guessing which rule broke."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    bare = [(cell.metadata.nbgrader.grade_id, ast.unparse(node)[:80]) for cell in nb.cells if is_test(cell)
            for node in ast.walk(ast.parse(cell.source)) if isinstance(node, ast.Assert) and node.msg is None]
    assert not bare, f"{lesson}: asserts without a message: {bare}"


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ModuleNotFoundError:  # its parent is a module, not a package
        return False


@pytest.mark.parametrize("lesson", LESSONS)
def test_test_cells_reach_the_library_by_its_full_name(lesson):
    """An answer may name a helper like a module the lesson imported (`rules = [...]`): that breaks the
    lesson's own cells, which the student sees run, but must cost no test, which only grading runs.
    So test cells write `lab_utils.rules.redact`, never the lesson's `rules.redact`."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    modules = {alias.asname or alias.name for cell in nb.cells if cell.cell_type == "code" and not is_test(cell)
               and not nbgrader_meta(cell).get("solution") for node in ast.walk(ast.parse(cell.source))
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lab_utils")
               for alias in node.names if _is_module(f"{node.module}.{alias.name}")}
    through_lesson = sorted({(cell.metadata.nbgrader.grade_id, node.value.id) for cell in nb.cells if is_test(cell)
                             for node in ast.walk(ast.parse(cell.source)) if isinstance(node, ast.Attribute)
                             and isinstance(node.value, ast.Name) and node.value.id in modules})
    assert not through_lesson, f"{lesson}: test cells that reach a module by the lesson's name for it: {through_lesson}"
    # Nor does a test cell bind a short name of its own: `from lab_utils import metrics` would replace a
    # student's helper of that name for every later cell.
    binding = sorted((cell.metadata.nbgrader.grade_id, ast.unparse(node)) for cell in nb.cells if is_test(cell)
                     for node in ast.walk(ast.parse(cell.source))
                     if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lab_utils"))
    assert not binding, f"{lesson}: test cells that bind a name of lab_utils: {binding}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_two_test_cells_define_a_function_of_one_name(lesson):
    """Autograde holds a test cell to the functions of the test cells it calls (a notebook that defines one
    again fails them): two test cells with a function of one name, nested or not, would fail a full answer."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    cells = collections.defaultdict(set)
    for cell in filter(is_test, nb.cells):
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                cells[node.name].add(nbgrader_meta(cell)["grade_id"])
    twice = {name: sorted(ids) for name, ids in cells.items() if len(ids) > 1}
    assert not twice, f"{lesson}: functions of one name in several test cells: {twice}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_function_of_a_test_cell_is_decorated(lesson):
    """Autograde holds a test cell to the functions of the test cells it calls, by the code their names are
    bound to: a decorated one (@contextmanager) is bound to the decorator's wrapper, which autograde takes for
    a function the notebook defined again, and a full answer fails."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    decorated = sorted(node.name for cell in filter(is_test, nb.cells) for node in ast.walk(ast.parse(cell.source))
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list)
    assert not decorated, f"{lesson}: decorated functions in test cells: {decorated}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_cell_of_a_lesson_binds_a_builtin_its_tests_call(lesson):
    """Autograde names a test whose builtins (`any`, `list`) a notebook's own names replaced: the
    lesson's cells must bind none of them."""
    nb = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    tests = [parsed_cell(c.source) for c in nb.cells if is_test(c)]
    called = {n.id for tree in tests for n in ast.walk(tree) if isinstance(n, ast.Name)} & set(dir(builtins))
    others = [tree for c in nb.cells if c.cell_type == "code" and not is_test(c) and (tree := parsed_cell(c.source))]
    bound = {getattr(n, "id", getattr(n, "name", None)) for tree in others for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
             or isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    assert not called & bound, f"{lesson} binds {sorted(called & bound)}, which its tests call as builtins"
