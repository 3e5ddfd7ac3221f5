"""The grading day: every submission through nbgrader autograde, in parallel, none able to stop the others.

Each submission is checked before nbgrader sees it, graded with its kernel in the sandbox, and
its outcome is recorded in autograde_status.json: grades.csv and feedback read the last outcome,
so a resubmission that failed after an earlier success is never reported with the old grade.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from jsonschema.exceptions import best_match
from nbformat.validator import get_validator
from nbgrader.api import Gradebook, MissingEntry, SubmittedAssignment
from nbgrader.plugins import BasePlugin
from nbgrader.utils import is_solution, parse_utc
from sqlalchemy.exc import SAWarning
from traitlets.config import Config

from lab_utils.course import integrity, tampering
from lab_utils.course.config import api, gradebook, late_penalty, lesson_names, submissions
from lab_utils.course.sandbox import incidents
from lab_utils.files import atomic_write_text
from lab_utils.paths import PACKAGE_DIR, ROOT

STATUS_FILE = "autograde_status.json"
KERNEL_LOGS = "autograde_logs"  # <student>/<lesson>.log: what each submission's kernel wrote to stderr
# autograded/<BEING_GRADED>/<student>/<lesson>/: a submission's autograded copy as it was before the grading under
# way, put back when the run stops midway. nbgrader removes the copy of a submission it was interrupted on, and
# the copy holds what each hand grade was given for.
BEING_GRADED = ".being_graded"
# Points after a late penalty, as a gradebook shows them: a share of a score carries float noise
# (8 * 0.3 is 2.4000000000000004).
POINT_DECIMALS = 2


@dataclass(frozen=True)
class Score:
    """A submission's points as the gradebook holds them; `auto_*` counts code tests only."""

    score: float  # after the late penalty
    max_score: float
    auto_score: float
    auto_max: float
    penalty: float = 0.0
    seconds_late: float = 0.0
    waiting: float = 0.0  # points of answers that wait for a hand grade


def points(s: SubmittedAssignment, late: BasePlugin) -> Score:
    """The Score of a gradebook submission, its late penalty (`late`: the course's plugin) worked out
    on the points it has now: nbgrader's, kept from the autograde, misses a hand grade given since."""
    waiting = sum(g.max_score for nb in s.notebooks for g in nb.grades if g.needs_manual_grade)
    penalty = 0.0
    if s.total_seconds_late > 0:
        penalty = sum(min(nb.score, max(0.0, late.late_submission_penalty(s.student.id, nb.score, s.total_seconds_late)
                                        or 0.0)) for nb in s.notebooks)
    return Score(round(s.score - penalty, POINT_DECIMALS), s.max_score, s.code_score, s.max_code_score,
                 round(penalty, POINT_DECIMALS), s.total_seconds_late, waiting)


def score(lesson: str, student: str, root: Path = ROOT) -> Score:
    with gradebook(root) as gb:
        return points(gb.find_submission(lesson, student), late_penalty(root))


@dataclass
class Outcome:
    """One submission through one step: done (with a score when graded) or not (a problem)."""

    student: str
    lesson: str
    score: Score | None = None
    problem: str | None = None
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def __str__(self) -> str:
        where = f"{self.student}/{self.lesson}"
        if self.problem:
            return f"NOT DONE  {where}: {self.problem}"
        points = ""
        if self.score:
            points = f"  {self.score.score:g}/{self.score.max_score:g}"
            if self.score.waiting:
                points += f" ({self.score.waiting:g} points wait for hand grading)"
        lines = [f"done      {where}{points}  ({self.seconds:.1f} s)"]
        lines += [f"  FLAG    {where}: {flag}" for flag in integrity.in_short(self.flags)]
        return "\n".join(lines + [f"  note    {where}: {note}" for note in self.notes])


def failure_reason(result: dict) -> str:
    """The telling line of a failed nbgrader step: the last exception in its log, not its summary."""
    lines = [line.strip() for line in f"{result.get('log')}\n{result.get('error')}".splitlines()]
    raised = [line for line in lines if re.match(r"[\w.]+(Error|Exception): ", line)
              and "NbGraderException" not in line]
    return (raised or [line for line in lines if line] or ["no log"])[-1]


def kernel_said(log: Path, root: Path) -> str:
    """The last line the kernel wrote to stderr, and where the rest is (a kernel that would not start
    says why there, e.g. bwrap's refusal); "" when it wrote nothing."""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines()] if log.exists() else []
    lines = [line for line in lines if line]
    return f"; its kernel's last message: {lines[-1][:300]!r} (all in {log.relative_to(root)})" if lines else ""


def precheck(student: str, lesson: str, root: Path, gb: Gradebook) -> str | None:
    """Why the submission cannot be graded, checked before nbgrader sees it; None when it can."""
    try:
        released = gb.find_notebook(lesson, lesson)
    except MissingEntry:
        if lesson in lesson_names(root):
            return "the lesson is not in the gradebook: run `make release` first"
        return f"no lesson is called {lesson!r}"
    folder = Path(root) / "submitted" / student / lesson
    path = folder / f"{lesson}.ipynb"
    if not path.exists():
        found = sorted(p.name for p in folder.glob("*.ipynb"))
        hint = f"found {', '.join(found)}; rename it" if found else "the folder holds no notebook"
        return f"no {path.name} ({hint})"
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # a broken file can make nbformat raise almost anything
        return f"{path.name} is not a valid notebook ({not_a_notebook(path, error)})"
    if problem := timestamp_problem(folder / "timestamp.txt"):
        return problem
    ids = [cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") for cell in nb.cells]
    present = {i for i in ids if i}
    copied = sorted(i for i in present if ids.count(i) > 1)
    if copied:
        return f"cells copied ({', '.join(copied)}): nbgrader cannot tell a copy from its original"
    # Edited, renamed and deleted test cells are integrity's (a flag); an answer cell cannot be put back.
    answers = sorted({cell.name for cell in released.solution_cells} - present)
    if answers:
        return f"answer cells deleted ({', '.join(answers)}): nbgrader cannot grade without them"
    return None


def not_a_notebook(path: Path, error: Exception) -> str:
    """What is wrong in a file nbformat could not read (`error`): when it is JSON, what the notebook format finds
    wrong in it, since nbformat's own error is then often its reader's ("'int' object is not iterable")."""
    try:
        found = json.loads(path.read_bytes())
    except ValueError:  # not JSON, or not text: nbformat says so
        return f"{type(error).__name__}: {error}"
    wrong_by_place: dict[str, list[str]] = {}
    for found_wrong in get_validator(version=4, name="jsonschema").iter_errors(found):
        wrong = best_match([found_wrong])  # of the kinds of cell a cell may be, the one it came closest to
        place = "/".join(map(str, wrong.absolute_path)) or "the top level"
        wrong_by_place.setdefault(place, []).append(textwrap.shorten(wrong.message, 80))
    said = [f"{place}: {', '.join(messages)}" for place, messages in wrong_by_place.items()]
    return "; ".join(said) or f"{type(error).__name__}: {error}"


def timestamp_problem(path: Path) -> str | None:
    """Why nbgrader could not read the submission time in timestamp.txt (it would fail on it with
    an error of its own that names neither the file nor the fix); None when it can, or there is none."""
    if not path.exists():
        return None
    fix = ("write the time as nbgrader collect does (2026-01-16 09:30:00.000000 UTC), "
           "or delete the file to grade the submission as on time")
    try:
        text = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError:
        return f"timestamp.txt is not UTF-8 text: {fix}"
    try:
        parse_utc(text or None)  # nbgrader reads an empty file as no time
    except (ValueError, OverflowError):
        shown = text if len(text) <= 40 else text[:40] + "…"
        return f"timestamp.txt reads {shown!r}, which is not a time: {fix}"
    return None


def forget_a_time_taken_away(gb: Gradebook, student: str, lesson: str, folder: Path) -> None:
    """A submission's time is what its timestamp.txt says when it is graded. nbgrader keeps the time
    it read before once the file is gone or empty (deleted to grade a submission as on time)."""
    stamp = folder / "timestamp.txt"
    if stamp.exists() and stamp.read_text(encoding="utf-8").strip():
        return
    with suppress(MissingEntry):
        gb.find_submission(lesson, student).timestamp = None
        gb.db.commit()


def grade(root: Path, student: str, lesson: str, unsafe: bool = False) -> Outcome:
    """Check, autograde and read back one submission (a worker process runs this)."""
    # nbgrader's own gradebook code trips this SQLAlchemy warning on every submission; it is noise.
    warnings.filterwarnings("ignore", category=SAWarning)
    start = time.perf_counter()
    with gradebook(root) as gb:
        outcome = Outcome(student, lesson, problem=precheck(student, lesson, root, gb))
        if not outcome.problem:
            forget_a_time_taken_away(gb, student, lesson, Path(root) / "submitted" / student / lesson)
    if not outcome.problem:
        log = Path(root) / KERNEL_LOGS / student / f"{lesson}.log"
        log.unlink(missing_ok=True)  # this grading's messages only
        settings = Config()
        settings.Sandbox.enabled = not unsafe
        settings.Sandbox.kernel_log = str(log)
        graded_by_hand = hand_grades(root, student, lesson)
        keep_aside(root, student, lesson)
        result = api(root, settings).autograde(lesson, student)
        if interrupted(result):
            # The tasks of the kernel the interrupt ended would each print a traceback as they are collected.
            logging.getLogger("asyncio").disabled = True
            raise KeyboardInterrupt
        if log.exists() and not log.stat().st_size:
            log.unlink()  # a kernel that said nothing leaves no log
        if result["success"]:
            keep_hand_grades(root, student, lesson, graded_by_hand)
            outcome.score = score(lesson, student, root)
            if outcome.score.seconds_late:
                penalty = f", {outcome.score.penalty:g} points off" if outcome.score.penalty else ""
                outcome.notes.append(f"submitted {how_long(outcome.score.seconds_late)} after the due date{penalty}")
            graded = graded_copy(root, student, lesson)
            outcome.notes += [f"stopped: {what}"
                              for what in incidents(nbformat.read(graded, as_version=4), root, graded.parent)]
            outcome.flags = integrity.flags(graded) + tampering.of_submission(root, student, lesson)
        else:
            outcome.problem = (f"nbgrader failed ({failure_reason(result)}){kernel_said(log, root)}; "
                               f"`.venv/bin/nbgrader autograde {lesson} --student {student} --force` "
                               "shows its whole log")
        shutil.rmtree(aside(root, student, lesson))  # graded (or failed) to the end: no copy to put back
    outcome.seconds = time.perf_counter() - start
    return outcome


def interrupted(result: dict) -> bool:
    """Whether an nbgrader step stopped on Ctrl-C, which nbgrader reports as a failure of the submission."""
    return (result.get("error") or "").rstrip().endswith("KeyboardInterrupt")


def aside(root: Path, student: str, lesson: str) -> Path:
    return Path(root) / "autograded" / BEING_GRADED / student / lesson


def keep_aside(root: Path, student: str, lesson: str) -> None:
    """Copy the submission's autograded folder aside (an empty folder: there was none), whole or not at all:
    a run stopped while copying has not touched the folder yet."""
    kept, graded = aside(root, student, lesson), graded_copy(root, student, lesson).parent
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".copying-", dir=Path(root) / "autograded") as copying:
        copy = Path(copying) / "copy"
        if graded.is_dir():
            shutil.copytree(graded, copy)
        else:
            copy.mkdir()
        copy.rename(kept)


def put_back_interrupted(root: Path) -> None:
    """Every autograded folder as it was before a grading that was stopped midway (by Ctrl-C, or a
    reboot): its gradebook entry is the earlier grading's too, unless nbgrader was stopped while saving."""
    being_graded = Path(root) / "autograded" / BEING_GRADED
    for kept in sorted(being_graded.glob("*/*")):
        graded = graded_copy(root, kept.parent.name, kept.name).parent
        shutil.rmtree(graded, ignore_errors=True)
        if any(kept.iterdir()):
            graded.parent.mkdir(parents=True, exist_ok=True)
            kept.rename(graded)
    shutil.rmtree(being_graded, ignore_errors=True)


def hand_grades(root: Path, student: str, lesson: str) -> dict[str, tuple]:
    """What each hand grade of the submission was given for, as its last autograde left it (see graded_for)."""
    graded = graded_copy(root, student, lesson)
    try:
        with gradebook(root) as gb:
            marked = {g.name: g.auto_score for g in gb.find_submission_notebook(lesson, lesson, student).grades
                      if g.manual_score is not None}
        return graded_for(nbformat.read(graded, as_version=4).cells, marked) if marked else {}
    except (MissingEntry, FileNotFoundError):
        return {}


def graded_for(cells: list, marked: dict[str, float | None]) -> dict[str, tuple]:
    """grade_id -> (automatic score, what a person graded) of each cell in `marked` (grade_id ->
    automatic score): the cell itself if it is an answer (a written one), else every answer of the
    notebook (a test whose points a person changed)."""
    answers = tuple(cell.source for cell in cells if is_solution(cell))
    graded = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell.source if is_solution(cell) else answers
              for cell in cells}
    return {name: (auto, graded.get(name)) for name, auto in marked.items()}


def keep_hand_grades(root: Path, student: str, lesson: str, before: dict[str, tuple]) -> None:
    """nbgrader asks again for every hand grade after a regrade; one stands while what it was given
    for is unchanged (the same answer, graded again after a test was fixed). The others are removed:
    nbgrader would keep counting them, and show them in feedback, while asking for a new grade; a test
    whose points a person changed has its automatic points again."""
    if not before:
        return
    now = hand_grades(root, student, lesson)
    with gradebook(root) as gb:
        for g in gb.find_submission_notebook(lesson, lesson, student).grades:
            if not (g.needs_manual_grade and g.name in before):
                continue
            if now.get(g.name) == before[g.name]:
                g.needs_manual_grade = False
            else:  # given for another answer: the cell is graded as in a fresh submission
                g.manual_score = g.extra_credit = None
                g.needs_manual_grade = g.auto_score is None
                with suppress(MissingEntry):  # what the grader wrote of the earlier answer
                    gb.find_comment(g.name, lesson, lesson, student).manual_comment = None
        gb.db.commit()


def how_long(seconds: float) -> str:
    """A duration in words an instructor reads at a glance: '16 h 30 min', '2 days 3 h', '40 s'."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [(days, " day" if days == 1 else " days"), (hours, " h"), (minutes, " min")]
    return " ".join(f"{n}{unit}" for n, unit in parts if n) or f"{secs} s"


def _grade_job(job: tuple[Path, str, str, bool]) -> Outcome:
    return grade(*job)


def one_at_a_time(work: list[tuple[Path, str, str, bool]]) -> Iterator[Outcome]:
    for job in work:
        yield _grade_job(job)


def autograde_all(root: Path = ROOT, only: str | None = None, jobs: int = 1, unsafe: bool = False,
                  students: list[str] | None = None) -> Iterator[Outcome]:
    """Grade every submitted/<student>/<lesson>/ (of one lesson, of some students) in `jobs` processes,
    yielding each outcome as it finishes; a broken one is reported, never fatal."""
    root = Path(root)
    todo = [(s, lesson) for s, lesson in submissions(root, only=only) if not students or s in students]
    with gradebook(root) as gb:
        # Two workers must not both create one student.
        for student in sorted({student for student, _ in todo}):
            gb.update_or_create_student(student)
    work = [(root, student, lesson, unsafe) for student, lesson in todo]
    jobs = min(jobs, len(work))  # a worker with nothing to grade would still import nbgrader (seconds)
    put_back_interrupted(root)  # what a run stopped by a reboot left
    outcomes = one_at_a_time(work) if jobs <= 1 else in_parallel(work, jobs)
    try:
        for outcome in outcomes:
            record(root, outcome)
            yield outcome
    finally:
        outcomes.close()  # a run stopped early (Ctrl-C) ends its workers first
        put_back_interrupted(root)


def in_parallel(work: list[tuple[Path, str, str, bool]], jobs: int) -> Iterator[Outcome]:
    """Outcomes as they finish, from this process and `jobs - 1` workers drawing from one queue.

    This process grades from the start, while the workers are still importing nbgrader (seconds);
    a worker is handed the next submission the moment it finishes one.
    """
    todo, finished = deque(work), queue.SimpleQueue()
    # Fresh interpreters: nbgrader and SQLAlchemy state must not be shared through fork. A Ctrl-C in the
    # terminal reaches the workers too: this process ends them instead, since nbgrader would only fail their
    # submission, and an idle worker print a traceback.
    pool = ProcessPoolExecutor(jobs - 1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))

    def hand_out(previous: Future | None = None) -> None:
        """Give a worker the next submission; runs again, in the pool's thread, as each one finishes."""
        if previous is not None:
            finished.put(previous)
            if previous.cancelled():
                return
        with suppress(IndexError, RuntimeError):  # nothing left to hand out; the pool is shutting down
            pool.submit(_grade_job, todo.popleft()).add_done_callback(hand_out)

    try:
        for _ in range(jobs - 1):
            hand_out()
        for _ in work:
            job = None
            if finished.empty():
                with suppress(IndexError):
                    job = todo.popleft()
            yield _grade_job(job) if job else finished.get().result()
    except BaseException:  # Ctrl-C, or the run closed early: stop at once, not after every worker's submission
        for worker in multiprocessing.active_children():
            worker.kill()  # its kernel dies with it (bwrap's --die-with-parent, ipykernel's parent check)
        raise
    finally:
        pool.shutdown(cancel_futures=True)


def missing_release(root: Path) -> list[str]:
    """Lessons of solutions/ that the gradebook does not know yet (all of them on a fresh clone)."""
    if not (Path(root) / "gradebook.db").exists():
        return lesson_names(root)
    with gradebook(root) as gb:
        known = {a.name for a in gb.assignments}
    return [name for name in lesson_names(root) if name not in known]


def library_elsewhere() -> str | None:
    """Why a kernel of this environment would not run the grader's lab_utils, or None. An environment
    copied along with its course folder (`cp -a`) still imports the library of the folder it was made in."""
    with tempfile.TemporaryDirectory() as nowhere:  # as a kernel starts: no lab_utils beside it, no -m
        found = subprocess.run([sys.executable, "-P", "-c", "import lab_utils; print(lab_utils.__file__)"],
                               capture_output=True, text=True, cwd=nowhere)
    if found.returncode:
        return f"a kernel started here cannot import lab_utils ({found.stderr.strip().splitlines()[-1]})"
    where = Path(found.stdout.strip()).resolve().parent
    return None if where == PACKAGE_DIR else f"a kernel started here imports lab_utils from {where}, not {PACKAGE_DIR}"


# --- the last outcome of every submission, which grades.csv and feedback trust over the gradebook ---


def graded_copy(root: Path, student: str, lesson: str) -> Path:
    """The notebook nbgrader's autograde wrote for a submission, whose outputs are its grade's evidence."""
    return Path(root) / "autograded" / student / lesson / f"{lesson}.ipynb"


def handed_in_again(root: Path, student: str, lesson: str) -> bool:
    """Whether the submission changed after its autograded copy was written: its grade is out of date."""
    submitted = Path(root) / "submitted" / student / lesson / f"{lesson}.ipynb"
    graded = graded_copy(root, student, lesson)
    return submitted.exists() and graded.exists() and submitted.stat().st_mtime > graded.stat().st_mtime


def statuses(root: Path = ROOT) -> dict[tuple[str, str], dict]:
    """(student, lesson) -> {"problem", "flags", "notes"} of its last autograde."""
    path = Path(root) / STATUS_FILE
    if not path.exists():
        return {}
    return {tuple(key.split("/", 1)): value for key, value in json.loads(path.read_text()).items()}


def record(root: Path, outcome: Outcome) -> None:
    """Keep the outcome; a failed one also removes the feedback built from an earlier grade."""
    path = Path(root) / STATUS_FILE
    known = json.loads(path.read_text()) if path.exists() else {}
    kept = asdict(outcome)
    known[f"{outcome.student}/{outcome.lesson}"] = {key: kept[key] for key in ("problem", "flags", "notes")}
    atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True))
    if outcome.problem:
        shutil.rmtree(Path(root) / "feedback" / outcome.student / outcome.lesson, ignore_errors=True)
