"""A pids cgroup of a kernel's own, which caps how many processes (threads included) it runs at once.

The sandbox caps processes with RLIMIT_NPROC, which binds every user but root. Grading as root
(containers, CI machines), a fork bomb is stopped here instead: the kernel starts inside a
cgroup whose `pids.max` is the cap. That takes a pids hierarchy root may write to: cgroup v1's
pids controller, or cgroup v2 where this process's cgroup or an ancestor has pids enabled in its
subtree (systemd's slices do). Where there is none, `parent()` is None and processes are not capped.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from contextlib import suppress
from pathlib import Path

from lab_utils.course.processes import kill, started, threads

PREFIX = "lab-kernel-"
PROC = Path("/proc")  # where this process's cgroups and mounts are read


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount point, root of the hierarchy there, super options) of each cgroup mount."""
    found = []
    for line in (PROC / "self" / "mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        fstype, _source, options = (tail.split() + ["", ""])[:3]
        if fstype in ("cgroup", "cgroup2"):
            parts = fields.split()
            found.append((fstype, parts[4], parts[3], set(options.split(","))))
    return found


def parent() -> Path | None:
    """Where a kernel's cgroup can be made, in a pids hierarchy this process may write to: its own
    cgroup (v1), or its own or the nearest ancestor whose subtree has pids (v2); None if nowhere."""
    try:
        memberships = (PROC / "self" / "cgroup").read_text().splitlines()
        mounts = _mounts()
    except OSError:
        return None
    for membership in memberships:
        _, controllers, path = membership.split(":", 2)
        for fstype, point, root, options in mounts:
            v1 = fstype == "cgroup" and "pids" in options and "pids" in controllers.split(",")
            v2 = fstype == "cgroup2" and controllers == ""
            if not (v1 or v2) or not path.startswith(root):
                continue
            here = Path(point) / path[len(root):].lstrip("/")
            if v2:  # pids.max comes with a child where the subtree has pids: here, or an ancestor
                here = next((c for c in (here, *here.parents) if c.is_relative_to(point) and pids_in_subtree(c)), None)
            if here is not None and os.access(here, os.W_OK):
                return here
    return None


def pids_in_subtree(group: Path) -> bool:
    subtree = group / "cgroup.subtree_control"
    return subtree.exists() and "pids" in subtree.read_text().split()


def create(limit: int) -> Path:
    """A new cgroup capped at `limit` processes, under `parent()` (which must not be None)."""
    base = parent()
    for stale in left_by_killed_graders(base):
        with suppress(OSError):
            stale.rmdir()
    group = base / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / "pids.max").write_text(str(limit))
    return group


def left_by_killed_graders(base: Path) -> list[Path]:
    """What graders that were killed left under `base` (a live grader's may be empty yet)."""
    return [made for made in base.glob(f"{PREFIX}*") if not creator_alive(made)]


def creator_alive(group: Path) -> bool:
    """Whether the process that created the cgroup (its pid is in the name) is still running."""
    return Path("/proc", group.name.removeprefix(PREFIX).split("-")[0]).exists()


def enter(group: Path, command: list[str]) -> list[str]:
    """`command`, started inside the cgroup: a shell joins it, then becomes the command (exec)."""
    return ["sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh", str(group / "cgroup.procs"), *command]


def hit_the_cap(group: Path) -> bool:
    """Whether a process in the cgroup was refused for the cap (pids.events counts it as max)."""
    return int((group / "pids.events").read_text().split()[1]) > 0


def hold(group: Path, keep: int) -> None:
    """Kill every process in the cgroup but the `keep` started first, and let those start no more:
    pids.max becomes their threads. A fork bomb's copies of the kernel keep every core busy, so the
    kernel could not even answer an interrupt."""
    alive = []
    for pid in _members(group):
        with suppress(OSError):
            alive.append((started(pid), pid))
    first = [pid for _, pid in sorted(alive)[:keep]]
    (group / "pids.max").write_text(str(threads(first)))
    kill(pid for _, pid in sorted(alive)[keep:])


def _members(group: Path) -> list[int]:
    return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]


def remove(group: Path, wait_seconds: float = 5) -> None:
    """Kill whatever is still in the cgroup, then remove it."""
    deadline = time.monotonic() + wait_seconds
    while True:
        with suppress(OSError):
            kill(_members(group))
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:  # EBUSY while the killed processes are being reaped
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
