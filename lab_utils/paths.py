"""Where the course reads its data and writes its work.

`DATA_DIR` is read-only course material: data/ at the top of a clone, or, when the course was
installed with pip (a wheel, Colab, a hub image), the copy the wheel carries in lab_utils/data.
`work_dir()` is where notebooks write (memory.jsonl, session.json, registries): work/ in a clone
(git-ignored), or work/ next to the running notebook when installed; the LAB_WORK_DIR
environment variable moves it (the test suite points it at a temporary folder).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
INSTALLED = (PACKAGE_DIR / "data").is_dir()  # setup.py puts the data there in a wheel, never in a clone
DATA_DIR = PACKAGE_DIR / "data" if INSTALLED else ROOT / "data"


def work_root() -> Path:
    """The work folder itself, not created."""
    return Path(os.environ.get("LAB_WORK_DIR") or (Path.cwd() / "work" if INSTALLED else ROOT / "work"))


def work_dir(*parts: str) -> Path:
    """A folder under the work folder, created on first use."""
    moved = os.environ.get("LAB_WORK_DIR")
    path = work_root().joinpath(*parts)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        # A notebook that moves its work folder itself breaks when graded: there the grader sets it.
        why = (f"LAB_WORK_DIR is {moved!r}; a graded notebook can write only to the work folder the grader "
               "sets (and /tmp), so leave LAB_WORK_DIR to the grader rather than set it in a notebook"
               if moved else "make it writable, or set LAB_WORK_DIR to a folder that is")
        said = f"cannot create the work folder {path.absolute()}: {error.strerror}; {why}"
        raise OSError(error.errno, said) from None
    return path


def load_data(*parts: str):
    """A JSON file from data/, e.g. load_data("support", "raw_log.json")."""
    return json.loads(DATA_DIR.joinpath(*parts).read_text(encoding="utf-8"))
