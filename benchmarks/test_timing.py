"""`make test-timing`: `make test` beside the suite in one process, timed back to back on this machine,
and beside the suite as it was before it ran in parallel (commit BEFORE, 527 tests, one process),
run from a throwaway checkout of that commit.

    python benchmarks/test_timing.py --parallel "-n auto --dist loadfile --no-loadscope-reorder" [tests/unit ...]

Paths after the options narrow the runs of today's suite to part of it, and leave the old suite out.
Each run also gives the CPU time the whole machine spent meanwhile (the suite's kernels, browsers and
subprocesses, and whatever else the machine ran). Divided by the cores, it is the least wall time any
schedule of that much work could take.
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
from typing import NamedTuple

import psutil

from lab_utils.paths import ROOT

BEFORE = "b962049"  # the suite as it stood when the goal was set: 527 tests, run in one process


class Run(NamedTuple):
    seconds: float  # wall time
    cpu_seconds: float  # busy time of all the machine's cores meanwhile
    summary: str  # pytest's last line, then each failed test's name

    def __str__(self) -> str:
        busy = self.cpu_seconds / (self.seconds * psutil.cpu_count())
        return f"{self.seconds:7.1f} s  {self.cpu_seconds:6.0f} CPU-s ({busy:4.0%} busy)   {self.summary}"


def busy_seconds() -> float:
    """CPU seconds all cores have spent on work since boot (idle, I/O wait and steal left out)."""
    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


def timed_run(args: list[str], root: Path = ROOT) -> Run:
    """One pytest run of the suite in `root`, timed."""
    # Another checkout's lab_utils must come before the one .venv has installed from this folder.
    env = {**os.environ, "PYTHONPATH": str(root)} if root != ROOT else None
    start, busy = time.perf_counter(), busy_seconds()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *args],
                         cwd=root, env=env, capture_output=True, text=True)
    seconds, cpu_seconds = time.perf_counter() - start, busy_seconds() - busy
    lines = run.stdout.strip().splitlines()
    failed = "".join(f"\n    {line}" for line in lines if line.startswith("FAILED "))  # a timing run says what failed
    return Run(seconds, cpu_seconds, (lines[-1] if lines else run.stderr.strip()[-300:]) + failed)


def timed_before(commit: str) -> Run:
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
    timed = {}
    if args.before and not args.tests:
        name = f"before ({args.before}), one process"
        timed[name] = timed_before(args.before)
        print(f"{name:<36} {timed[name]}", flush=True)
    for name, extra in runs.items():
        timed[name] = timed_run(extra)
        print(f"{name:<36} {timed[name]}", flush=True)
    *others, parallel = timed.values()
    # No schedule on these cores runs make test's work in less than this: the bound parallelism leaves.
    least = parallel.cpu_seconds / psutil.cpu_count()
    for name, run in zip(timed, others):
        print(f"{'make test / ' + name.split(',')[0]:<36} {parallel.seconds / run.seconds:7.2f}   "
              f"(goal: at most 0.50; at least {least / run.seconds:.2f} with every core busy)")


if __name__ == "__main__":
    main()
