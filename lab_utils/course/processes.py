"""The processes of one sandbox, seen from outside it: which they are, their threads, and an end to a
fork bomb among them.

A sandboxed kernel runs in a pid namespace of its own (bwrap's `--unshare-pid`): bwrap's init, then
the kernel, then whatever the student's code started. Grading as a user other than root, the cap on
them is RLIMIT_NPROC, which has no counter of refusals as a cgroup has: a namespace whose threads
fill the cap has met it.
"""

from __future__ import annotations

import os
import resource
import signal
from contextlib import suppress
from pathlib import Path

# bwrap's init and the kernel: what stays when a fork bomb's copies end.
KEPT = 2


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command's name (its state is the first)."""
    return Path("/proc", str(pid), "stat").read_text().rsplit(")", 1)[1].split()


def started(pid: int) -> int:
    """When the process started, in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    return int(_stat(pid)[19])


def threads(pids) -> int:
    count = 0
    for pid in pids:
        with suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count


def kill(pids) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def in_namespace(bwrap: int) -> list[int]:
    """The live processes of the pid namespace that the bwrap process `bwrap` made, oldest first (a
    killed child the kernel has not reaped yet is dead; it holds its slot until then, but runs no more)."""
    def namespace(pid) -> str | None:
        with suppress(OSError):
            return os.readlink(f"/proc/{pid}/ns/pid")
        return None

    outside = namespace(bwrap)
    children = Path(f"/proc/{bwrap}/task/{bwrap}/children")
    with suppress(OSError):
        inside = {namespace(child) for child in children.read_text().split()} - {None, outside}
        if inside:
            found = []
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit() and namespace(entry.name) in inside:
                    with suppress(OSError):
                        if _stat(int(entry.name))[0] not in ("Z", "X"):
                            found.append((started(int(entry.name)), int(entry.name)))
            return [pid for _, pid in sorted(found)]
    return []


def end_fork_bomb(bwrap: int, cap: int) -> bool:
    """If the sandbox's threads fill `cap`, end every process in it but bwrap's init and the kernel,
    and let the kernel start no new one (its RLIMIT_NPROC becomes what is left). Stopped first, then
    killed: while every slot is held nothing can fork, and a killed copy would free one. True if it
    ended a bomb."""
    members = in_namespace(bwrap)
    if len(members) <= KEPT or threads(members) < cap:
        return False
    for _ in range(100):  # copies forked between a listing and its signals are in the next listing
        rest = in_namespace(bwrap)[KEPT:]
        running = [pid for pid in rest if not _stopped(pid)]
        if not running:
            break
        for pid in running:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
    left = threads(members[:KEPT])
    with suppress(OSError):
        resource.prlimit(members[KEPT - 1], resource.RLIMIT_NPROC, (left, left))
    kill(rest)
    return True


def _stopped(pid: int) -> bool:
    with suppress(OSError):
        return _stat(pid)[0] in ("T", "t")
    return True  # gone
