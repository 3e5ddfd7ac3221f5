import os
from pathlib import Path

import pytest

# No progress bars in tests, nor in the kernels and processes they start: outputs stay the same.
os.environ["LAB_PROGRESS"] = "0"


def pytest_collection_modifyitems(items):
    """Modules marked slow first, so that under `make test` (each worker takes whole files) the quick
    files fill in around them at the end instead of a slow one starting last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Offline, keyless, and writing only to a temporary work folder."""
    for name in ("ANTHROPIC_API_KEY", "LAB_LIVE", "LAB_RECORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.fixture
def server(offline, monkeypatch):
    """Live mode pointed at a local Messages API server (tests/live_server.py), with a fresh spending meter."""
    from lab_utils import llm
    from live_server import KEY, serve

    with serve() as running:
        monkeypatch.setenv("LAB_LIVE", "1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.url)
        monkeypatch.setattr(llm, "METER", llm.Meter())
        monkeypatch.setattr(llm, "SAID", set())  # what the model layer said once per kernel
        yield running


def run_folder(tmp_path_factory, name: str) -> Path:
    """A folder every worker of this test run shares (xdist gives each worker a base of its own)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture
def tried(offline, tmp_path_factory):
    """tried(lesson): the lesson's solution run once per test run, every fixture answer tried in it
    (a TrialRun), on whichever worker asks first; later callers read it."""
    from fixture_trials import tried_once  # nbgrader's import is slow: only for tests that need it

    return lambda lesson: tried_once(lesson, run_folder(tmp_path_factory, "solution-runs"))


@pytest.fixture
def released(offline, monkeypatch, tmp_path_factory):
    """released(lesson): the released lesson run once per test run, its exercises unfinished, with
    figures inline as JupyterLab shows them; on whichever worker asks first, later callers read it."""
    from nbtools import released_once

    monkeypatch.delenv("MPLBACKEND")
    return lambda lesson: released_once(lesson, run_folder(tmp_path_factory, "released-runs"))
