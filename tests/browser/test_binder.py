"""Binder builds the course from environment.yml and postBuild, and postBuild installs the student view."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from jupyter_server.extension.config import ExtensionConfigManager

from lab_utils.paths import ROOT
from labtools import STUDENT_CONFIG

BIN = Path(sys.executable).parent


def test_repo2docker_renders_environment_yml_and_postbuild():
    # --no-build renders the Dockerfile Binder would build: no Docker engine needed.
    run = subprocess.run([BIN / "repo2docker", "--no-build", "--debug", str(ROOT)],
                         capture_output=True, text=True, check=True)
    dockerfile = run.stdout
    assert 'env update -p ${NB_PYTHON_PREFIX} --file "environment.yml"' in dockerfile
    assert "RUN ./postBuild" in dockerfile
    assert "python=3.11" in run.stderr, "Binder's Python is environment.yml's"


def test_postbuild_installs_the_student_view(tmp_path):
    """Run postBuild against a stand-in environment and read its configuration back as Jupyter does."""
    etc = tmp_path / "env" / "etc" / "jupyter"
    # nbgrader's own defaults (every extension on), at the level postBuild writes to, as on Binder.
    nbgrader_defaults = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    (etc / "jupyter_server_config.d").mkdir(parents=True)
    shutil.copy(nbgrader_defaults, etc / "jupyter_server_config.d")
    bin_dir = tmp_path / "bin"  # a python that records what postBuild asks of it
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\n')
    (bin_dir / "python").chmod(0o755)

    subprocess.run([ROOT / "postBuild"], cwd=ROOT, check=True,
                   env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NB_PYTHON_PREFIX": str(tmp_path / "env")})

    assert (tmp_path / "calls").read_text() == "-m pip install --no-deps -e .\n"
    extensions = ExtensionConfigManager(read_config_path=[str(etc)]).get_jpserver_extensions()
    assert extensions["nbgrader.server_extensions.validate_assignment"] is True
    for name in ("formgrader", "course_list", "assignment_list"):
        assert extensions[f"nbgrader.server_extensions.{name}"] is False, name
    page_config = json.loads((etc / "labconfig" / "page_config.json").read_text())
    assert page_config == json.loads((STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())
    server = json.loads((etc / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["default_url"] == "/lab/tree/lessons"
