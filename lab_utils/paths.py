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


def work_dir(*parts: str) -> Path:
    """A folder under the work folder, created on first use."""
    base = Path(os.environ.get("LAB_WORK_DIR", Path.cwd() / "work" if INSTALLED else ROOT / "work"))
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_data(*parts: str):
    """A JSON file from data/, e.g. load_data("support", "raw_log.json")."""
    return json.loads(DATA_DIR.joinpath(*parts).read_text(encoding="utf-8"))
