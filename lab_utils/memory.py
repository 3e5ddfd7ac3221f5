"""Long-term memory for the support agent: records, and a store that survives a restart.

The store is an in-memory list plus an append-only JSONL file. Reading is retrieval:
BM25 over the memories, top-k, and a minimum score under which the honest answer is
"no relevant memories" (chosen from labelled queries: `choose_min_score`). This is the naive
version of lesson 01: `remember_raw` stores whatever it is given; lab_utils.rules adds the
disciplined write.

The file is safe to share: appends and rewrites hold a lock, a writer first reads what
other processes appended, a rewrite is atomic (temp file + replace), and a torn last line
left by a killed writer is set aside in `<file>.torn` and reported, never fatal.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lab_utils.files import atomic_write_text, utf8_encodable
from lab_utils.retrieval import BM25Index

KINDS = ("episode", "fact")

# The course's minimum score, the same in every lesson so that their numbers compare. It is
# a property of a store and its queries, not a constant of nature: lesson 01 chooses one from
# labelled queries (choose_min_score) and finds that the naive store would want another.
MIN_SCORE = 0.5

NOTHING = "no relevant memories"

_FIELDS = {"id": str, "kind": str, "text": str, "source": str, "ts": (int, float), "verified": bool}

# The ids the store hands out; the next one continues from the highest number, so a loaded id
# must have a number int() can read: ASCII digits ("²".isdigit() is True, int("²") fails),
# and not thousands of them (int() refuses more than 4300).
_ID = re.compile(r"m-(\d{1,15})", re.ASCII)


@dataclass
class Memory:
    id: str
    kind: str  # "episode" (what happened) or "fact" (what is true)
    text: str
    source: str  # provenance: the ticket the memory came from
    ts: float
    verified: bool = False


def memory_to_json(m: Memory) -> str:
    """One JSONL line's text for `m`, its fields in order (the inverse of memory_from_json)."""
    # Not dataclasses.asdict, which deep-copies each field: a store may write thousands of lines
    # while a test's calls are watched (lab_utils.grading), where every call costs.
    return json.dumps({name: getattr(m, name) for name in _FIELDS}, ensure_ascii=False)


class MemoryFileError(ValueError):
    """A line of a memory file that cannot be a Memory."""


class TornLineWarning(UserWarning):
    """The file ended in a partial line; it was set aside, not lost."""


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")  # Python's json reads NaN and Infinity; JSON has neither


def memory_from_json(line: str, where: str) -> Memory:
    """Parse one JSONL line into a Memory, naming `where` and the field in any error."""
    try:
        data = json.loads(line, parse_constant=_not_json)
    except ValueError as err:  # not JSON, NaN or Infinity, or a number too long for Python to read
        raise MemoryFileError(f"{where}: not valid JSON ({getattr(err, 'msg', err)})") from None
    except RecursionError:  # e.g. 100,000 "[": the parser runs out of stack, not of input
        raise MemoryFileError(f"{where}: not a memory (JSON nested too deeply to read)") from None
    if not isinstance(data, dict):
        raise MemoryFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
    for name, kind in _FIELDS.items():
        if name not in data and name != "verified":
            raise MemoryFileError(f"{where}: missing field {name!r}")
        if name in data and (not isinstance(data[name], kind) or isinstance(data[name], bool) != (kind is bool)):
            raise MemoryFileError(f"{where}: field {name!r} has the wrong type ({type(data[name]).__name__})")
        # JSON may hold a lone surrogate (\ud800): it loads, but no rewrite could save it.
        if kind is str and not utf8_encodable(data[name]):
            raise MemoryFileError(f"{where}: field {name!r} is not valid Unicode text (a lone surrogate)")
    extra = set(data) - set(_FIELDS)
    if extra:
        raise MemoryFileError(f"{where}: unknown field(s) {sorted(extra)}")
    if data["kind"] not in KINDS:
        raise MemoryFileError(f"{where}: kind must be one of {KINDS}, not {data['kind']!r}")
    if not _ID.fullmatch(data["id"]):
        raise MemoryFileError(f"{where}: field 'id' must be 'm-' and up to 15 ASCII digits, not {data['id']!r}")
    return Memory(**data)


class MemoryStore:
    def __init__(self, path: str | Path, min_score: float = MIN_SCORE) -> None:
        self.path = Path(path)
        self.min_score = min_score
        self.items: list[Memory] = []
        self._by_id: dict[str, Memory] = {}  # kept with items, so a search never rebuilds it
        self._index = BM25Index()
        self._read_upto = 0  # bytes of the file already in self.items
        self._lines_read = 0
        self._inode: int | None = None  # which file those bytes were read from
        self._seq = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            self._read_new_lines()

    # -- the file ---------------------------------------------------------------------

    @contextmanager
    def _locked(self):
        # A side file carries the lock, because a rewrite replaces the data file itself.
        with open(f"{self.path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_new_lines(self) -> None:
        """Take in what was appended since the last read (by us or another process)."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            inode = os.fstat(f.fileno()).st_ino
            if inode != self._inode:
                # Another process replaced the file (forget_source, the cap): read it afresh, so
                # memories it removed do not live on here, nor come back with our next rewrite.
                self.items, self._by_id, self._index = [], {}, BM25Index()
                self._read_upto = self._lines_read = 0
                self._inode = inode
            f.seek(self._read_upto)
            new = f.read()
        complete, _, torn = new.rpartition(b"\n")
        lines = complete.split(b"\n") if complete else []
        parsed = []
        for n, raw in enumerate(lines, start=self._lines_read + 1):
            where = f"{self.path}, line {n}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise MemoryFileError(f"{where}: not UTF-8 text") from None
            if text.strip():
                parsed.append(memory_from_json(text, where))
        # Every complete line parsed: only now may the torn tail leave the file. A load that
        # refuses the file changes nothing on disk.
        if torn:
            self._set_aside(torn)
        for m in parsed:
            self._add(m)
        self._read_upto += len(complete) + (1 if complete else 0)
        self._lines_read += len(lines)

    def _set_aside(self, torn: bytes) -> None:
        aside = Path(f"{self.path}.torn")
        with open(aside, "ab") as f:
            f.write(torn + b"\n")
        # Safe under the lock: whole lines are appended under it, so only a killed writer tears one.
        os.truncate(self.path, self.path.stat().st_size - len(torn))
        warnings.warn(f"{self.path}: the last line was incomplete ({len(torn)} bytes, a writer "
                      f"was probably killed mid-append); it was set aside in {aside}",
                      TornLineWarning, stacklevel=3)

    def _add(self, m: Memory) -> None:
        self.items.append(m)
        self._by_id[m.id] = m
        self._index.add(m.id, m.text)
        self._seq = max(self._seq, int(_ID.fullmatch(m.id)[1]))

    def _append(self, kind: str, text: str, source: str, verified: bool = False) -> Memory:
        """Store one new memory: a fresh id, one line appended in one write; a memory the file's reader
        would refuse (a `verified` that is not a bool, an unknown kind) raises MemoryFileError and writes nothing."""
        with self._locked():
            self._read_new_lines()
            m = Memory(f"m-{self._seq + 1:03d}", kind, text, source, time.time(), verified)
            record = memory_to_json(m)
            memory_from_json(record, f"{self.path}, the new memory")  # never append a line a restart would refuse
            line = (record + "\n").encode("utf-8")
            with open(self.path, "ab") as f:
                f.write(line)
                self._inode = os.fstat(f.fileno()).st_ino
            self._read_upto += len(line)
            self._lines_read += 1
            self._add(m)
        return m

    def _rewrite(self, keep: list[Memory]) -> int:
        """Remove, atomically, every memory of this store that `keep` leaves out; returns how many it
        removed. A memory another process appended since this store last read its file stays: the
        caller chose `keep` without seeing it."""
        with self._locked():
            seen = set(self._by_id)
            self._read_new_lines()
            gone = (seen - {m.id for m in keep}) & set(self._by_id)
            kept = [m for m in self.items if m.id not in gone]
            text = "".join(memory_to_json(m) + "\n" for m in kept)
            atomic_write_text(self.path, text)
            self._inode = self.path.stat().st_ino
            self.items = kept
            self._by_id = {m.id: m for m in kept}
            self._index.remove(gone)
            self._read_upto = len(text.encode("utf-8"))
            self._lines_read = len(kept)
        return len(gone)

    # -- writing and reading ----------------------------------------------------------

    def remember_raw(self, text: str, source: str) -> str:
        """The naive write: every observation goes in, as an episode."""
        return f"stored {self._append('episode', text, source).id}"

    def scored_search(self, query: str, k: int = 3) -> list[tuple[Memory, float]]:
        """The top-k memories with their BM25 scores, before the minimum score."""
        return [(self._by_id[i], s) for i, s in self._index.search(query, k)]

    def search(self, query: str, k: int = 3) -> list[Memory]:
        """The top-k memories that reach the minimum score."""
        return [self._by_id[i] for i in top_k(self._index.search(query, k), k, self.min_score)]

    def recall(self, query: str, k: int = 3) -> str:
        """What the agent reads: memories with provenance, or an honest 'nothing'."""
        return format_recall(self.search(query, k))


def top_k(scored: list[tuple[str, float]], k: int, min_score: float) -> list[str]:
    """Ids of the k best (id, score) pairs that reach `min_score`, best first; equal scores
    keep their order in `scored`, which is left unchanged."""
    ranked = sorted(scored, key=lambda pair: -pair[1])  # sorted() is stable
    return [memory_id for memory_id, score in ranked if score >= min_score][:max(k, 0)]


def threshold_errors(labelled: list[tuple[float, bool]], min_score: float) -> int:
    """How many queries a minimum score gets wrong. `labelled` holds (best score, answerable)
    per query: an answerable query below `min_score` is a miss, a query the store cannot
    answer at or above it gets an irrelevant answer."""
    return sum((score >= min_score) != answerable for score, answerable in labelled)


def choose_min_score(labelled: list[tuple[float, bool]]) -> float:
    """The score in `labelled` that, as the minimum score, makes the fewest errors; among
    equally good ones the highest (an honest "nothing" beats an irrelevant hit)."""
    if not labelled:
        raise ValueError("no labelled queries to choose a minimum score from")
    return max({score for score, _ in labelled}, key=lambda t: (-threshold_errors(labelled, t), t))


def format_recall(memories: list[Memory]) -> str:
    """One line per memory, provenance first: `[m-001 <- t-8801] text`."""
    if not memories:
        return NOTHING
    return "\n".join(f"[{m.id} <- {m.source}] {m.text}" for m in memories)
