"""The students' repository: everything a student needs, no answer and no hidden test."""

import os
import re
import shutil
import subprocess
import sys
import tomllib

import nbformat
import pytest
from setuptools import find_packages

from lab_utils.course.publish import MARKER, PYPROJECT_HEADER, publish, repository_url
from lab_utils.paths import ROOT
from nbtools import execute, notebook_path, stray_errors

BLOCK = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    dest = tmp_path_factory.mktemp("students")
    publish(ROOT, dest)
    return dest


def published_text(dest) -> dict[str, str]:
    """Every file's text (a notebook's cell sources, as a reader of it sees them)."""
    texts = {}
    for path in dest.rglob("*"):
        if not path.is_file() or ".git" in path.parts:
            continue
        if path.suffix == ".ipynb":
            texts[str(path)] = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        else:
            try:
                texts[str(path)] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return texts


def secrets() -> tuple[list[str], list[str]]:
    """(solution bodies, hidden-test lines) of every solution notebook. A hidden line that is also
    public (in a lesson outside the blocks, or in lab_utils, which students get by design) is no
    secret; nor is a short one (`else:`)."""
    bodies, hidden, public = [], [], []
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for kind, body in BLOCK.findall(cell.source):
                bodies += [body] if kind == "SOLUTION" else []
                hidden += [line.strip() for line in body.splitlines()] if kind == "HIDDEN TESTS" else []
            public.append(BLOCK.sub("", cell.source))
    public += [p.read_text(encoding="utf-8") for p in (ROOT / "lab_utils").rglob("*.py") if "course" not in p.parts]
    public_text = "\n".join(public)
    return bodies, [line for line in dict.fromkeys(hidden) if len(line) >= 20 and line not in public_text]


def test_the_instructors_parts_are_left_out(published):
    for name in ("solutions", "tests", "benchmarks", "docs", "scripts", "nbgrader_config.py", "lab_utils/course"):
        assert not (published / name).exists(), f"{name} must not be published"
    for name in ("lessons", "data", "lab_utils", "jupyter_config", "environment.yml", "postBuild",
                 "pyproject.toml", "README.md", "Makefile"):
        assert (published / name).exists(), f"{name} is missing"
    assert "lab:" in (published / "Makefile").read_text()
    # pyproject.toml installs lab_utils* as found: the students' package, without the course wing.
    packages = find_packages(published, include=["lab_utils*"])
    assert "lab_utils" in packages and not [p for p in packages if p.startswith("lab_utils.course")]


def leaks(dest) -> list[str]:
    bodies, lines = secrets()
    assert bodies and lines, "the solutions hold answers and hidden tests to look for"
    texts = published_text(dest)
    found = [f"{path}: {line}" for line in lines for path, text in texts.items() if line in text]
    return found + [f"{path}: a solution body" for body in bodies for path, text in texts.items() if body in text]


def test_no_solution_body_and_no_hidden_test_line_is_published(published):
    assert leaks(published) == []


def test_the_leak_check_finds_a_solution_slipped_in(tmp_path):
    publish(ROOT, tmp_path)
    shutil.copy(notebook_path("solutions", "01_naive_memory"), tmp_path / "lessons" / "answers.ipynb")
    found = leaks(tmp_path)
    assert any("a solution body" in f for f in found) and any("a solution body" not in f for f in found)


def test_the_package_imports_and_lesson_01_runs_from_the_published_tree(published, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(published), "LAB_WORK_DIR": str(tmp_path / "work")}
    env.pop("LAB_LIVE", None)
    found = subprocess.run([sys.executable, "-c", "import lab_utils.memory, lab_utils.grading, lab_utils.llm; "
                            "print(lab_utils.memory.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert found.stdout.startswith(str(published / "lab_utils"))
    lesson = notebook_path("lessons", "01_naive_memory", published)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update({k: env[k] for k in ("PYTHONPATH", "LAB_WORK_DIR")})
    try:
        nb = nbformat.read(lesson, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell("import lab_utils\nprint(lab_utils.__file__)"))
        nbformat.write(nb, lesson.with_name("check.ipynb"))
        ran = execute(lesson.with_name("check.ipynb"), tmp_path / "run", allow_errors=True)
    finally:
        lesson.with_name("check.ipynb").unlink()
        for key, value in old.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    assert stray_errors(ran) == []
    assert ran.cells[-1].outputs[0]["text"].startswith(str(published / "lab_utils"))


def test_only_an_earlier_publish_is_overwritten(published, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        publish(ROOT, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    (published / ".git").mkdir(exist_ok=True)
    (published / "lessons" / "stale.ipynb").write_text("{}")
    publish(ROOT, published)
    assert (published / MARKER).exists() and (published / ".git").is_dir()
    assert not (published / "lessons" / "stale.ipynb").exists()


def test_colab_installs_from_the_students_repository_when_given(tmp_path):
    """The course's own repository holds the answers: students may not reach it."""
    course, theirs = repository_url(), "https://example.org/class-of-2027/memory-lab.git"
    publish(ROOT, tmp_path, url=theirs)
    texts = published_text(tmp_path)
    assert not [path for path, text in texts.items() if course in text], "the course's address is left"
    lesson = nbformat.read(notebook_path("lessons", "01_naive_memory", tmp_path), as_version=4)
    assert f"git+{theirs}" in next(c.source for c in lesson.cells if c.cell_type == "code")
    assert repository_url(tmp_path) == theirs
    assert f"pip install git+{theirs}" in (tmp_path / "README.md").read_text(encoding="utf-8")


def test_the_readme_covers_installing_anywhere_going_live_and_a_hub(published):
    """What the error messages refer to, and what a pip install or a hub needs, beyond `make lab`."""
    readme = " ".join((published / "README.md").read_text(encoding="utf-8").split())
    settings = ("LAB_LIVE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "LAB_RECORD", "LAB_MAX_USD", "LAB_WORK_DIR",
                "JUPYTER_CONFIG_PATH")
    assert [name for name in settings if name not in readme] == []
    assert "nbgrader validate" in readme and "under the folder it runs in" in readme


def test_the_students_pyproject_keeps_the_courses_settings_without_its_comments(published):
    """The course's comments name its tests, scripts and README badges, which the students' repository lacks."""
    theirs = (published / "pyproject.toml").read_text(encoding="utf-8")
    assert tomllib.loads(theirs) == tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    comments = "".join(line + "\n" for line in theirs.splitlines() if line.lstrip().startswith("#"))
    assert comments == PYPROJECT_HEADER


def test_a_build_leaves_git_status_clean_and_ships_no_deleted_data(tmp_path):
    """What `pip install .` leaves in the students' repository (build/, the egg-info) and what record mode
    stores are ignored, and its build/ does not carry a data file deleted since the last build into the next
    wheel."""
    publish(ROOT, tmp_path)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "publish"], check=True)
    deleted = tmp_path / "data" / "responses" / "deleted_since.json"
    deleted.write_text("{}")
    build = [sys.executable, "setup.py", "-q", "build_py", "egg_info"]
    subprocess.run(build, cwd=tmp_path, capture_output=True, check=True)
    built = tmp_path / "build" / "lib" / "lab_utils" / "data" / "responses"
    assert (built / deleted.name).exists()
    deleted.unlink()
    subprocess.run(build, cwd=tmp_path, capture_output=True, check=True)
    assert not (built / deleted.name).exists() and (built / "crystallize.json").exists()
    assert list(tmp_path.glob("*.egg-info"))
    (tmp_path / "data" / "responses" / "recorded.json").write_text("[]")  # a student's record mode
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
    assert status == ""
