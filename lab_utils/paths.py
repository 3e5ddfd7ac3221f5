"""Where the course reads its data and writes its work.

`DATA_DIR` is read-only course material: data/ at the top of a clone, or, when the course was
installed with pip (a wheel, Colab, a hub image), the copy the wheel carries in lab_utils/data.
`work_dir()` is where notebooks write (memory.jsonl, session.json, registries): work/ in a clone
(git-ignored), or work/ next to the running notebook when installed; the LAB_WORK_DIR
environment variable moves it (the test suite points it at a temporary folder; `~` means the home folder).
A lesson's folder, work_dir("lessonNN", ...), is held by one process at a time, for the process's life:
a second run of the lesson at once would overwrite files the first one is reading.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
INSTALLED = (PACKAGE_DIR / "data").is_dir()  # setup.py puts the data there in a wheel, never in a clone
DATA_DIR = PACKAGE_DIR / "data" if INSTALLED else ROOT / "data"
LOCK_FILE = ".lab-run.lock"  # a dot file: no lesson's listing (`*.jsonl`, `*.json`, `*.md`) matches it

_held: dict[Path, int] = {}  # folder -> this process's open, locked LOCK_FILE in it


class WorkFolderBusy(RuntimeError):
    """Another process holds this lesson's work folder."""


def work_root() -> Path:
    """The work folder itself, not created."""
    moved = os.environ.get("LAB_WORK_DIR")
    return Path(moved).expanduser() if moved else Path.cwd() / "work" if INSTALLED else ROOT / "work"


def work_dir(*parts: str) -> Path:
    """A folder under the work folder, created on first use; work_dir("lessonNN", ...) also holds lessonNN."""
    moved = os.environ.get("LAB_WORK_DIR")
    root = work_root()
    path = root.joinpath(*parts)
    try:
        path.mkdir(parents=True, exist_ok=True)
        if parts:
            hold(root / parts[0])
    except OSError as error:
        said = f"cannot create the work folder {path.absolute()}: {error.strerror}; {advice(moved)}"
        raise OSError(error.errno, said) from None
    return path


def advice(moved: str | None) -> str:
    """What to do about a work folder that cannot be written, for whoever chose it."""
    if not moved:
        return "make it writable, or set LAB_WORK_DIR to a folder that is"
    if moved == started_with("LAB_WORK_DIR"):
        return (f"LAB_WORK_DIR is {moved!r}, set in the environment this runs in; make that folder writable, "
                "or set LAB_WORK_DIR there to a folder that is")
    # A notebook that moves its work folder itself breaks when graded: there the grader sets it.
    return (f"LAB_WORK_DIR is {moved!r}, set by this notebook; a graded notebook can write only to the work "
            "folder the grader sets (and /tmp), so leave LAB_WORK_DIR to the grader rather than set it in a notebook")


def started_with(name: str) -> str | None:
    """An environment variable as this process started with it, before any cell of a notebook changed it."""
    try:
        start = Path("/proc/self/environ").read_bytes().split(b"\0")
    except OSError:  # no /proc (macOS): the environment as it is now
        return os.environ.get(name)
    prefix = os.fsencode(f"{name}=")
    return next((os.fsdecode(entry[len(prefix):]) for entry in start if entry.startswith(prefix)), None)


def hold(folder: Path) -> None:
    """Lock `folder` for this process's life (the kernel's, the script's): the lock goes when the process does.

    nbgrader's Validate runs a second kernel on the notebook while the student's own kernel holds the
    folder; it takes no lock, as before, rather than fail on the student's open notebook."""
    folder = folder.resolve()
    if folder in _held or os.environ.get("NBGRADER_EXECUTION") == "validate":
        return
    lock = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(lock, 20).decode(errors="replace").strip() or "unknown"
        os.close(lock)
        raise WorkFolderBusy(
            f"another run of this lesson (pid {holder}) is using the work folder {folder}: wait until that run "
            "ends (a notebook's kernel ends when it is shut down or restarted), or set LAB_WORK_DIR to another "
            "folder for this run") from None
    os.ftruncate(lock, 0)
    os.write(lock, str(os.getpid()).encode())
    _held[folder] = lock


def load_data(*parts: str):
    """A JSON file from data/, e.g. load_data("support", "raw_log.json")."""
    return json.loads(DATA_DIR.joinpath(*parts).read_text(encoding="utf-8"))
