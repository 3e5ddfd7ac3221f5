"""The course's one configuration, and where its folders are.

`nbgrader_config.py` in the course folder is the only file an instructor edits: it calls
`configure` for the course's defaults, and anything after that call overrides them. Every course
command loads it with traitlets, as the bare `nbgrader` command does, so they all agree.
"""

from __future__ import annotations

import functools
import sqlite3
from contextlib import closing
from pathlib import Path

import nbgrader.api
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbformat.v4.nbbase import random_cell_id
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.converters import Autograde
from nbgrader.dbutil import ALEMBIC_DIR
from nbgrader.plugins import BasePlugin
from nbgrader.preprocessors import AssignLatePenalties, GetGrades, OverwriteCells
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from lab_utils.course import integrity, sandbox
from lab_utils.course.hidden import HiddenTestsOut
from lab_utils.course.markdown import MarkdownWithoutScripts
from lab_utils.paths import ROOT

COURSE_ID = "agent-memory-lab"
CONFIG_FILE = "nbgrader_config.py"
# Parallel graders wait for each other's gradebook writes instead of failing at once.
GRADEBOOK_WAIT_SECONDS = 120


class PutBackWithIds(OverwriteCells):
    """nbgrader's step that puts deleted test cells back, giving each the id nbformat's notebooks
    now have (without one, nbformat warns on the instructor's terminal at every step after it)."""

    def missing_cell_transform(self, *args, **kwargs):
        cell = super().missing_cell_transform(*args, **kwargs)
        cell.id = random_cell_id()
        return cell


def configure(c: Config, root: Path) -> Config:
    """The course's defaults: solutions/ is nbgrader's source folder, lessons/ its release folder."""
    root = Path(root)
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = "solutions"
    c.CourseDirectory.release_directory = "lessons"
    c.CourseDirectory.db_url = gradebook_url(root)
    # Per cell: generous, since a kernel start on a busy grading machine can take a while.
    c.Execute.timeout = 120
    # Every output is in the notebook once the last cell ran; a graceful shutdown would only wait
    # for the kernel's interpreter to tear itself down (about a second for a lesson's imports).
    c.Execute.shutdown_kernel = "immediate"
    # A test cell a student deleted is put back from the release and run, so deleting
    # a test never earns its points.
    c.OverwriteCells.add_missing_cells = True
    c.Autograde.sanitize_preprocessors = [PutBackWithIds if step is OverwriteCells else step
                                          for step in Autograde.sanitize_preprocessors.default()]
    c.ExportApp.plugin_class = "lab_utils.course.export.CanvasExport"
    c.GenerateFeedback.preprocessors = [GetGrades, HiddenTestsOut, CSSHTMLHeaderPreprocessor]
    # What a student's cell shows, as feedback and Formgrader show it: HTML without scripts, which would run
    # in the browser of whoever opens it (the instructor's, signed in to Jupyter).
    c.HTMLExporter.sanitize_html = True
    # nbgrader's templates render a Markdown cell's HTML as it is; written answers are Markdown.
    c.HTMLExporter.filters = {"markdown2html": MarkdownWithoutScripts}
    # The sandboxed kernel first: integrity's steps wrap whichever Execute step is configured.
    sandbox.install(c)
    integrity.install(c)
    return c


def gradebook_url(root: Path) -> str:
    return f"sqlite:///{Path(root) / 'gradebook.db'}?timeout={GRADEBOOK_WAIT_SECONDS}"


def load(root: Path = ROOT) -> Config:
    """The course folder's nbgrader_config.py (the repository's when the folder has none)."""
    root = Path(root)
    path = root / CONFIG_FILE if (root / CONFIG_FILE).exists() else ROOT / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"no {CONFIG_FILE} in {root}: is it the course folder?")
    config = PyFileConfigLoader(path.name, path=str(path.parent)).load_config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = gradebook_url(root)
    return config


def api(root: Path = ROOT, config: Config | None = None) -> NbGraderAPI:
    """nbgrader's API with the course's configuration (`config`: extra settings on top of it)."""
    settings = load(root)
    if config is not None:
        settings.merge(config)
    return NbGraderAPI(config=settings)


def gradebook(root: Path = ROOT) -> Gradebook:
    return Gradebook(gradebook_url(root))


def gradebook_missing(root: Path) -> str | None:
    path = Path(root) / "gradebook.db"
    return None if path.exists() else f"{path} does not exist yet: `make release` creates the gradebook"


def gradebook_damaged(root: Path) -> str | None:
    """What SQLite finds wrong in the gradebook, as a line that says what to do; None if it is sound or absent."""
    path = Path(root) / "gradebook.db"
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            found = [row[0] for row in db.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as error:
        found = [str(error)]
    if found == ["ok"]:
        return None
    return (f"{path} is damaged ({found[0]}): copy the latest sound backup (backups/) to gradebook.db, then "
            "`make autograde` again for the submissions graded since")


def late_penalty(root: Path = ROOT) -> BasePlugin:
    """The late-penalty plugin nbgrader_config.py sets up (nbgrader's default: no penalty)."""
    step = AssignLatePenalties(config=load(root))
    step.init_plugin()
    return step.plugin_inst


@functools.cache
def schema_revision() -> str:
    """The revision nbgrader stamps a new gradebook with: the head of its migrations.

    nbgrader asks the `alembic heads` command, a process of its own that takes about a second and
    fails unless the environment's scripts are on PATH; alembic's API gives the same answer here.
    """
    # Imported here: a tenth of a second that only a command creating a gradebook needs.
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory

    settings = AlembicConfig()
    settings.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(settings).get_current_head()


# Every process that loads the course's configuration (the course commands, the bare `nbgrader`
# command through nbgrader_config.py) creates gradebooks through this.
nbgrader.api.get_alembic_version = schema_revision


def lesson_names(root: Path = ROOT) -> list[str]:
    """Every lesson, in course order: the folders of solutions/."""
    return sorted(p.name for p in (Path(root) / "solutions").iterdir() if p.is_dir())


def submissions(root: Path = ROOT, folder: str = "submitted", only: str | None = None) -> list[tuple[str, str]]:
    """(student, lesson) for every folder <folder>/<student>/<lesson>/, or only those of one lesson. Hidden
    folders are no one's (Jupyter's .ipynb_checkpoints, autograde's copies of the submissions it is grading)."""
    base = Path(root) / folder
    if not base.is_dir():
        return []
    return [(student.name, lesson.name)
            for student in sorted(base.iterdir()) if student.is_dir() and not student.name.startswith(".")
            for lesson in sorted(student.iterdir())
            if lesson.is_dir() and not lesson.name.startswith(".") and only in (None, lesson.name)]
