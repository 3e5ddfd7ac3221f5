"""The repository students get: the lessons, the data and lab_utils, without the answers.

Left out: solutions/ (reference answers and hidden tests), tests/ and their grading fixtures,
benchmarks/, docs/instructors.md, this package (lab_utils/course/) and everything nbgrader keeps
for the instructor (gradebook, submissions). The students' README, Makefile and .gitignore are written
here, and pyproject.toml's comments, which name the course's own files, are replaced.
A folder already holding a publish is replaced (its .git kept, so the next publish is a commit);
any other non-empty folder is refused.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from lab_utils.paths import ROOT

MARKER = ".students-repository"  # a publish writes it; only such a folder is ever overwritten
COPIED = ("lessons", "data", "lab_utils", "jupyter_config", "environment.yml", "postBuild",
          "pyproject.toml", "setup.py", "MANIFEST.in")
SKIPPED = shutil.ignore_patterns("course", "__pycache__", "*.pyc", ".ipynb_checkpoints")

MAKEFILE = """\
# `make lab` sets everything up on a fresh machine and opens the lessons.
PYTHON ?= python3
BIN := .venv/bin
READY := .venv/.ready
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab validate

$(READY): pyproject.toml
\t$(PYTHON) -m venv .venv
\t$(BIN)/python -m pip install --quiet --upgrade pip
\t$(BIN)/python -m pip install --quiet -e .
\ttouch $(READY)

lab: $(READY)  ## open the lessons in JupyterLab
\tJUPYTER_CONFIG_PATH=$(CURDIR)/jupyter_config $(BIN)/jupyter lab $(ROOT_FLAG)

# `make validate LESSON=01_naive_memory`: what the Validate button does, from the command line.
validate: $(READY)
\tJUPYTER_CONFIG_PATH=$(CURDIR)/jupyter_config $(BIN)/nbgrader validate lessons/$(or $(LESSON),*)/*.ipynb
"""

GITIGNORE = """\
.venv/
__pycache__/
.ipynb_checkpoints/
work/
# what `pip install .` leaves
build/
*.egg-info/
# what record mode (LAB_RECORD=1) stores: a student's own answers, not the course's
data/responses/recorded.json
"""

# The course's pyproject.toml comments name its tests, scripts and README; the students' copy says this instead.
PYPROJECT_HEADER = """\
# The dependencies are pinned exactly, so that every student and the grader run the same code;
# environment.yml (Binder) repeats the pins.
"""

def readme(url: str) -> str:
    """The students' README; `url` is their repository, whence pip installs the course."""
    return f"""\
# Agent Memory Lab

A hands-on Jupyter course in which you build long-term memory for an LLM support agent: you give
it a memory, break that memory, fix it with write rules, measure it, give facts a temporal schema,
and finally let an outer loop improve it. Every lesson runs **offline, with no API key**, in
seconds: the model's answers are replayed from `data/responses/`.

## Start

```bash
make lab    # creates .venv, installs the course, opens JupyterLab on lessons/
```

You need Python 3.11 or newer and `make`. Open `lessons/01_naive_memory/01_naive_memory.ipynb`
and run it from the top. Each exercise is a cell that says `raise NotImplementedError()`: replace
it with your code, then run the test cell below it. An unfinished exercise fails there, and only
there; the rest of the lesson still runs, because later lessons import the course's own version
of earlier exercises from `lab_utils`.

## Validate

The **Validate** button in the notebook's toolbar runs the whole notebook and tells you which test
cells fail, with a message naming the rule your answer broke. `make validate` (or
`make validate LESSON=01_naive_memory`) does the same from a terminal. Validate passing means the
rules the lesson states hold for the cases it shows; your submission is also graded on other
cases, so keep to the rules, not to the examples.

## Installing anywhere with pip

```bash
pip install git+{url}    # or: pip install path/to/this/folder
```

This installs `lab_utils` with the course data, and the exact versions of JupyterLab, nbgrader and
the rest that the course runs on, into any environment with Python 3.11 or newer; no clone is
needed. A lesson notebook then runs from any folder and writes only to `work/` under the folder it
runs in (JupyterLab runs a notebook in its own folder). `nbgrader validate <lesson>.ipynb` is
Validate in a terminal: set `JUPYTER_CONFIG_PATH` to this repository's `jupyter_config/` for it, as
`make validate` does, or it cuts the tests' messages short.

## Binder and Colab

- **Binder**: open this repository on [mybinder.org](https://mybinder.org) and add
  `?urlpath=lab/tree/lessons` to the launch link. Binder builds `environment.yml` and runs
  `postBuild`, so you get the same view as `make lab`. It does not keep files: download your
  notebook before you close the tab.
- **Colab**: open a lesson from GitHub in Colab (File → Open notebook → GitHub). Its first cell
  finds itself on Colab and installs the course; the rest runs as everywhere else. Colab has no
  Validate button (run the test cells), and its files vanish with the runtime: download your
  notebook before you close the tab.

## Offline and live

By default every model call is answered from `data/responses/`, through the real `anthropic`
client. To call the model yourself, set these in the environment that starts JupyterLab:

```bash
LAB_LIVE=1 ANTHROPIC_API_KEY=sk-... make lab              # live calls
LAB_LIVE=1 LAB_RECORD=1 ANTHROPIC_API_KEY=sk-... make lab  # live, and store answers for offline runs
# any Anthropic-compatible server (a gateway, a proxy, a local model server), with its own key
LAB_LIVE=1 ANTHROPIC_API_KEY=... ANTHROPIC_BASE_URL=http://127.0.0.1:8080 make lab
```

Spending is counted and capped by `LAB_MAX_USD` (default USD 1.00 per kernel). A request that has
no stored answer offline fails with a message saying how to go live. Your key is never written
to a file. Record mode stores answers in `data/responses/recorded.json` in this folder, or in
`work/responses/recorded.json` when the course is installed with pip; offline, a recorded answer is
replayed in place of the course's own for the same request, and the lesson says so once. Delete that
file to get the course's answers back.

## On a JupyterHub (for its admin)

Install the course into the environment the students' servers run in (`pip install` as above), and
set `JUPYTER_CONFIG_PATH` for every student (for example in `c.Spawner.environment`) to a copy of
this repository's `jupyter_config/` that they can read; pip does not install that folder. Students
then get nbgrader's Validate button, without the instructor's Formgrader, course list and assignment
list, which an installed nbgrader otherwise turns on. Each student's notebooks write to `work/`
under the folder they run in, or where `LAB_WORK_DIR` says.

## Layout

```
lessons/        the notebooks you work in
data/           every dataset and stored model answer the lessons use
lab_utils/      the course's library: what later lessons build on, the model layer, plots
jupyter_config/ the JupyterLab view for students (make lab, Binder and a hub use it)
```

With `make lab`, notebooks write only to this folder's `work/`; installed with pip, to `work/` under
the folder they run in. `LAB_WORK_DIR` moves it. A lesson's folder there serves one run at a time: a second
run of the same lesson at once (another kernel, another `nbconvert`) stops with a message naming the first
one's pid; wait until it ends, or give the second its own `LAB_WORK_DIR`.
"""


def repository_url(root: Path = ROOT) -> str:
    """The course's repository (pyproject.toml's Repository), whence each lesson's Colab cell installs it."""
    project = tomllib.loads((Path(root) / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["urls"]["Repository"].rstrip("/")


def repoint(dest: Path, old: str, new: str) -> None:
    """The students' repository's own address, where the course's was: in pyproject.toml, and in each
    lesson's Colab cell, which installs the course from it."""
    for path in [dest / "pyproject.toml", *sorted((dest / "lessons").glob("*/*.ipynb"))]:
        path.write_text(path.read_text(encoding="utf-8").replace(old, new.rstrip("/")), encoding="utf-8")


def without_comments(pyproject: Path) -> None:
    """pyproject.toml without its comment lines, under PYPROJECT_HEADER."""
    lines = pyproject.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if not line.lstrip().startswith("#")]
    pyproject.write_text(PYPROJECT_HEADER + "".join(kept), encoding="utf-8")


def publish(root: Path, dest: Path, url: str | None = None) -> None:
    """Write the students' repository from the course in `root` into `dest`; `url`, where it will be
    published, is where Colab installs the course from (the course's own repository if None)."""
    root, dest = Path(root), Path(dest)
    missing = [name for name in COPIED if not (root / name).exists()]
    if missing:
        raise FileNotFoundError(f"{root} is not a course folder: no {', '.join(missing)}")
    if dest.exists() and any(dest.iterdir()):
        if not (dest / MARKER).exists():
            raise FileExistsError(f"{dest} is not empty and holds no earlier publish ({MARKER}): "
                                  "choose a new or empty folder")
        for entry in dest.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=SKIPPED)
        else:
            shutil.copy2(source, dest / name)
    without_comments(dest / "pyproject.toml")
    if url:
        repoint(dest, repository_url(root), url)
    students_readme = readme((url or repository_url(root)).rstrip("/"))
    for name, text in (("README.md", students_readme), ("Makefile", MAKEFILE), (".gitignore", GITIGNORE),
                       (MARKER, "Written by `python -m lab_utils.course publish`; the next publish replaces it.\n")):
        (dest / name).write_text(text, encoding="utf-8")
