"""The JSONL store under real crashes and real concurrency, in separate processes.

Writers are killed with SIGKILL at random moments; afterwards every record a writer reported
as stored loads, no line is mixed, and a torn last line is set aside and reported.
"""

import json
import random
import re
import signal
import subprocess
import sys
import time
import warnings

from lab_utils.memory import MemoryStore, TornLineWarning

APPEND = """
import sys
from lab_utils.memory import MemoryStore
store = MemoryStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    print(store.remember_raw(f"{sys.argv[2]} note {i} " + "x" * 300, sys.argv[2]).split()[1], flush=True)
"""

# A writer that is not careful: one line in several small writes, as a hand-rolled logger might.
CHUNKED = """
import sys, time
with open(sys.argv[1], "ab", buffering=0) as f:
    line = b'{"id": "m-999", "kind": "episode", "text": "' + b"y" * 2000 + b'", "source": "t", "ts": 1}\\n'
    for i in range(0, len(line), 64):
        f.write(line[i:i + 64])
        print("wrote a chunk", flush=True)
        time.sleep(0.002)
"""

# Rewrites with a few appends between them, so that most kills land in a rewrite: an in-place
# rewrite instead of an atomic one failed this test in each of six runs.
REWRITE = """
import sys
from lab_utils.memory import MemoryStore
store = MemoryStore(sys.argv[1])
print("rewriting", flush=True)
while True:
    keep = [m for m in store.items if m.source != "drop"]
    store._rewrite(keep)
    for i in range(5):
        store._append("episode", f"drop {i} " + "z" * 300, "drop")
"""


def spawn(script, *args):
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                            stdout=subprocess.PIPE, text=True)


def load(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = MemoryStore(path)
    return store, [w for w in caught if issubclass(w.category, TornLineWarning)]


def test_killed_writers_lose_no_complete_record(tmp_path):
    path, rng, reported = tmp_path / "memory.jsonl", random.Random(7), set()
    for round_ in range(20):
        writer = spawn(APPEND, path, f"t-{round_}", 100_000)
        first = writer.stdout.readline()  # it is writing now; kill it at a random point
        time.sleep(rng.uniform(0, 0.05))
        writer.send_signal(signal.SIGKILL)
        out, _ = writer.communicate()
        reported |= set((first + out).split())
        store, _ = load(path)
        ids = [m.id for m in store.items]
        assert len(ids) == len(set(ids)), "ids stay unique across restarts"
        assert reported <= set(ids), "every record a writer reported as stored is loaded"
    assert len(reported) > 100, "the writers were killed while writing, not before"
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_torn_line_from_a_killed_writer_is_set_aside(tmp_path):
    path = tmp_path / "memory.jsonl"
    store = MemoryStore(path)
    for i in range(5):
        store.remember_raw(f"note {i}", "t-1")
    writer = spawn(CHUNKED, path)
    writer.stdout.readline()  # mid-line now
    time.sleep(0.005)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    store, torn = load(path)
    assert [m.text for m in store.items] == [f"note {i}" for i in range(5)]
    assert torn and "set aside" in str(torn[0].message)
    aside = path.with_name("memory.jsonl.torn").read_bytes()
    assert aside.startswith(b'{"id": "m-999"') and len(aside) < 2000
    assert store.remember_raw("after", "t-2") == "stored m-006"


def _prefixes(parts):
    """A regex for every prefix of the lines made of `parts`, (whole, prefix) regex pairs in order."""
    (whole, prefix), *rest = parts
    return f"(?:{prefix}|{whole}{_prefixes(rest)})" if rest else f"(?:{prefix}|{whole})"


def _literal(text):
    return re.escape(text), "(?:" + "|".join(re.escape(text[:n]) for n in range(len(text))) + ")"


# What REWRITE appends (a "drop" record, as _append writes it), and every prefix of it: SIGKILL
# can cut that append short (Linux stops a write at a page boundary), leaving a torn last line.
TORN_DROP = re.compile(_prefixes([
    _literal('{"id": "m-'), (r"\d+", r"\d*"), _literal('", "kind": "episode", "text": "drop '),
    (r"\d+", r"\d*"), _literal(" " + "z" * 300 + '", "source": "drop", "ts": '),
    (r"[0-9.e+-]+", r"[0-9.e+-]*"), _literal(', "verified": false}'),
]))


def test_a_killed_rewrite_leaves_the_old_file_or_the_new_one(tmp_path):
    path, rng = tmp_path / "memory.jsonl", random.Random(11)
    store = MemoryStore(path)
    for i in range(300):
        store.remember_raw(f"keep {i}", "keep")
    for _ in range(30):
        rewriter = spawn(REWRITE, path)
        rewriter.stdout.readline()  # in the loop now; a round takes milliseconds: kill it a few rounds in
        time.sleep(rng.uniform(0, 0.05))
        rewriter.send_signal(signal.SIGKILL)
        rewriter.wait()
        store, torn = load(path)
        kept = [m.text for m in store.items if m.source == "keep"]
        assert kept == [f"keep {i}" for i in range(300)], "the kept records are all there, in order"
        assert {m.source for m in store.items} <= {"keep", "drop"}
        # The rewrite never tears the file; only an append of a "drop" record may be cut short.
        aside = path.with_name("memory.jsonl.torn")
        assert not torn or aside.exists()
        for line in aside.read_text(encoding="utf-8").splitlines() if aside.exists() else []:
            assert TORN_DROP.fullmatch(line), f"a torn line that is not part of a drop record: {line!r}"


def test_two_processes_appending_at_once_lose_nothing(tmp_path):
    path = tmp_path / "memory.jsonl"
    writers = [spawn(APPEND, path, name, 1000) for name in ("t-a", "t-b")]
    for w in writers:
        assert w.wait(timeout=120) == 0
    store, torn = load(path)
    assert not torn
    assert len(store.items) == 2000
    assert len({m.id for m in store.items}) == 2000
    for name in ("t-a", "t-b"):
        texts = [m.text.split(" x")[0] for m in store.items if m.source == name]
        assert texts == [f"{name} note {i}" for i in range(1000)], "each writer's lines stay whole and in order"


def test_without_re_reading_two_stores_would_collide(tmp_path, monkeypatch):
    """The control: a store that skips the re-read under the lock hands out the same id twice."""
    a, b = MemoryStore(tmp_path / "m.jsonl"), MemoryStore(tmp_path / "m.jsonl")
    monkeypatch.setattr(MemoryStore, "_read_new_lines", lambda self: None)
    a.remember_raw("one", "t")
    b.remember_raw("two", "t")
    monkeypatch.undo()
    ids = [m.id for m in MemoryStore(tmp_path / "m.jsonl").items]
    assert ids == ["m-001", "m-001"]
