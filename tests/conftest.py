import os

import pytest

# No progress bars in tests, nor in the kernels and processes they start: outputs stay the same.
os.environ["LAB_PROGRESS"] = "0"


def pytest_collection_modifyitems(items):
    """Modules marked slow first, so that under `make test` (each worker takes whole files) the quick
    files fill in around them at the end instead of a slow one starting last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def go_offline(monkeypatch: pytest.MonkeyPatch, folder):
    """Offline, keyless, and writing only to a work folder inside `folder`."""
    for name in ("ANTHROPIC_API_KEY", "LAB_LIVE", "LAB_RECORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAB_WORK_DIR", str(folder / "work"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return folder


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Offline, keyless, and writing only to a temporary work folder."""
    return go_offline(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def offline_module(tmp_path_factory):
    """`offline` for what a module's tests share: one temporary folder for the module."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield go_offline(monkeypatch, tmp_path_factory.mktemp("offline"))


@pytest.fixture
def executed_solution(offline, tmp_path_factory):
    """executed_solution(lesson): the solution notebook as executed offline, with its outputs.
    Each solution runs once per test run, on whichever worker asks first; later callers read it."""
    from nbtools import executed_once, notebook_path  # nbgrader's import is slow: only for tests that need it

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's, not the worker's
    return lambda lesson: executed_once(notebook_path("solutions", lesson), shared / "executed-solutions")
