"""`make test-timing`: the whole suite as it ran before (one process) and as `make test` runs it now
(pytest-xdist, arguments from the Makefile), timed back to back on this machine.

    python benchmarks/test_timing.py -n auto --dist loadgroup
"""

from __future__ import annotations

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
    parallel = sys.argv[1:] or ["-n", "auto", "--dist", "loadgroup"]
    runs = {"before: one process": ["-p", "no:xdist"], f"now: {' '.join(parallel)}": parallel}
    times = {}
    for name, args in runs.items():
        times[name], summary = timed_run(args)
        print(f"{name:<40} {times[name]:7.1f} s   {summary}", flush=True)
    before, now = times.values()
    print(f"{'now / before':<40} {now / before:7.2f}   (goal: at most 0.50)")


if __name__ == "__main__":
    main()
