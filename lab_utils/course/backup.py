"""A dated copy of the gradebook, whose hand grades no command can make again.

SQLite's own backup (Python's sqlite3 module, no program to install) copies a consistent state even
while the Formgrader or an autograde has the gradebook open, which copying the file does not."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path

from lab_utils.course.config import gradebook_missing

FOLDER = "backups"


def backup(root: Path) -> Path:
    """Copy root/gradebook.db to root/backups/gradebook-<date>-<time>.db, never over an earlier copy."""
    source = Path(root) / "gradebook.db"
    if missing := gradebook_missing(root):
        raise FileNotFoundError(missing)
    folder = Path(root) / FOLDER
    folder.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = folder / f"gradebook-{stamp}.db"
    copies = 1
    while target.exists():  # two backups within a second
        copies += 1
        target = folder / f"gradebook-{stamp}-{copies}.db"
    with closing(sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)) as read, \
            closing(sqlite3.connect(target)) as written:
        read.backup(written)
    return target
