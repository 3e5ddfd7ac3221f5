import os

import pytest

# No progress bars in tests, nor in the kernels and processes they start: outputs stay the same.
os.environ["LAB_PROGRESS"] = "0"

BROADER_THAN_A_TEST = ["class", "module", "package", "session"]


def pytest_configure(config):
    # Known even when pytest-xdist is off (`-p no:xdist`), so the marks below raise no warning.
    config.addinivalue_line("markers", "xdist_group(name): tests that run on one pytest-xdist worker")


def pytest_collection_modifyitems(items):
    """For the parallel run of `make test` (pytest-xdist, --dist loadgroup): tests that share one of
    our fixtures broader than a test (a throwaway course, a JupyterLab server) go to one worker, so
    it is built once and never used by two workers at once; the other tests spread one by one."""
    for item in items:
        shared = [defs[-1] for defs in item._fixtureinfo.name2fixturedefs.values()
                  if defs[-1].baseid and defs[-1].scope in BROADER_THAN_A_TEST]
        if shared:
            widest = max(shared, key=lambda d: BROADER_THAN_A_TEST.index(d.scope))
            item.add_marker(pytest.mark.xdist_group(f"{widest.baseid}::{widest.argname}"))


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
