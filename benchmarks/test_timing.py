"""`make test-timing`: the suite in one process and as `make test` runs it (pytest-xdist), timed
back to back on this machine.

    python benchmarks/test_timing.py --parallel "-n auto --dist loadfile --no-loadscope-reorder" [tests/unit ...]

Paths after the options narrow both runs to part of the suite.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time

from lab_utils.paths import ROOT


def timed_run(args: list[str]) -> tuple[float, str]:
    """Wall seconds of one pytest run, and its summary line."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                         cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = run.stdout.strip().splitlines()
    return seconds, lines[-1] if lines else run.stderr.strip()[-300:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parallel", default="-n auto --dist loadfile --no-loadscope-reorder", help="what `make test` adds")
    parser.add_argument("tests", nargs="*", help="part of the suite (default: all of it)")
    args = parser.parse_args()
    runs = {"one process": ["-p", "no:xdist"], f"make test: {args.parallel}": shlex.split(args.parallel)}
    times = {}
    for name, extra in runs.items():
        times[name], summary = timed_run([*extra, *args.tests])
        print(f"{name:<36} {times[name]:7.1f} s   {summary}", flush=True)
    one, parallel = times.values()
    print(f"{'make test / one process':<36} {parallel / one:7.2f}   (goal: at most 0.50)")


if __name__ == "__main__":
    main()
