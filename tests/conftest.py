import os

import pytest

# No progress bars in tests, nor in the kernels and processes they start: outputs stay the same.
os.environ["LAB_PROGRESS"] = "0"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Offline, keyless, and writing only to a temporary work folder."""
    for name in ("ANTHROPIC_API_KEY", "LAB_LIVE", "LAB_RECORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.fixture
def executed_solution(offline, tmp_path_factory):
    """executed_solution(lesson): the solution notebook as executed offline, with its outputs.
    Each solution runs once per test run, on whichever worker asks first; later callers read it."""
    from nbtools import executed_once, notebook_path  # nbgrader's import is slow: only for tests that need it

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's, not the worker's
    return lambda lesson: executed_once(notebook_path("solutions", lesson), shared / "executed-solutions")
