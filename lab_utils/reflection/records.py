"""Run records: what one agent run leaves behind, the raw material of the slow loop.

One run is one line of JSONL under data/runs/. The model is strict (no type coercion,
no unknown fields), so a typo in a log is an error that names the field, not a silent
default: an error kind spelled "timout" would otherwise count as a real error.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError, model_validator

from lab_utils.errors import describe
from lab_utils.files import NotUTF8Error, read_utf8
from lab_utils.paths import DATA_DIR

RUNS_DIR = DATA_DIR / "runs"

ErrorKind = Literal[
    "timeout", "connection_dropped", "rate_limited",  # the environment's fault
    "bad_request", "not_found", "permission_denied", "tool_failure",  # the agent's (or its tools')
]
# Network trouble and rate limits say nothing about the agent's ability: no signal counts them.
TRANSIENT_ERRORS = frozenset({"timeout", "connection_dropped", "rate_limited"})


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Turn(Strict):
    role: Literal["user", "assistant"]
    text: str


class ToolCall(Strict):
    name: str
    error: ErrorKind | None = None
    detail: str = ""  # the tool's error message, if any

    @property
    def transient(self) -> bool:
        return self.error in TRANSIENT_ERRORS

    @property
    def real_error(self) -> bool:
        return self.error is not None and not self.transient


class RunRecord(Strict):
    run_id: str
    agent: str
    ticket: str | None = None
    started_at: AwareDatetime
    ended_at: AwareDatetime
    messages: list[Turn]
    tool_calls: list[ToolCall] = []
    outcome: Literal["completed", "failed", "aborted"]
    skills_shown: list[str] = []  # impressions: the skill index in this run's system prompt
    skills_read: list[str] = []  # invocations: skills the agent opened
    user_edited: bool = False  # a human edited the run's result by hand afterwards

    @model_validator(mode="after")
    def _consistent(self) -> RunRecord:
        if self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        unseen = sorted(set(self.skills_read) - set(self.skills_shown))
        if unseen:
            raise ValueError(f"skills_read names skills missing from skills_shown: {unseen}")
        return self

    @property
    def real_failure(self) -> bool:
        return failed_for_real(self)


def failed_for_real(run: RunRecord) -> bool:
    """The run failed, and not because of the environment: its last error (if any) is real."""
    if run.outcome != "failed":
        return False
    errors = [call for call in run.tool_calls if call.error]
    return not errors or not errors[-1].transient


class RunRecordError(ValueError):
    """A run record that cannot be read; the message names the file, line and field."""


def load_runs(path: Path | str = RUNS_DIR / "two_weeks") -> list[RunRecord]:
    """Every run in a JSONL file, or in the *.jsonl files of a folder, in the order they ended."""
    path = Path(path)
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    runs: list[RunRecord] = []
    for file in files:
        try:
            text = read_utf8(file)
        except NotUTF8Error as error:
            raise RunRecordError(f"{file.name} line {error.line}: not UTF-8 text") from None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                runs.append(RunRecord.model_validate_json(line))
            except ValidationError as error:
                raise RunRecordError(f"{file.name} line {number}: {describe(error)}") from None
    repeated = sorted(i for i, n in Counter(run.run_id for run in runs).items() if n > 1)
    if repeated:
        raise RunRecordError(f"run_id used more than once under {path}: {repeated}")
    return sorted(runs, key=lambda run: (run.ended_at, run.run_id))
