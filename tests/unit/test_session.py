"""Working memory on disk: pause a session on a question, resume it with the answer."""

from __future__ import annotations

import json

import pytest

from lab_utils.session import SessionFileError, SessionState, load_session, pause, resume


def _state() -> SessionState:
    return SessionState("t-9310", {"customer": "C-4471", "cause": "status filter"},
                        ["recall", "read_ticket"])


def test_pause_and_resume_round_trip(tmp_path):
    path = tmp_path / "session.json"
    msg = pause(_state(), "refund for order 5512 requires approval", path)
    assert msg == "paused: waiting for human on 'refund for order 5512 requires approval'"
    assert json.loads(path.read_text())["awaiting"] == "refund for order 5512 requires approval"
    state = resume("approved by billing lead", path)
    assert state == SessionState("t-9310", {"customer": "C-4471", "cause": "status filter",
                                            "human_answer": "approved by billing lead"},
                                 ["recall", "read_ticket"], None)


def test_default_path_is_in_the_work_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_WORK_DIR", str(tmp_path))
    pause(_state(), "approve the refund?")
    assert (tmp_path / "session.json").exists()
    assert resume("yes").facts["human_answer"] == "yes"


def test_pause_writes_atomically(tmp_path):
    path = tmp_path / "session.json"
    pause(_state(), "first question", path)
    pause(_state(), "second question", path)
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]  # no temp file left behind
    assert load_session(path).awaiting == "second question"


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SessionFileError, match="no paused session"):
        resume("yes", tmp_path / "nothing.json")


@pytest.mark.parametrize("content, problem", [
    ('{"ticket_id": "t-9310", "facts": {', "Invalid JSON"),
    ('{"ticket_id": 9310, "facts": {}, "calls": [], "awaiting": "q"}', "ticket_id"),
    ('{"ticket_id": "t-9310", "facts": {}, "calls": "recall", "awaiting": "q"}', "calls"),
    ('{"facts": {}, "calls": [], "awaiting": "q"}', "ticket_id"),
    ('{"ticket_id": "t-9310", "awaiting": "q", "mood": "grumpy"}', "mood"),
    ('[1, 2]', "file"),
])
def test_corrupt_file_is_a_clear_error(tmp_path, content, problem):
    path = tmp_path / "session.json"
    path.write_text(content)
    with pytest.raises(SessionFileError, match=problem):
        resume("yes", path)


def test_resume_needs_a_waiting_session(tmp_path):
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"ticket_id": "t-9310", "facts": {}, "calls": [], "awaiting": None}))
    with pytest.raises(SessionFileError, match="not waiting"):
        resume("yes", path)


def test_pause_needs_a_question(tmp_path):
    with pytest.raises(ValueError, match="waiting for"):
        pause(_state(), "  ", tmp_path / "session.json")
