"""JupyterLab as students get it (Binder's configuration), served from .venv, seen in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from lab_utils.paths import ROOT
from labtools import (ARTIFACTS, CHROMIUM, NOTEBOOK, PROMPTS, STUDENT_CONFIG, TIMINGS, Lab, stop,
                      wait_until_ready)
from ports import unused_port


@pytest.fixture(scope="session")
def chromium() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    reason = f"{CHROMIUM} is missing: apt-get install chromium-headless-shell (.ci/run does)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def lab(chromium, tmp_path_factory):
    """`jupyter lab` from .venv with the student configuration, on loopback, behind a token."""
    home = tmp_path_factory.mktemp("jupyterlab")
    root = home / "course"
    # A copy, because the browser saves notebooks; nbgrader_config.py is read by Validate.
    shutil.copytree(ROOT / "lessons", root / "lessons")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    private = {"ANTHROPIC_API_KEY", "LAB_LIVE", "LAB_RECORD", "MPLBACKEND"}  # offline, inline figures
    env = {k: v for k, v in os.environ.items() if k not in private}
    env.update(
        JUPYTER_CONFIG_PATH=str(STUDENT_CONFIG),
        # Empty personal folders: nobody's ~/.jupyter settings change what the test sees.
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        LAB_WORK_DIR=str(home / "work"),
    )
    port = unused_port()
    lab = Lab(f"http://127.0.0.1:{port}", secrets.token_hex(16), root)
    log = home / "jupyterlab.log"
    command = [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser", "--allow-root",
               "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={lab.token}"]
    start = time.perf_counter()
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        wait_until_ready(server, lab, log)
        TIMINGS["JupyterLab server ready"] = time.perf_counter() - start
        yield lab
    finally:
        stop(server)


@pytest.fixture(scope="session")
def page(chromium, lab):
    """One Chromium page on JupyterLab's default URL, loaded once for every test."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=[
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            # The machine's closed network refuses Chromium's own background connections.
            "--disable-background-networking",
            "--disable-component-update",
        ])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            wait_ms = 60_000  # a lesson's kernel under a loaded machine; assertions wait as long as actions
            page.set_default_timeout(wait_ms)
            expect.set_options(timeout=wait_ms)
            start = time.perf_counter()
            page.goto(lab.url())
            page.locator(".jp-DirListing-item").first.wait_for()
            TIMINGS["JupyterLab page ready (file browser shown)"] = time.perf_counter() - start
            yield page
        finally:
            browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test leaves a screenshot and the text of any open dialog: a CI log alone
    cannot say what was on the screen."""
    report = yield
    page = item.funcargs.get("page") if hasattr(item, "funcargs") else None
    if report.when == "call" and report.failed and page is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", item.name)
        shot = ARTIFACTS / f"FAILED-{name}.png"
        page.screenshot(path=shot)
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        prompts = page.locator(PROMPTS).all_text_contents()
        unfinished = [(i, p) for i, p in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", p)]
        indicator = page.locator(f"{NOTEBOOK} .jp-Notebook-ExecutionIndicator")
        kernel = indicator.get_attribute("data-status") if indicator.count() else "no notebook open"
        report.sections.append(("browser", f"screenshot: {shot}\nopen dialogs: {dialogs or 'none'}\n"
                                           f"kernel: {kernel}; of {len(prompts)} code cells "
                                           f"{len(unfinished)} not run, first {unfinished[:5]}"))
    return report


def pytest_terminal_summary(terminalreporter):
    if not TIMINGS:
        return
    terminalreporter.section("JupyterLab wall times")
    for what, seconds in TIMINGS.items():
        terminalreporter.write_line(f"{seconds:6.1f} s  {what}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "timings.json").write_text(json.dumps(TIMINGS, indent=2) + "\n")
