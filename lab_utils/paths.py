"""Where the course reads its data and writes its work.

`DATA_DIR` is read-only course material shipped with the repository.
`WORK_DIR` is where notebooks write (memory.jsonl, session.json, registries);
it is git-ignored and can be moved with the LAB_WORK_DIR environment variable
(the test suite points it at a temporary folder).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"


def work_dir(*parts: str) -> Path:
    """A folder under the work folder, created on first use."""
    base = Path(os.environ.get("LAB_WORK_DIR", ROOT / "work"))
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_data(*parts: str):
    """A JSON file from data/, e.g. load_data("support", "raw_log.json")."""
    return json.loads(DATA_DIR.joinpath(*parts).read_text(encoding="utf-8"))
