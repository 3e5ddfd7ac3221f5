"""Shared helpers for the notebook tests: run a notebook, find its cells, build submissions."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbgrader.preprocessors import ClearHiddenTests
from traitlets.config.loader import PyFileConfigLoader

from lab_utils.course import lesson_names
from lab_utils.paths import ROOT

LESSONS = lesson_names(ROOT)
FIXTURES = ROOT / "tests" / "fixtures"
# Outputs are all in once the last cell ran: kill the kernel rather than wait (about a second)
# for its interpreter to tear a lesson's imports down.
SHUTDOWN = "immediate"
# Tracebacks in IPython's plain form where tests read only each error's name and message: the default
# form looks up the module of every frame among the thousands a lesson imports, which took about a
# sixth of the solutions' runs with every fixture answer tried in them.
PLAIN_TRACEBACKS = ["--InteractiveShell.xmode=Plain"]


class UnixSocketKernelManager(AsyncKernelManager):
    """A kernel reached over unix sockets in a folder of its own: two test workers that start kernels
    at once cannot pick the same free TCP port (ZMQError: Address already in use)."""

    async def _async_pre_start_kernel(self, **kw):
        self._sockets = tempfile.TemporaryDirectory(prefix="test-kernel-")  # removed with the manager
        self.transport, self.ip = "ipc", os.path.join(self._sockets.name, "ipc")
        return await super()._async_pre_start_kernel(**kw)


def notebook_path(folder: str, lesson: str, root: Path = ROOT) -> Path:
    return root / folder / lesson / f"{lesson}.ipynb"


def execute(source: Path, workdir: Path, allow_errors: bool = False) -> nbformat.NotebookNode:
    """Run a copy of a lesson folder in `workdir`; the repository is never written to."""
    shutil.copytree(source.parent, workdir, dirs_exist_ok=True)
    nb = nbformat.read(workdir / source.name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors, shutdown_kernel=SHUTDOWN,
                   kernel_manager_class=UnixSocketKernelManager,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def once_per_run(folder: Path, name: str, make: Callable[[], dict]) -> dict:
    """What `make` returns (JSON), made by the first caller in any worker of the test run and saved
    as `folder`/<name>.json; a lock makes the others wait for it and read it. `make` writes only to
    `folder`/<name>/, which a caller that failed midway (a kernel that did not start) may have left:
    the next caller starts it afresh, so that its error is not repeated as another here."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            shutil.rmtree(folder / name, ignore_errors=True)
            saved.write_text(json.dumps(make()), encoding="utf-8")
    return json.loads(saved.read_text(encoding="utf-8"))


def released_once(lesson: str, folder: Path) -> nbformat.NotebookNode:
    """The released lesson run once per test run, its exercises unfinished, with the outputs a
    student sees (figures inline, as in JupyterLab)."""
    def make() -> dict:
        return execute(notebook_path("lessons", lesson), folder / lesson, allow_errors=True)

    return nbformat.from_dict(once_per_run(folder, lesson, make))


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def errors(nb) -> list[tuple[int, dict, str]]:
    """(cell index, nbgrader metadata, exception name) for every error output."""
    return [(i, nbgrader_meta(cell), out["ename"])
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def stray_errors(nb) -> list[str]:
    """Errors an unfinished lesson must not show: outside an exercise, or not NotImplementedError."""
    return [f"cell {index} ({meta.get('grade_id', 'not an exercise')}) raised {ename}"
            for index, meta, ename in errors(nb)
            if not ((meta.get("solution") or meta.get("grade")) and ename == "NotImplementedError")]


def fixture_answers(kind: str, lesson: str) -> dict[str, str]:
    """A fixture's answers by grade_id, e.g. fixture_answers("partial", "01_naive_memory")."""
    return {grade_id: body for grade_id, _, body in fixture_sections(kind, lesson)}


def partial_answers(lesson: str) -> dict[str, str]:
    return fixture_answers("partial", lesson)


def submit(root: Path, student: str, lesson: str, nb) -> Path:
    """Hand a notebook in as nbgrader expects it: submitted/<student>/<lesson>/<lesson>.ipynb."""
    path = notebook_path(f"submitted/{student}", lesson, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def with_answers(released: Path, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with some answer cells filled in."""
    nb = nbformat.read(released, as_version=4)
    cells = {nbgrader_meta(c).get("grade_id"): c for c in nb.cells if nbgrader_meta(c).get("solution")}
    unknown = set(answers) - set(cells)
    if unknown:
        raise KeyError(f"{released.name}: the fixture names no answer cell {sorted(unknown)}")
    for grade_id, source in answers.items():
        cells[grade_id].source = source
    return nb


# --- Exercises run one kernel at a time: the notebook once, then other answers to one exercise ---

SOLUTION_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.M)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def fixture_sections(kind: str, lesson: str) -> list[tuple[str, str, str]]:
    """(grade_id, rest of the header, body) for each `# %% <grade_id> ...` section of a fixture."""
    text = (FIXTURES / kind / f"{lesson}.py").read_text(encoding="utf-8")
    parts = re.split(r"^# %% (\S+)([^\n]*)\n", text, flags=re.M)
    return [(grade_id, header.strip(), body.strip() + "\n")
            for grade_id, header, body in zip(parts[1::3], parts[2::3], parts[3::3])]


def fixture_lessons(*kinds: str) -> list[str]:
    """The lessons that have every one of these fixture files."""
    return [lesson for lesson in LESSONS if all((FIXTURES / k / f"{lesson}.py").exists() for k in kinds)]


def solution_answer(cell) -> str:
    """An answer cell of the solution notebook as a student would write it: without the markers."""
    return SOLUTION_MARKER.sub("", cell.source)


def is_test(cell) -> bool:
    return cell.cell_type == "code" and bool(nbgrader_meta(cell).get("grade"))


@dataclass(frozen=True)
class Exercise:
    """A graded answer cell and the cells after it up to its last test cell."""

    grade_id: str
    answer: int  # index of the answer cell
    end: int  # index of the exercise's last test cell
    tests: tuple[int, ...]  # indices of its test cells

    @property
    def span(self) -> range:
        return range(self.answer, self.end + 1)


def exercises(nb) -> list[Exercise]:
    """The notebook's code answer cells that have test cells before the next answer cell."""
    answers = [i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("solution")]
    found = []
    for answer, following in zip(answers, answers[1:] + [len(nb.cells)]):
        tests = tuple(i for i in range(answer + 1, following) if is_test(nb.cells[i]))
        if nb.cells[answer].cell_type == "code" and tests:
            found.append(Exercise(nbgrader_meta(nb.cells[answer])["grade_id"], answer, tests[-1], tests))
    return found


def error_text(cell) -> str:
    """Everything a cell's error outputs say, without terminal colours ('' if it passed)."""
    return "\n".join(ANSI.sub("", "\n".join([out["ename"], out["evalue"], *out["traceback"]]))
                     for out in cell.get("outputs", []) if out.get("output_type") == "error")


class Kernel:
    """One kernel that runs a notebook's cells in order and can run any cell again in between.

    Starting a kernel and running a lesson from the top costs seconds; re-running one exercise's
    cells costs milliseconds. Cells run with errors allowed: the caller reads each cell's outputs.
    """

    def __init__(self, nb, workdir: Path, timeout: int = 120):
        self.nb = nb
        self.client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                                     shutdown_kernel=SHUTDOWN, interrupt_on_timeout=True,
                                     extra_arguments=PLAIN_TRACEBACKS,
                                     kernel_manager_class=UnixSocketKernelManager,
                                     error_on_timeout={"ename": "CellTimeoutError", "evalue": "timed out",
                                                       "traceback": [f"the cell ran over {timeout} s"]},
                                     resources={"metadata": {"path": str(workdir)}})
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "Kernel":
        self._stack.enter_context(self.client.setup_kernel())
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def run(self, index: int, source: str | None = None):
        """Run cell `index` (with another source if given) and return the cell with its outputs."""
        original = self.nb.cells[index]
        cell = nbformat.from_dict({**original, "source": original.source if source is None else source})
        if cell.cell_type == "code":
            # nbclient updates a display (a progress bar) through the notebook's cell: the one running.
            self.nb.cells[index] = cell
            try:
                self.client.execute_cell(cell, index)
            finally:
                self.nb.cells[index] = original
            # The original holds none of the outputs the cell displayed: an update sent later (a bar's
            # summary, when a loop left unfinished is closed) must not look for them there.
            self.client.clear_display_id_mapping(index)
        return cell

    def run_cells(self, start: int, stop: int) -> dict[int, dict]:
        """Run cells start..stop-1 in order; each cell as it ran, by index."""
        return {index: self.run(index) for index in range(start, stop)}

    def run_exercise(self, exercise: Exercise, answer: str, tests: dict[int, str] | None = None,
                     enough: Callable[[dict[int, dict]], bool] | None = None) -> dict[int, dict]:
        """Run `answer` in the exercise's answer cell, then the cells after it up to its last test
        (a test cell's source replaced where `tests` says), or until `enough(ran)` holds of the cells that ran;
        each cell as it ran, by index."""
        tests, ran = tests or {}, {}
        for i in exercise.span:
            ran[i] = self.run(i, answer if i == exercise.answer else tests.get(i))
            if enough is not None and enough(ran):
                break
        return ran


def error_message(cell) -> str:
    """What a cell's error says, `ename: evalue`, without the traceback's source lines ('' if it passed)."""
    return "\n".join(f"{out['ename']}: {ANSI.sub('', out['evalue'])}" for out in cell.get("outputs", [])
                     if out.get("output_type") == "error")


def failed_tests(exercise: Exercise, ran: dict[int, dict]) -> dict[int, str]:
    """What the exercise's test cells that failed in `ran` say, by cell index."""
    failed = {i: error_message(ran[i]) for i in exercise.tests if i in ran}
    return {i: text for i, text in failed.items() if text}


@functools.cache
def validate_width() -> int:
    """The width at which `nbgrader validate` cuts a line: the students' Validator.width (jupyter_config/,
    as make lab and Binder load it)."""
    return PyFileConfigLoader("nbgrader_config.py", str(ROOT / "jupyter_config")).load_config().Validator.width


def shown_whole(text: str, substring: str) -> bool:
    """Whether `nbgrader validate` shows `substring` uncut: it indents each line of an error by 4 and
    cuts it at validate_width()."""
    lines = ANSI.sub("", text).splitlines()
    return any(4 + line.index(substring) + len(substring) <= validate_width() - 3
               for line in lines if substring in line)


def released_tests(solution) -> dict[int, str]:
    """Test cell index -> that cell as released to students: nbgrader's own hidden-test removal."""
    clear = ClearHiddenTests()
    return {i: clear.preprocess_cell(copy.deepcopy(c), {}, i)[0].source for i, c in enumerate(solution.cells)
            if is_test(c)}


def hidden_test_cells(solution) -> set[int]:
    """The indices of the test cells that hold hidden tests: those the release changes."""
    return {i for i, source in released_tests(solution).items() if source != solution.cells[i].source}


@dataclass(frozen=True)
class Trial:
    """An answer to one exercise, tried in place of the reference answer."""

    grade_id: str
    answer: str
    label: str  # what the answer is, for messages
    released: bool = False  # True: run the tests as students see them; False: hidden tests too, as at autograde
    # A broken rule's words, which a visible test must say: its cells run only until one did and a hidden
    # test failed too, which is all that is asked of it. '': every cell runs.
    says: str = ""


@dataclass
class TrialRun:
    """A solution run once from the top, with answers tried in place of its reference answers."""

    notebook: nbformat.NotebookNode  # every cell with the outputs of its first run, in order
    failed: dict[Trial, dict[int, str]]  # each trial's failed test cells: index -> error text


class LeakedState(AssertionError):
    """A trial left state behind in the kernel that makes the reference answer fail its tests."""


def run_trials(lesson: str, folder: Path, trials: Iterable[Trial], timeout: int = 120,
               check_each: bool = False) -> TrialRun:
    """The solution notebook run once from the top, in one kernel, with every trial tried in it.

    At each exercise, after the reference answer and its tests ran, each of its trials runs in place
    of the reference answer with the cells after it up to the exercise's last test (a broken rule's
    only until its failures answer what is asked of it: `Trial.says`), and then the reference answer is
    put back, so every trial starts where a student's answer would (the other answers are the reference's).
    After the exercise's last trial the reference's tests run again and must pass; if they fail, a trial
    leaked state, and the lesson runs again with the tests after every trial (`check_each`), to name it.
    Writes only to `folder`, a copy of the lesson's folder.
    """
    trials = list(trials)
    source = notebook_path("solutions", lesson)
    shutil.copytree(source.parent, folder)
    solution = nbformat.read(source, as_version=4)
    released = released_tests(solution)
    todo: dict[str, list[Trial]] = {}
    for trial in trials:
        todo.setdefault(trial.grade_id, []).append(trial)
    unknown = set(todo) - {e.grade_id for e in exercises(solution)}
    if unknown:
        raise KeyError(f"{lesson}: no exercise is called {sorted(unknown)}")

    def reference(kernel: Kernel, exercise: Exercise, when: str, error=AssertionError) -> dict[int, dict]:
        ran = kernel.run_exercise(exercise, solution.cells[exercise.answer].source)
        failed = failed_tests(exercise, ran)
        if failed:
            raise error(f"{lesson} {exercise.grade_id}: the reference answer fails its tests{when}:\n"
                        f"{next(iter(failed.values()))[-800:]}")
        return ran

    hidden = hidden_test_cells(solution)

    def answered(trial: Trial, exercise: Exercise, ran: dict[int, dict]) -> bool:
        """Whether a broken rule's cells that ran failed a hidden test and a visible one saying its words whole."""
        failed = failed_tests(exercise, ran)
        return bool(hidden & set(failed)) and any(i not in hidden and shown_whole(text, trial.says)
                                                  for i, text in failed.items())

    results: dict[Trial, dict[int, str]] = {}
    first: dict[int, dict] = {}  # each cell as it ran first, by index
    try:
        with Kernel(solution, folder, timeout) as kernel:
            done = 0
            for exercise in exercises(solution):
                first |= kernel.run_cells(done, exercise.answer) | reference(kernel, exercise, "")
                tried = todo.get(exercise.grade_id, [])
                for trial in tried:
                    enough = functools.partial(answered, trial, exercise) if trial.says else None
                    ran = kernel.run_exercise(exercise, trial.answer, released if trial.released else None, enough)
                    results[trial] = failed_tests(exercise, ran)
                    if check_each:
                        reference(kernel, exercise, f" after {trial.label} (its state leaked)")
                    else:  # its tests once after the last trial: running them after each doubled the run
                        kernel.run(exercise.answer)
                if tried and not check_each:
                    reference(kernel, exercise, " after its trials", LeakedState)
                done = exercise.end + 1
            first |= kernel.run_cells(done, len(solution.cells))  # after the last exercise
    except LeakedState:
        shutil.rmtree(folder)
        return run_trials(lesson, folder, trials, timeout, check_each=True)
    executed = copy.deepcopy(solution)
    executed.cells = [first[index] for index in range(len(solution.cells))]
    return TrialRun(executed, results)


# The fixture students the grading tests grade: right answers written unlike the reference, one
# stated rule broken per exercise, and answers that hard-code the visible tests' literals.
STUDENTS = ("different", "one_rule_wrong", "hardcoded")


def student_trials(lesson: str, students: Iterable[str] = STUDENTS) -> list[Trial]:
    """Each fixture student's answer to each exercise (the released stub where the fixture gives
    none), labelled with the student, to be tried with the hidden tests, as autograde runs them."""
    released = nbformat.read(notebook_path("lessons", lesson), as_version=4)
    stubs = {nbgrader_meta(c)["grade_id"]: c.source for c in released.cells if nbgrader_meta(c).get("solution")}
    graded = [e.grade_id for e in exercises(released)]
    return [Trial(grade_id, answers.get(grade_id, stubs[grade_id]), student)
            for student in students for answers in [fixture_answers(student, lesson)] for grade_id in graded]


def points_lost(lesson: str, run: TrialRun) -> dict[str, float]:
    """The points each fixture student loses with the hidden tests, as autograde runs them: the
    failed test cells of the student's trials (student_trials), added up."""
    solution = nbformat.read(notebook_path("solutions", lesson), as_version=4)
    lost: dict[str, float] = {}
    for trial, failed in run.failed.items():
        if trial.label in STUDENTS and not trial.released:
            lost[trial.label] = lost.get(trial.label, 0) + sum(nbgrader_meta(solution.cells[i]).get("points", 0)
                                                               for i in failed)
    return lost
