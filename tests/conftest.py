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
