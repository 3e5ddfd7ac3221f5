"""Working memory that survives a restart: pause a session on a question, resume it later.

A triage session lives for minutes, so its state normally dies with the process. A refund
that needs a human's approval may wait three days; no process should wait with it. `pause`
writes the whole session state to a file and `resume` reads it back with the answer, so the
session continues where it stopped. Same persistence as memory.jsonl, shorter lifetime.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import ConfigDict, TypeAdapter, ValidationError

from lab_utils.errors import describe
from lab_utils.files import NotUTF8Error, atomic_write_text, read_utf8
from lab_utils.paths import work_dir

SESSION_FILE = "session.json"


@dataclass
class SessionState:
    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)

    ticket_id: str
    facts: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    awaiting: str | None = None  # the question a human must answer before the session goes on


_STATE = TypeAdapter(SessionState)


class SessionFileError(ValueError):
    """A session file that is missing or cannot be a SessionState."""


def _path(path: str | Path | None) -> Path:
    return Path(path) if path is not None else work_dir() / SESSION_FILE


def pause(state: SessionState, question: str, path: str | Path | None = None) -> str:
    """Record what the session waits for and write it to `path` (default: work/session.json).

    The file is checked with load_session's own validator before it is written: a state that
    could not be resumed raises ValueError, and the session already on disk stays as it was.
    """
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"a paused session must say what it is waiting for, not {question!r}")
    target = _path(path)
    text = json.dumps({**asdict(state), "awaiting": question}, ensure_ascii=False, indent=1)
    try:
        _STATE.validate_json(text)
    except ValidationError as err:
        raise ValueError(f"this session could not be resumed from a file ({describe(err)}); "
                         f"nothing was written to {target}") from None
    state.awaiting = question
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)
    return f"paused: waiting for human on '{question}'"


def load_session(path: str | Path | None = None) -> SessionState:
    """The session stored at `path`, or a SessionFileError saying what is wrong with it."""
    source = _path(path)
    try:
        text = read_utf8(source)
    except FileNotFoundError:
        raise SessionFileError(f"no paused session at {source}: pause() writes one") from None
    except NotUTF8Error as err:
        raise SessionFileError(str(err)) from None
    try:
        return _STATE.validate_json(text)
    except ValidationError as err:
        raise SessionFileError(f"{source} is not a valid session ({describe(err)})") from None


def resume(answer: str, path: str | Path | None = None) -> SessionState:
    """The paused session with the human's answer in facts["human_answer"], no longer waiting."""
    state = load_session(path)
    if state.awaiting is None:
        raise SessionFileError(f"session {state.ticket_id} at {_path(path)} is not waiting for an answer")
    state.facts["human_answer"] = answer
    state.awaiting = None
    return state
