"""The commands the instructor docs show run as written.

Every ```bash block right after a `<!-- docs-test -->` line in README.md and docs/instructors.md
is run, in the order of the page, each in a subshell of one bash script (`set -euo pipefail`),
from a throwaway copy of the course: the first lesson's solutions, the Makefile,
nbgrader_config.py, and links to the repository's virtual environment and to what the students'
repository is made of. A block that fails names itself."""

import os
import re
import shutil
import subprocess
import tomllib

import pytest

from lab_utils.paths import ROOT
from nbtools import LESSONS

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)

MARKED = re.compile(r"^<!-- docs-test -->\n```bash\n(.*?)^```", re.M | re.S)
PAGES = ["README.md", "docs/instructors.md"]


def blocks(page: str) -> list[str]:
    return MARKED.findall((ROOT / page).read_text(encoding="utf-8"))


def course_copy(root):
    """The instructor's clone, small: one lesson; the environment and what students get behind links."""
    shutil.copytree(ROOT / "solutions" / LESSONS[0], root / "solutions" / LESSONS[0])
    for name in ("Makefile", "nbgrader_config.py", "pyproject.toml"):
        shutil.copy(ROOT / name, root)
    for name in (".venv", "data", "lab_utils", "jupyter_config", "environment.yml", "postBuild", "setup.py",
                 "MANIFEST.in"):
        (root / name).symlink_to(ROOT / name)
    # make must see the environment as up to date, never reinstall into the repository's .venv.
    os.utime(root / "pyproject.toml", (0, 0))
    return root


@pytest.mark.parametrize("page", PAGES)
def test_every_page_marks_commands(page):
    assert blocks(page), f"{page} marks no command block with <!-- docs-test -->"


@pytest.mark.parametrize("page", PAGES)
def test_doc_commands_run_as_written(page, tmp_path):
    root = course_copy(tmp_path / "course")
    script = ["set -euo pipefail"]
    for number, block in enumerate(blocks(page), 1):
        # Each block in a subshell, from the course folder, as a reader would type it there.
        script += [f"echo '### {page}, block {number}' >&2", f"(\n{block})"]
    # nbgrader's exchange keeps a cache in the home folder: a throwaway one.
    env = {**os.environ, "TMPDIR": str(tmp_path), "LAB_WORK_DIR": str(tmp_path / "work"), "HOME": str(tmp_path)}
    run = subprocess.run(["bash", "-c", "\n".join(script)], cwd=root, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"{page}: a command failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert (root / "grades.csv").exists() and (root / "grades_canvas.csv").exists()


def test_a_command_that_removes_an_environment_makes_it_again():
    """A reader who removes a `.venv` and goes on with the next command finds `.venv/bin/…` gone."""
    for page in PAGES:
        for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
            removal = re.search(r"rm -rf \S*\.venv\b", line)
            if removal:
                assert re.search(r"\bmake \w", line[removal.end():]), f"{page}: {line}"


def test_recovering_a_lost_gradebook_enters_the_due_dates_again():
    """`make release` creates a gradebook without due dates, which nbgrader keeps nowhere else: a recovery that
    does not enter them again takes every late penalty away without a word."""
    text = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    recovery = re.search(r"^- \*\*A lost gradebook\*\*.*?(?=^- |^#)", text, re.M | re.S)[0]
    assert re.search(r"nbgrader db assignment add \S+ --duedate=", recovery)


def test_a_wheel_built_as_the_readme_says_leaves_git_status_clean():
    """`pip wheel --no-deps .` in a clone leaves setuptools' build/ and the wheel beside pyproject.toml."""
    assert "`pip wheel --no-deps .`" in (ROOT / "README.md").read_text(encoding="utf-8")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wheel = f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"
    left = ["build/lib/lab_utils/__init__.py", wheel]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *left], cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == left
