"""The course outside its repository: a wheel, installed in a fresh environment, runs a lesson alone.

The wheel is built from the files a clone holds (tracked, and new ones not ignored); the fresh
environment borrows this one's dependencies through a path entry (offline and fast) but not its
editable lab_utils, so the lesson can only use the wheel's code and the data the wheel carries.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lab_utils.paths import ROOT
from nbtools import notebook_path

LESSON = "03_write_rules"  # reads data/, replays stored model answers, writes a store and a session

RUN = textwrap.dedent("""
    import sys
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(sys.argv[1], as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("import lab_utils; print(lab_utils.__file__)"))
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    print(nb.cells[0].outputs[0].text, end="")
""")


# Nothing from PYTHONPATH: pip would take this repository's lab_utils there for the wheel's, installed.
ISOLATED = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def sh(*args, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    run = subprocess.run(args, capture_output=True, text=True, env=env or ISOLATED, **kwargs)
    assert run.returncode == 0, f"{' '.join(map(str, args))} failed:\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment outside the repository with the course's wheel installed."""
    tmp = tmp_path_factory.mktemp("installed")
    files = sh("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=ROOT).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (tmp / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "src" / name).write_bytes((ROOT / name).read_bytes())
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", tmp / "src")
    wheel = next((tmp / "dist").glob("*.whl"))
    sh(sys.executable, "-m", "venv", "--without-pip", tmp / "venv")
    python = tmp / "venv" / "bin" / "python"
    sh(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel)
    # This environment's packages as a plain path entry: its .pth files (the editable
    # lab_utils among them) are not processed, so only the wheel provides lab_utils.
    site = sh(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()
    borrowed = sh(sys.executable, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()
    Path(site, "borrowed.pth").write_text(borrowed + "\n")
    return python


def files_under(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_a_lesson_alone_runs_on_the_installed_course(installed, tmp_path):
    folder = tmp_path / "just-a-folder"
    folder.mkdir()
    notebook = folder / f"{LESSON}.ipynb"
    notebook.write_bytes(notebook_path("solutions", LESSON).read_bytes())
    package = Path(sh(installed, "-c", "import lab_utils; print(lab_utils.__file__)", cwd=folder).stdout.strip()).parent
    before = files_under(package)
    private = ("LAB_WORK_DIR", "LAB_LIVE", "LAB_RECORD", "ANTHROPIC_API_KEY")
    env = {k: v for k, v in ISOLATED.items() if k not in private}
    run = sh(installed, "-c", RUN, notebook.name, cwd=folder, env={**env, "MPLBACKEND": "Agg"})

    assert Path(run.stdout.strip()).parent == package, "the lesson must import the installed course"
    assert package.is_relative_to(installed.parent.parent), "installed in the fresh environment"
    assert (package / "data" / "support").is_dir(), "the wheel carries the course data"
    written = {p.relative_to(folder).parts[0] for p in folder.rglob("*") if p.is_file()} - {notebook.name}
    assert written == {"work"}, f"the lesson wrote outside its work folder: {sorted(written)}"
    assert files_under(package) == before, "the lesson changed the installed package"
