"""HTML feedback for every submission graded by its last autograde: feedback/<student>/<lesson>/."""

from __future__ import annotations

import datetime
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

from lab_utils.course.autograde import (Outcome, failure_reason, graded_copy, handed_in_again, interrupted, score,
                                       statuses)
from lab_utils.course.config import api, submissions
from lab_utils.paths import ROOT


def stale(root: Path, student: str, lesson: str, last: dict) -> str | None:
    """Why the autograded copy is not the submission's current grade, or None."""
    if last.get("problem"):
        return f"its last autograde failed ({last['problem']}); grade it again first"
    if not graded_copy(root, student, lesson).exists():
        return "not autograded (or its autograded copy was removed): run `make autograde` first"
    if handed_in_again(root, student, lesson):
        return "handed in again since it was graded: run `make autograde` first"
    return None


def feedback_all(root: Path = ROOT, only: str | None = None,
                 students: list[str] | None = None) -> Iterator[Outcome]:
    """Feedback for every autograded submission (of one lesson, of some students); a stale grade gets none,
    and is reported, as is a submission with no autograded copy (never graded, its autograde failed, or
    `make clean`)."""
    root = Path(root)
    last = statuses(root)
    grader = api(root)
    # A failure of a submission that is no longer there (its folder removed) is nobody's to fix.
    failed = {key for key, outcome in last.items() if outcome.get("problem") and only in (None, key[1])
              and (root / "submitted" / key[0] / key[1]).is_dir()}
    for student, lesson in sorted({*submissions(root, "autograded", only), *submissions(root, only=only)} | failed):
        if students and student not in students:
            continue
        start = time.perf_counter()
        problem = stale(root, student, lesson, last.get((student, lesson), {}))
        if not problem:
            result = grader.generate_feedback(lesson, student)
            if interrupted(result):
                raise KeyboardInterrupt
            problem = None if result["success"] else f"nbgrader failed ({failure_reason(result)})"
        notes = []
        if not problem:
            stamp(root / "feedback" / student / lesson)
            if waiting := score(lesson, student, root).waiting:
                notes.append(f"{waiting:g} points still wait for hand grading: this feedback shows them as none")
        yield Outcome(student, lesson, problem=problem, notes=notes, seconds=time.perf_counter() - start)


def stamp(folder: Path) -> None:
    """`nbgrader release_feedback` needs the timestamp.txt and submission_secret.txt that
    `nbgrader collect` brings along; a submission placed by hand has neither.

    It then gets the time of its feedback, and a secret of its own: its feedback is released
    (and can be sent by hand); only a student who submitted through the exchange can fetch it.
    """
    made = {"timestamp.txt": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z"),
            "submission_secret.txt": secrets.token_hex(16)}
    for name, text in made.items():
        if not (folder / name).exists():
            (folder / name).write_text(text)
