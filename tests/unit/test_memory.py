"""The naive store: round trip, retrieval with a minimum score, and a file that can be trusted."""

import json
import os

import pytest

from lab_utils.memory import NOTHING, Memory, MemoryFileError, MemoryStore, TornLineWarning, format_recall
from lab_utils.paths import load_data

RAW_LOG = load_data("support", "raw_log.json")


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "memory.jsonl")
    for row in RAW_LOG:
        s.remember_raw(row["text"], row["source"])
    return s


def test_remember_raw_numbers_memories_and_appends_one_line_each(store):
    assert [m.id for m in store.items] == [f"m-{i:03d}" for i in range(1, 11)]
    assert len(store.path.read_text().splitlines()) == 10
    assert all(m.kind == "episode" and not m.verified for m in store.items)


def test_a_restart_loads_every_memory(store):
    again = MemoryStore(store.path)
    assert again.items == store.items
    assert again.remember_raw("new", "t-1") == "stored m-011"


def test_the_naive_store_recalls_complaints_not_the_resolution(store):
    # Lesson 02's first poisoning, as the source reports it: m-006, m-001, m-003.
    assert [m.id for m in store.search("C-4471 export file is empty again", 3)] == ["m-006", "m-001", "m-003"]


def test_below_the_minimum_score_the_answer_is_nothing(store):
    assert store.recall("reset the password for C-4471") == NOTHING
    assert store.search("reset the password for C-4471") == []
    assert store.scored_search("reset the password for C-4471", 1)[0][1] < store.min_score


def test_recall_gives_provenance(store):
    assert store.recall("invoice copy request from C-2210", k=1) == f"[m-009 <- t-8600] {RAW_LOG[8]['text']}"


def test_format_recall():
    m = Memory("m-001", "fact", "x", "t-1", 0.0)
    assert format_recall([m, m]) == "[m-001 <- t-1] x\n[m-001 <- t-1] x"
    assert format_recall([]) == NOTHING


def test_an_empty_store_finds_nothing(tmp_path):
    s = MemoryStore(tmp_path / "m.jsonl")
    assert s.search("anything") == [] and s.recall("anything") == NOTHING


def test_a_torn_last_line_is_set_aside_and_reported(store):
    with open(store.path, "a") as f:
        f.write('{"id": "m-011", "kind": "epi')
    with pytest.warns(TornLineWarning, match="set aside"):
        again = MemoryStore(store.path)
    assert len(again.items) == 10
    assert store.path.with_name("memory.jsonl.torn").read_text() == '{"id": "m-011", "kind": "epi\n'
    assert again.remember_raw("after", "t-2") == "stored m-011"
    assert len(MemoryStore(again.path).items) == 11


@pytest.mark.parametrize("line, named", [
    ("not json", "not valid JSON"),
    ('{"id": "m-1", "kind": "fact", "text": "t", "source": "s", "ts": NaN}', "not valid JSON .NaN is not JSON"),
    ('{"id": "m-1", "kind": "fact", "text": "t", "source": "s", "ts": -Infinity}', "not valid JSON .-Infinity"),
    ('{"id": "m-1", "kind": "fact", "text": "t", "source": "s", "ts": ' + "1" * 5000 + "}", "not valid JSON .Exceeds"),
    ("[1, 2]", "expected a JSON object"),
    ('{"id": "m-1", "kind": "episode", "text": "t", "source": "s"}', "'ts'"),
    ('{"id": "m-1", "kind": "guess", "text": "t", "source": "s", "ts": 1}', "kind"),
    ('{"id": "m-1", "kind": "fact", "text": "t", "source": "s", "ts": "now"}', "'ts'"),
    ('{"id": "m-1", "kind": "fact", "text": "t", "source": "s", "ts": 1, "verified": 1}', "'verified'"),
    ('{"id": "m-1", "kind": "fact", "text": "t", "source": "s", "ts": 1, "x": 1}', "unknown field"),
])
def test_a_malformed_line_is_named_and_nothing_is_lost(store, line, named):
    lines = store.path.read_text().splitlines()
    lines.insert(3, line)
    store.path.write_text("\n".join(lines) + "\n")
    before = store.path.read_bytes()
    with pytest.raises(MemoryFileError, match=named) as err:
        MemoryStore(store.path)
    assert "line 4" in str(err.value)
    assert store.path.read_bytes() == before


@pytest.mark.parametrize("kind, verified, named", [("episode", None, "'verified' has the wrong type"),
                                                    ("episode", 1, "'verified' has the wrong type"),
                                                    ("rumour", False, "kind must be one of")])
def test_a_memory_a_restart_would_refuse_is_never_appended(store, kind, verified, named):
    before = store.path.read_bytes()
    with pytest.raises(MemoryFileError, match=named):
        store._append(kind, "a note", "t-1", verified)
    assert store.path.read_bytes() == before and len(MemoryStore(store.path).items) == len(store.items) == 10


def test_non_utf8_bytes_are_named(store):
    with open(store.path, "ab") as f:
        f.write(b'{"id": "\xff"}\n')
    with pytest.raises(MemoryFileError, match="line 11: not UTF-8"):
        MemoryStore(store.path)


def test_rewrite_is_complete_and_keeps_the_index_in_step(store):
    removed = store._rewrite([m for m in store.items if m.source != "t-8801"])
    assert removed == 5
    assert [json.loads(line)["source"] for line in store.path.read_text().splitlines()].count("t-8801") == 0
    assert all(m.source != "t-8801" for m in store.search("guess export enterprise permission", 5))
    assert MemoryStore(store.path).items == store.items


def test_a_rewrite_that_fails_leaves_the_file_and_the_store_as_they_were(store, monkeypatch):
    before = store.path.read_bytes()
    def full_disk(*args):
        raise OSError("No space left on device")
    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        store._rewrite([m for m in store.items if m.source != "t-9021"])
    assert store.path.read_bytes() == before and MemoryStore(store.path).items == store.items
    assert [p.name for p in store.path.parent.iterdir() if p.suffix == ".tmp"] == []  # the temp file is gone


def test_two_stores_on_one_file_see_each_others_writes(tmp_path):
    a, b = MemoryStore(tmp_path / "m.jsonl"), MemoryStore(tmp_path / "m.jsonl")
    a.remember_raw("first", "t-1")
    assert b.remember_raw("second", "t-2") == "stored m-002"
    a.remember_raw("third", "t-3")
    assert [m.text for m in a.items] == ["first", "second", "third"]
    assert [m.id for m in MemoryStore(tmp_path / "m.jsonl").items] == ["m-001", "m-002", "m-003"]


def test_a_rewrite_keeps_what_another_process_appended_unseen(tmp_path):
    a, b = MemoryStore(tmp_path / "m.jsonl"), MemoryStore(tmp_path / "m.jsonl")
    for source in ("t-1", "t-9021"):
        a.remember_raw(f"note from {source}", source)
    b.remember_raw("note from t-3", "t-3")  # a has not read it yet
    assert a._rewrite([m for m in a.items if m.source != "t-9021"]) == 1  # what forget_source does
    assert [m.source for m in a.items] == ["t-1", "t-3"]
    assert [m.source for m in MemoryStore(tmp_path / "m.jsonl").items] == ["t-1", "t-3"]


def test_a_rewrite_by_another_process_is_seen_and_never_undone(tmp_path):
    a, b = MemoryStore(tmp_path / "m.jsonl"), MemoryStore(tmp_path / "m.jsonl")
    for source in ("t-1", "t-9021", "t-2"):
        a.remember_raw(f"note from {source}", source)
    b._read_new_lines()
    b._rewrite([m for m in b.items if m.source != "t-9021"])  # what forget_source does
    assert a.remember_raw("later", "t-3") == "stored m-004"
    assert [m.source for m in a.items] == ["t-1", "t-2", "t-3"]
    a._rewrite(a.items)
    assert "t-9021" not in a.path.read_text(), "a forgotten memory never comes back"
