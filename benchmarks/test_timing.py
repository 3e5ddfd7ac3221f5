"""`make test-timing`: `make test` beside the suite in one process, timed back to back on this machine,
and beside the suite as it was before it ran in parallel (commit BEFORE, 527 tests, one process),
run from a throwaway checkout of that commit.

    python benchmarks/test_timing.py --parallel "-n auto --dist loadfile --no-loadscope-reorder" [tests/unit ...]

Paths after the options narrow the runs of today's suite to part of it, and leave the old suite out.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab_utils.paths import ROOT

BEFORE = "b962049"  # the suite as it stood when the goal was set: 527 tests, run in one process


def timed_run(args: list[str], root: Path = ROOT) -> tuple[float, str]:
    """Wall seconds of one pytest run of the suite in `root`, and its summary line."""
    # Another checkout's lab_utils must come before the one .venv has installed from this folder.
    env = {**os.environ, "PYTHONPATH": str(root)} if root != ROOT else None
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                         cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = run.stdout.strip().splitlines()
    return seconds, lines[-1] if lines else run.stderr.strip()[-300:]


def timed_before(commit: str) -> tuple[float, str]:
    """The suite at `commit`, in one process, from a checkout in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        checkout = Path(tmp) / "before"
        added = subprocess.run(["git", "worktree", "add", "--detach", str(checkout), commit], cwd=ROOT,
                               capture_output=True, text=True)
        if added.returncode:
            sys.exit(f"cannot check out {commit} (a shallow clone? `git fetch --unshallow`): {added.stderr.strip()}")
        try:
            return timed_run(["-p", "no:xdist"], checkout)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(checkout)], cwd=ROOT, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parallel", default="-n auto --dist loadfile --no-loadscope-reorder",
                        help="what `make test` adds")
    parser.add_argument("--before", default=BEFORE, help="the commit of the old suite ('' leaves it out)")
    parser.add_argument("tests", nargs="*", help="part of today's suite (default: all of it)")
    args = parser.parse_args()
    runs = {"one process": ["-p", "no:xdist", *args.tests],
            f"make test: {args.parallel}": [*shlex.split(args.parallel), *args.tests]}
    times = {}
    if args.before and not args.tests:
        name = f"before ({args.before}), one process"
        times[name], summary = timed_before(args.before)
        print(f"{name:<36} {times[name]:7.1f} s   {summary}", flush=True)
    for name, extra in runs.items():
        times[name], summary = timed_run(extra)
        print(f"{name:<36} {times[name]:7.1f} s   {summary}", flush=True)
    *others, parallel = times.values()
    for name, seconds in zip(times, others):
        print(f"{'make test / ' + name.split(',')[0]:<36} {parallel / seconds:7.2f}   (goal: at most 0.50)")


if __name__ == "__main__":
    main()
