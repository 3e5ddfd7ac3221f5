"""The experiment registry: every attempt of every proposer, append-only and verifiable.

One JSON object per line in registry.jsonl. Each line carries the hash of the line before it
and its own SHA-256 over its canonical content, so editing, removing or reordering any line
breaks the chain from that line on, and `verify` names the first broken one.

Each line also holds a fingerprint of what produced it: versions, and SHA-256 hashes of the
code (the memory tool and the proposer), the scenario files and the fixed prompt. Results
measured under different fingerprints are different experiments.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab_utils.llm import MODEL, canonical
from lab_utils.paths import ROOT

from .prompt import PROMPT_VERSION, prompt_hash

GENESIS = "0" * 64
CODE = ("lab_utils/temporal", "lab_utils/proposer", "lab_utils/llm.py")


def _files(paths: Iterable[Path], pattern: str) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob(pattern)) if path.is_dir() else [path]
    return found


def tree_hash(paths: Iterable[str | Path], pattern: str = "*") -> str:
    """SHA-256 over the names and bytes of every matching file under `paths`."""
    digest = hashlib.sha256()
    for file in _files((Path(p) for p in paths), pattern):
        path = file.resolve()
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        digest.update(f"{name}\0".encode() + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def fingerprint(scenario_paths: Iterable[str | Path]) -> dict[str, Any]:
    """What an attempt ran on: versions, and hashes of code, scenario data and prompt."""
    return {
        "versions": {"lab": _version("agent-memory-lab"), "python": platform.python_version(),
                     "anthropic": _version("anthropic"), "pydantic": _version("pydantic"),
                     "model": MODEL, "prompt": PROMPT_VERSION},
        "code_sha256": tree_hash((ROOT / p for p in CODE), "*.py"),
        "data_sha256": tree_hash(scenario_paths, "*.json"),
        "prompt_sha256": prompt_hash(),
    }


def _line_hash(line: dict[str, Any]) -> str:
    content = {k: v for k, v in line.items() if k != "hash"}
    return hashlib.sha256(canonical(content).encode()).hexdigest()


def _lines(path: str | Path) -> list[bytes]:
    # Split the bytes, not the text: str.splitlines() also splits at U+2028 and friends, which
    # json.dumps(ensure_ascii=False) leaves inside strings. Each line is decoded on its own,
    # so a bad byte is reported at its line.
    return Path(path).read_bytes().splitlines()


def read(path: str | Path) -> list[dict[str, Any]]:
    """Every line of a registry that verifies; a damaged one is refused, naming the first bad line."""
    path = Path(path)
    if not path.exists():
        return []
    check = verify(path)
    if not check.ok:
        raise ValueError(f"{path}: {check}")
    return [json.loads(raw.decode("utf-8")) for raw in _lines(path) if raw]


class Registry:
    """Appends chained lines to one JSONL file; never rewrites it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        lines = read(self.path)
        self._seq = lines[-1]["seq"] if lines else 0
        self._prev = lines[-1]["hash"] if lines else GENESIS

    def append(self, entry: dict[str, Any]) -> dict[str, Any]:
        return self.extend([entry])[0]

    def extend(self, entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append entries in order, each chained to the one before; one disk sync for all."""
        lines = []
        for entry in entries:
            line = {"seq": self._seq + 1, "prev": self._prev,
                    "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **entry}
            line["hash"] = _line_hash(line)
            self._seq, self._prev = line["seq"], line["hash"]
            lines.append(line)
        with self.path.open("a", encoding="utf-8") as file:
            file.write("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
            file.flush()
            os.fsync(file.fileno())  # a recorded attempt survives a crash right after it
        return lines


@dataclass(frozen=True)
class Verification:
    ok: bool
    lines: int  # lines checked (all of them when ok)
    broken_line: int | None = None  # 1-based number of the first broken line
    reason: str = ""

    def __str__(self) -> str:
        if self.ok:
            return f"registry verified: {self.lines} lines, chain and hashes intact"
        return f"registry broken at line {self.broken_line}: {self.reason}"


def verify(path: str | Path) -> Verification:
    """Recompute every line's hash and the chain; report the first line that does not hold."""
    prev = GENESIS
    raw_lines = _lines(path)
    for n, raw in enumerate(raw_lines, start=1):
        try:
            line = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return Verification(False, n - 1, n, "not UTF-8 text")
        except (json.JSONDecodeError, RecursionError) as error:  # RecursionError: nested too deeply
            return Verification(False, n - 1, n, f"not a JSON line ({error})")
        if not isinstance(line, dict) or "hash" not in line:
            return Verification(False, n - 1, n, "no hash field")
        if line.get("seq") != n:
            return Verification(False, n - 1, n, f"sequence number {line.get('seq')}, expected {n}")
        if line.get("prev") != prev:
            return Verification(False, n - 1, n, "does not chain to the line before (removed, "
                                                 "inserted or reordered lines)")
        if _line_hash(line) != line["hash"]:
            return Verification(False, n - 1, n, "content does not match its hash (edited)")
        prev = line["hash"]
    return Verification(True, len(raw_lines))


def approve(path: str | Path, campaign: int, candidate_id: str, reviewer: str,
            approved: bool = True, note: str = "") -> dict[str, Any]:
    """A human's decision on a measured candidate, appended as its own record.

    Nothing in the proposer calls this: selection picks a parent, a person approves a change.
    """
    if not reviewer.strip():
        raise ValueError("an approval names its reviewer")
    check = verify(path)
    if not check.ok:
        raise ValueError(f"refusing to approve on a damaged registry: {check}")
    evaluated = [line for line in read(path) if line["kind"] == "evaluation"
                 and line["campaign"] == campaign and line["candidate_id"] == candidate_id]
    if not evaluated:
        raise ValueError(
            f"no evaluated candidate {candidate_id!r} in campaign {campaign} of {path}")
    source = evaluated[-1]
    return Registry(path).append({
        "kind": "approval", "campaign": campaign, "candidate_id": candidate_id,
        "proposer": "human", "reviewer": reviewer,
        "decision": "approved" if approved else "declined", "note": note,
        "config": source["config"], "result": source["result"],
        "approves_line": source["seq"], "approves_hash": source["hash"]})
