"""Shared by the browser tests: where things are, the server's address, the wall times."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from lab_utils.paths import ROOT

# Debian's Chromium as the headless shell, which Playwright runs by default: the same engine, and the
# full browser took half as much CPU time again for these tests. Playwright's own download does not
# work here.
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
STUDENT_CONFIG = ROOT / "jupyter_config"  # what `make lab` uses and postBuild installs on Binder
ARTIFACTS = ROOT / "artifacts" / "browser"  # git-ignored: a screenshot per lesson, timings.json
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in front
PROMPTS = f"{NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt"  # "[3]:" ran, "[*]:" queued, "[ ]:" not run
TIMINGS: dict[str, float] = {}  # wall times in seconds, shown after the run and saved for benchmarks


@dataclass(frozen=True)
class Lab:
    base: str
    token: str
    root: Path  # the folder the server serves: a copy of lessons/

    def url(self, path: str = "") -> str:
        return f"{self.base}/{path}?token={self.token}"


def wait_until_ready(server: subprocess.Popen, lab: Lab, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(lab.url("api/status"), timeout=2):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise RuntimeError(f"JupyterLab was not ready after {timeout} s:\n{log.read_text()}")


def stop(server: subprocess.Popen) -> None:
    """SIGTERM lets the server shut its kernels down; SIGKILL only if it hangs."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
