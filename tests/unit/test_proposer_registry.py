"""The experiment registry: append-only, hash-chained, verifiable; approvals are human records."""

from __future__ import annotations

import json

import pytest

from lab_utils.proposer import Registry, approve, fingerprint, verify
from lab_utils.proposer.registry import _line_hash, read
from lab_utils.temporal import HELDOUT, PUBLIC

CONFIG = {"min_confidence": 0.6, "filter_entity": True, "time_aware": True,
          "deduplicate": True, "top_k": 3}


@pytest.fixture
def registry(tmp_path):
    path = tmp_path / "registry.jsonl"
    reg = Registry(path)
    reg.append({"kind": "evaluation", "campaign": 1, "iteration": 0, "candidate_id": "baseline",
                "parent_id": None, "config": {}, "result": {"passed": 13}})
    reg.append({"kind": "evaluation", "campaign": 1, "iteration": 1, "candidate_id": "agent-01",
                "parent_id": "baseline", "config": CONFIG, "result": {"passed": 20}})
    reg.append({"kind": "stop", "campaign": 1, "iteration": 2, "candidate_id": None})
    return path


def _rewrite(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_lines_chain_and_verify(registry):
    lines = read(registry)
    assert [line["seq"] for line in lines] == [1, 2, 3]
    assert all(b["prev"] == a["hash"] for a, b in zip(lines, lines[1:]))
    assert verify(registry).ok and verify(registry).lines == 3


def test_appending_later_continues_the_chain_and_never_rewrites(registry):
    before = registry.read_bytes()
    Registry(registry).append({"kind": "note", "campaign": 1})
    assert registry.read_bytes().startswith(before)
    assert verify(registry).ok and verify(registry).lines == 4


def test_an_edited_line_is_caught(registry):
    lines = registry.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"passed": 20', '"passed": 19')
    _rewrite(registry, lines)
    result = verify(registry)
    assert not result.ok and result.broken_line == 2 and "edited" in result.reason


def test_an_edit_with_a_recomputed_hash_still_breaks_the_next_link(registry):
    lines = [json.loads(text) for text in registry.read_text(encoding="utf-8").splitlines()]
    lines[1]["result"]["passed"] = 19
    lines[1]["hash"] = _line_hash(lines[1])  # a forger re-hashes the edited line
    _rewrite(registry, [json.dumps(line) for line in lines])
    result = verify(registry)
    assert result.broken_line == 3 and "does not chain" in result.reason


@pytest.mark.parametrize("damage", ["remove", "swap", "torn"])
def test_removed_reordered_or_torn_lines_are_caught(registry, damage):
    lines = registry.read_text(encoding="utf-8").splitlines()
    if damage == "remove":
        del lines[1]
    elif damage == "swap":
        lines[1], lines[2] = lines[2], lines[1]
    else:
        lines[2] = lines[2][: len(lines[2]) // 2]
    _rewrite(registry, lines)
    assert verify(registry).broken_line == (3 if damage == "torn" else 2)


def test_approval_is_a_separate_human_line_tied_to_the_evaluated_candidate(registry):
    line = approve(registry, 1, "agent-01", reviewer="instructor", note="traces read")
    assert line["kind"] == "approval" and line["proposer"] == "human"
    assert line["decision"] == "approved" and line["config"] == CONFIG
    assert line["approves_line"] == 2 and line["approves_hash"] == read(registry)[1]["hash"]
    assert verify(registry).ok


def test_approval_refuses_unknown_candidates_missing_reviewers_and_damaged_registries(registry):
    with pytest.raises(ValueError, match="no evaluated candidate"):
        approve(registry, 1, "agent-07", reviewer="instructor")
    with pytest.raises(ValueError, match="reviewer"):
        approve(registry, 1, "agent-01", reviewer=" ")
    lines = registry.read_text(encoding="utf-8").splitlines()
    _rewrite(registry, [lines[0], lines[2]])
    with pytest.raises(ValueError, match="damaged registry"):
        approve(registry, 1, "agent-01", reviewer="instructor")


def test_fingerprint_hashes_code_data_and_prompt():
    stamp = fingerprint([PUBLIC])
    for name in ("code_sha256", "data_sha256", "prompt_sha256"):
        assert len(stamp[name]) == 64
    assert stamp["versions"]["model"] and stamp["versions"]["prompt"]
    assert fingerprint([HELDOUT])["data_sha256"] != stamp["data_sha256"]
    assert fingerprint([PUBLIC]) == stamp


def test_a_damaged_registry_is_neither_read_nor_extended(tmp_path):
    path = tmp_path / "registry.jsonl"
    Registry(path).append({"kind": "note"})
    path.write_bytes(path.read_bytes() + b"\xff\n")
    before = path.read_bytes()
    for opening in (read, Registry):
        with pytest.raises(ValueError, match="broken at line 2: not UTF-8 text"):
            opening(path)
    assert path.read_bytes() == before
