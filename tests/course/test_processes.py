"""A fork bomb's end where RLIMIT_NPROC is the cap (grading as a user other than root): a pid namespace
made by bwrap, as the sandbox makes it, holds a "kernel" and its children; once their threads fill
the cap, all but bwrap's init and the kernel end, and the kernel may start no new process. Root,
whom RLIMIT_NPROC does not bind, cannot run a real bomb here: the children wait instead of forking."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab_utils.course import processes

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

CHILDREN = 12
# The "kernel": children and grandchildren that sleep, then it waits, ready once all have started.
KERNEL = f"""
import os, time
for _ in range({CHILDREN // 2}):
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(120)
        time.sleep(120)
        os._exit(0)
print("ready", flush=True)
time.sleep(120)
"""


@pytest.fixture
def sandbox():
    """bwrap's process, once its namespace holds init, the kernel and its CHILDREN descendants."""
    bwrap = subprocess.Popen(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                              "--unshare-pid", "--die-with-parent", sys.executable, "-c", KERNEL],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert bwrap.stdout.readline().strip() == "ready"
        assert len(settled(bwrap.pid, 2 + CHILDREN)) == 2 + CHILDREN, "the grandchildren did not start"
        yield bwrap.pid
    finally:
        bwrap.kill()
        bwrap.wait()


def settled(bwrap: int, count: int, seconds: float = 5) -> list[int]:
    """The namespace's processes, once there are `count` of them (the killed take a moment to go)."""
    deadline = time.monotonic() + seconds
    while len(members := processes.in_namespace(bwrap)) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return members


def test_the_namespace_is_listed_oldest_first(sandbox):
    members = processes.in_namespace(sandbox)
    assert len(members) == 2 + CHILDREN  # bwrap's init, the kernel, its descendants
    assert Path(f"/proc/{members[0]}/cmdline").read_bytes().startswith(b"bwrap")
    assert b"ready" in Path(f"/proc/{members[1]}/cmdline").read_bytes()
    assert sandbox not in members, "bwrap itself is outside the namespace it made"


def test_below_the_cap_nothing_ends(sandbox):
    before = processes.in_namespace(sandbox)
    assert not processes.end_fork_bomb(sandbox, cap=processes.threads(before) + 1)
    assert settled(sandbox, len(before)) == before


def test_at_the_cap_only_init_and_the_kernel_stay_and_the_kernel_may_fork_no_more(sandbox):
    before = processes.in_namespace(sandbox)
    assert processes.end_fork_bomb(sandbox, cap=processes.threads(before))
    assert settled(sandbox, 2) == before[:2]
    limits = Path(f"/proc/{before[1]}/limits").read_text()
    held = next(line for line in limits.splitlines() if line.startswith("Max processes")).split()
    assert held[2:4] == ["2", "2"], f"the kernel's RLIMIT_NPROC (soft, hard) should be init's and its own: {held}"
