"""Colab: every lesson opens with a cell that installs the course there, and does nothing elsewhere."""

import subprocess
import sys
import types

import nbformat
import pytest

from lab_utils.paths import ROOT
from nbtools import LESSONS, notebook_path

sys.path.insert(0, str(ROOT / "scripts"))
import colab_cells  # noqa: E402

URL = colab_cells.repository_url()
CELL = colab_cells.colab_cell(URL, colab_cells.colab_pins())


def run_first_cell(monkeypatch, on_colab: bool) -> list:
    """Run the rendered cell with pip replaced by a recorder; the install commands it ran."""
    commands = []
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: commands.append((command, kwargs)))
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(CELL, "colab-install", "exec"), {})
    return commands


def test_on_colab_the_cell_installs_the_course_from_its_repository(monkeypatch):
    commands = run_first_cell(monkeypatch, on_colab=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-warn-conflicts"]
    assert commands == [([*pip, "--no-deps", f"git+{URL}"], {"check": True}),
                        ([*pip, *colab_cells.colab_pins()], {"check": True})]
    assert all("==" in pin for pin in commands[1][0][len(pip):]), "what Colab lacks is installed pinned"


def test_elsewhere_the_cell_does_nothing(monkeypatch):
    assert run_first_cell(monkeypatch, on_colab=False) == []


@pytest.mark.parametrize("folder", ["solutions", "lessons"])
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_opens_with_the_colab_cell(folder, lesson):
    nb = nbformat.read(notebook_path(folder, lesson), as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source == CELL, f"{folder}/{lesson}: run scripts/colab_cells.py, then make release"


def test_stamping_adds_the_cell_once_and_updates_it_in_place(tmp_path):
    path = tmp_path / "lesson.ipynb"
    before = nbformat.read(notebook_path("solutions", LESSONS[0]), as_version=4)
    before.cells = [c for c in before.cells if c.get("id") != colab_cells.CELL_ID]
    nbformat.write(before, path)
    assert colab_cells.stamp(path, "print('an older cell')") and colab_cells.stamp(path, CELL)
    assert not colab_cells.stamp(path, CELL), "a second run changes nothing"
    after = nbformat.read(path, as_version=4)
    assert len(after.cells) == len(before.cells) + 1
    assert next(c for c in after.cells if c.cell_type == "code").source == CELL
    assert [c.source for c in after.cells if c.get("id") != colab_cells.CELL_ID] == [c.source for c in before.cells]


def test_the_readme_install_command_and_badges_come_from_the_one_url():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = colab_cells.MARKERS
    assert readme.split(start)[1].split(end)[0].strip() == colab_cells.readme_block(URL, LESSONS), \
        "run scripts/colab_cells.py"
    assert f"pip install git+{URL}" in readme
    assert colab_cells.colab_link(URL, "lessons", LESSONS[0]) == (
        f"https://colab.research.google.com/github/{URL.removeprefix('https://github.com/')}"
        f"/blob/main/lessons/{LESSONS[0]}/{LESSONS[0]}.ipynb")
