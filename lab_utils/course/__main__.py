"""The instructor's commands (the Makefile's release, autograde, feedback, grades, student-repo, backup):

    python -m lab_utils.course release                 # lessons/ from solutions/, lessons into the gradebook
    python -m lab_utils.course autograde [--jobs N]    # every submitted/<student>/<lesson>/, sandboxed
    python -m lab_utils.course feedback                # HTML per student and lesson in feedback/
    python -m lab_utils.course grades                  # grades.csv, grades_canvas.csv, grades_by_exercise.*
    python -m lab_utils.course publish DEST [--url U]  # the students' repository, without the answers
    python -m lab_utils.course backup                  # a dated copy of gradebook.db in backups/

Every command takes `--root PATH` (default: this repository) and reads PATH/nbgrader_config.py.
autograde and feedback take `--lesson NAME` for one lesson and `--student ID` for one student.
autograde refuses to run student code without bubblewrap unless `--unsafe` is given. Exit status: 0
when everything was done, 1 when a submission could not be handled (listed at the end), 2 when the
command could not start, 130 when it was interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from sqlalchemy.exc import SAWarning

from lab_utils.course import autograde, config, feedback, publish, release, sandbox
from lab_utils.course.backup import backup
from lab_utils.paths import ROOT


def parse(argv: list[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, default=ROOT, help="the course folder (default: %(default)s)")
    parser = argparse.ArgumentParser(prog="python -m lab_utils.course", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("release", parents=[common], help="lessons/ from solutions/")
    grade = commands.add_parser("autograde", parents=[common], help="grade every submission")
    grade.add_argument("--lesson", help="this lesson only (default: every lesson)")
    grade.add_argument("--student", action="append", help="this student only (repeat for several)")
    grade.add_argument("--jobs", type=int, default=1,
                       help="processes grading at once: this one and N-1 workers (default: %(default)s)")
    grade.add_argument("--unsafe", action="store_true",
                       help="grade without the sandbox, with your own rights (only where bubblewrap cannot run)")
    notes = commands.add_parser("feedback", parents=[common], help="HTML feedback per submission")
    notes.add_argument("--lesson", help="this lesson only (default: every lesson)")
    notes.add_argument("--student", action="append", help="this student only (repeat for several)")
    commands.add_parser("grades", parents=[common], help="grades.csv and the LMS file")
    publish = commands.add_parser("publish", parents=[common], help="the students' repository, in DEST")
    publish.add_argument("dest", type=Path, help="a new or empty folder")
    publish.add_argument("--url", help="where the students' repository will be published (git URL): what each "
                                       "lesson's Colab cell installs from")
    commands.add_parser("backup", parents=[common], help="a dated copy of gradebook.db in backups/")
    return parser.parse_args(argv)


def report(command: str, outcomes: list[autograde.Outcome]) -> int:
    failed = [o for o in outcomes if o.problem]
    print(f"{command}: {len(outcomes) - len(failed)} of {len(outcomes)} submissions done")
    if command == "autograde":
        waiting = sum(o.score.waiting for o in outcomes if o.score)
        flagged = sum(bool(o.flags) for o in outcomes)
        submissions = "submission" if flagged == 1 else "submissions"
        print(f"  {waiting:g} points wait for hand grading (Formgrader); {flagged} {submissions} flagged "
              "(near-copies are found by `make grades`)")
    if failed:
        lines = [f"  {o.student}/{o.lesson}: {o.problem}" for o in failed]
        print("\n".join(["not done:", *lines]), file=sys.stderr)
    return 1 if failed else 0


def unknown_names(root: Path, args: argparse.Namespace) -> str | None:
    """Why --lesson or --student names nothing to work on (a typo would else do nothing, and succeed); None if
    both are known."""
    if args.lesson and args.lesson not in config.lesson_names(root):
        return f"no lesson is called {args.lesson!r}: the lessons are {', '.join(config.lesson_names(root))}"
    folders = ["submitted"] + (["autograded"] if args.command == "feedback" else [])
    known = sorted({student for folder in folders for student, _ in config.submissions(root, folder)})
    missing = [student for student in args.student or [] if student not in known]
    if missing:
        return (f"no student {', '.join(map(repr, missing))} in {' or '.join(f'{f}/' for f in folders)}: the students "
                f"there are {', '.join(known) or 'none yet'}")
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    root = args.root.resolve()
    if not (root / "solutions").is_dir():  # a mistyped --root would otherwise end in a traceback
        print(f"{root} is not a course folder: it has no solutions/ (give --root the folder that holds "
              "solutions/ and nbgrader_config.py)", file=sys.stderr)
        return 2
    # nbgrader's own gradebook code trips this SQLAlchemy warning on every submission; it is noise.
    warnings.filterwarnings("ignore", category=SAWarning)
    # A damaged gradebook would end each command in a traceback of SQLAlchemy's, and its backup replace a sound one.
    if args.command != "publish" and (damaged := config.gradebook_damaged(root)):
        print(damaged, file=sys.stderr)
        return 2
    if args.command == "release":
        for name in release(root):
            print(f"released lessons/{name}")
        return 0
    if args.command == "grades":
        if missing := config.gradebook_missing(root):  # nbgrader would create an empty one, and blank the LMS file
            print(missing, file=sys.stderr)
            return 2
        from lab_utils.course import export, grades  # pandas and matplotlib: half a second no other command pays

        table = grades.write_grades(root)
        with config.gradebook(root) as gb:
            export.write_canvas(root, table, gb)
        totals = table.groupby("student")[["score", "max_score"]].sum()
        print(f"wrote {', '.join(grades.GRADE_FILES + (export.CANVAS_FILE,))} in {root}\n{totals.to_string()}")
        return 0
    if args.command == "backup":
        try:
            print(f"copied gradebook.db to {backup(root).relative_to(root)}")
        except FileNotFoundError as missing:
            print(missing, file=sys.stderr)
            return 2
        return 0
    if args.command == "publish":
        publish.publish(root, args.dest.resolve(), args.url)
        print(f"published the students' repository in {args.dest}")
        if not args.url:
            print(f"  its lessons' Colab cells install the course from {publish.repository_url(root)}, this course's "
                  "repository: give the students' own (make student-repo URL=...) if students cannot reach it")
        return 0
    if args.command in ("autograde", "feedback") and (unknown := unknown_names(root, args)):
        print(unknown, file=sys.stderr)
        return 2
    if args.command == "autograde":
        if not (args.unsafe or sandbox.available()):
            print("bubblewrap is not installed (apt-get install bubblewrap): without it student code would "
                  "run with your rights. Install it, or pass --unsafe (make autograde UNSAFE=1) to grade "
                  "without a sandbox.", file=sys.stderr)
            return 2
        elsewhere = autograde.library_elsewhere()
        if elsewhere:
            print(f"{elsewhere}: every test would fail. The environment (.venv) must be this course folder's own, "
                  "and a copy made with `cp -a` keeps the original's: remove it (`rm -rf .venv`) and run the "
                  "command again, which sets it up anew (about a minute).", file=sys.stderr)
            return 2
        missing = autograde.missing_release(root)
        if missing:
            print(f"the gradebook has no {', '.join(missing)}: run `make release` first", file=sys.stderr)
            return 2
        if not (args.unsafe or sandbox.process_cap()):
            print("the sandbox cannot cap processes here: grading as root, with no pids cgroup root may create "
                  "(cgroup v1's pids controller, or a cgroup v2 with pids in its subtree). A fork bomb can then "
                  "fill the machine until the per-cell timeout makes nbgrader end its kernel.", file=sys.stderr)
        steps = autograde.autograde_all(root, args.lesson, args.jobs, args.unsafe, args.student)
    else:
        steps = feedback.feedback_all(root, args.lesson, args.student)
    outcomes = []
    try:
        for outcome in steps:
            print(outcome, flush=True)
            outcomes.append(outcome)
    except KeyboardInterrupt:
        steps.close()  # its workers end, and the submissions being graded are as they were
        done = f"{len(outcomes)} submission{'' if len(outcomes) == 1 else 's'}"
        print(f"{args.command}: interrupted after {done}, whose outcomes are kept: run the same command again to go on",
              file=sys.stderr)
        return 130
    return report(args.command, outcomes)


if __name__ == "__main__":
    sys.exit(main())
