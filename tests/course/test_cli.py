"""The course commands on a fresh clone, and the configuration every one of them reads."""

import re
import shutil
import sqlite3
import subprocess
import textwrap
from contextlib import closing
from types import SimpleNamespace

import pandas as pd
import pytest
from nbgrader.dbutil import write_alembic_ini

from coursetools import NBGRADER, course_cli, interrupted_nbgrader, new_course
from lab_utils.course import autograde, sandbox
from lab_utils.course.autograde import points, statuses
from lab_utils.course.__main__ import main
from lab_utils.course.config import gradebook, late_penalty, load, schema_revision
from lab_utils.course.export import canvas_table
from lab_utils.course.grades import grade_table
from lab_utils.paths import ROOT
from nbtools import LESSONS, notebook_path


@pytest.mark.parametrize("command", [["release"], ["autograde"], ["feedback"], ["grades"], ["publish", "students"]])
def test_a_folder_that_is_no_course_is_named(tmp_path, capsys, command):
    typo = tmp_path / "my-corse"
    assert main([*command, "--root", str(typo)]) == 2
    assert capsys.readouterr().err.startswith(f"{typo} is not a course folder: it has no solutions/")
    assert list(tmp_path.iterdir()) == [], "nothing is written"


def test_autograde_before_release_says_what_to_do(tmp_path):
    shutil.copytree(ROOT / "solutions" / LESSONS[0], tmp_path / "solutions" / LESSONS[0])
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    run = course_cli(tmp_path, "autograde")
    assert run.returncode == 2
    assert run.stderr.strip() == f"the gradebook has no {LESSONS[0]}: run `make release` first"


def test_autograde_in_a_copy_whose_kernels_import_another_library_refuses(tmp_path):
    """A course folder copied with its environment (`cp -a`): the grader imports the copy's lab_utils,
    a kernel the library the environment was installed from, so every test would fail for nothing."""
    shutil.copytree(ROOT / "lab_utils", tmp_path / "lab_utils")
    (tmp_path / "solutions").mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    run = course_cli(tmp_path, "autograde")
    assert run.returncode == 2
    assert run.stderr.startswith(f"a kernel started here imports lab_utils from {ROOT / 'lab_utils'}, not "
                                 f"{tmp_path / 'lab_utils'}: every test would fail")
    assert "`rm -rf .venv`" in run.stderr


@pytest.mark.parametrize("cap", ["cgroup", ""])
def test_autograde_warns_where_processes_cannot_be_capped(tmp_path, capsys, monkeypatch, cap):
    (tmp_path / "solutions").mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    monkeypatch.setattr(sandbox, "process_cap", lambda: cap)
    assert main(["autograde", "--root", str(tmp_path)]) == 0
    warned = "the sandbox cannot cap processes here" in capsys.readouterr().err
    assert warned == (not cap)


def test_settings_added_to_nbgrader_config_win(tmp_path):
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    with open(tmp_path / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\nc.Sandbox.memory_mb = 512\n')
    settings = load(tmp_path)
    assert settings.LateSubmissionPlugin.penalty_method == "zero"
    assert settings.Sandbox.memory_mb == 512
    assert settings.CourseDirectory.root == str(tmp_path)
    assert settings.CourseDirectory.source_directory == "solutions"


def test_the_late_penalty_of_the_instructors_own_in_the_docs_is_applied(tmp_path):
    plugin = re.search(r"^   ```python\n(.*?)^   ```", (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8"),
                       re.M | re.S)[1]
    config_text = (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")
    (tmp_path / "nbgrader_config.py").write_text(config_text + "\n" + textwrap.dedent(plugin), encoding="utf-8")
    notebook = SimpleNamespace(score=8.0, grades=[])
    submission = SimpleNamespace(notebooks=[notebook], student=SimpleNamespace(id="ada"), score=8.0, max_score=10.0,
                                 code_score=8.0, max_code_score=10.0, total_seconds_late=1.5 * 86400)
    late = points(submission, late_penalty(tmp_path))
    assert (late.penalty, late.score) == pytest.approx((1.6, 6.4)), "two days begun: two tenths of 8 points"
    later = points(SimpleNamespace(**{**vars(submission), "total_seconds_late": 51 * 3600}), late_penalty(tmp_path))
    assert (later.penalty, later.score) == (2.4, 5.6), "shown without float noise (8 * 0.3 = 2.4000000000000004)"


def test_backups_are_dated_copies_of_the_gradebook_as_committed(tmp_path, capsys):
    (tmp_path / "solutions").mkdir()
    assert main(["backup", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"{tmp_path / 'gradebook.db'} does not exist yet: `make release` "
                                               "creates the gradebook")
    with closing(sqlite3.connect(tmp_path / "gradebook.db")) as open_gradebook:  # as the Formgrader holds it
        open_gradebook.execute("create table grade (student text, manual_score real)")
        open_gradebook.execute("insert into grade values ('ada', 4.5)")
        open_gradebook.commit()
        open_gradebook.execute("insert into grade values ('bob', 1.0)")  # not committed yet
        assert main(["backup", "--root", str(tmp_path)]) == main(["backup", "--root", str(tmp_path)]) == 0
    said = re.findall(r"^copied gradebook.db to (backups/gradebook-\d{8}-\d{6}(?:-2)?\.db)$", capsys.readouterr().out,
                      re.M)
    assert len(set(said)) == 2, "a second backup within the same second does not overwrite the first"
    for copy in said:
        with closing(sqlite3.connect(tmp_path / copy)) as backed_up:
            assert backed_up.execute("select * from grade").fetchall() == [("ada", 4.5)]


def damage(gradebook_file):
    """Overwrite pages in the middle of an SQLite file, as a crash or a disk fault would."""
    with open(gradebook_file, "r+b") as db:
        db.seek(4096)
        db.write(b"\x42" * 4096 * 4)


def test_a_damaged_gradebook_stops_every_command_and_is_never_backed_up(tmp_path, capsys):
    (tmp_path / "solutions").mkdir()
    gradebook(tmp_path).close()
    assert main(["backup", "--root", str(tmp_path)]) == 0
    earlier = sorted((tmp_path / "backups").iterdir())
    damage(tmp_path / "gradebook.db")
    capsys.readouterr()
    for command in ("backup", "grades", "autograde", "feedback", "release"):
        assert main([command, "--root", str(tmp_path)]) == 2, command
        said = capsys.readouterr()
        assert said.out == ""
        assert said.err == (f"{tmp_path / 'gradebook.db'} is damaged (database disk image is malformed): copy the "
                            "latest sound backup (backups/) to gradebook.db, then `make autograde` again for the "
                            "submissions graded since\n")
    assert sorted((tmp_path / "backups").iterdir()) == earlier, "the last backup is still the sound one"


def test_grades_without_a_gradebook_refuse_and_leave_the_lms_file(tmp_path, capsys):
    (tmp_path / "solutions" / LESSONS[0]).mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    (tmp_path / "grades_canvas.csv").write_text("the grades sent last week\n")
    assert main(["grades", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"{tmp_path / 'gradebook.db'} does not exist yet: `make release` creates the "
                                       "gradebook\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades_canvas.csv", "nbgrader_config.py", "solutions"]
    assert (tmp_path / "grades_canvas.csv").read_text() == "the grades sent last week\n"


@pytest.mark.parametrize("command", ["autograde", "feedback"])
@pytest.mark.parametrize("given, said", [
    (["--lesson", "01_naive_memry"], f"no lesson is called '01_naive_memry': the lessons are {LESSONS[0]}, {LESSONS[1]}"),
    (["--student", "ada", "--student", "adaa"], "no student 'adaa' in submitted/{or_autograded}: the students there "
                                                "are ada, bob"),
])
def test_a_lesson_or_student_that_does_not_exist_is_named(tmp_path, capsys, command, given, said):
    for lesson in LESSONS[:2]:
        (tmp_path / "solutions" / lesson).mkdir(parents=True)
    for student in ("ada", "bob"):
        (tmp_path / "submitted" / student / LESSONS[0]).mkdir(parents=True)
    unsafe = ["--unsafe"] if command == "autograde" else []  # no sandbox needed to refuse
    assert main([command, *given, "--root", str(tmp_path), *unsafe]) == 2
    or_autograded = " or autograded/" if command == "feedback" else ""
    assert capsys.readouterr().err == said.format(or_autograded=or_autograded) + "\n"


def test_ctrl_c_stops_autograde_at_once_and_leaves_the_submission_as_it_was(tmp_path, capsys, monkeypatch):
    """nbgrader takes a Ctrl-C for a failure of the submission it was grading, and removes its autograded copy."""
    root = new_course(tmp_path, [LESSONS[0]])
    for student in ("ada", "bob"):
        shutil.copytree(notebook_path("lessons", LESSONS[0], root).parent, root / "submitted" / student / LESSONS[0])
    graded = notebook_path("autograded/ada", LESSONS[0], root)
    graded.parent.mkdir(parents=True)
    graded.write_text("the copy an earlier autograde wrote")
    (root / "feedback" / "ada" / LESSONS[0]).mkdir(parents=True)
    calls = []
    monkeypatch.setattr(autograde, "api", interrupted_nbgrader(calls))
    assert main(["autograde", "--root", str(root), "--unsafe"]) == 130
    assert calls == [("ada", LESSONS[0])], "nothing is graded after the interrupt"
    assert capsys.readouterr().err == ("autograde: interrupted after 0 submissions, whose outcomes are kept: run the "
                                       "same command again to go on\n")
    assert statuses(root) == {}, "the interrupted submission did not fail"
    assert graded.read_text() == "the copy an earlier autograde wrote"
    assert (root / "feedback" / "ada" / LESSONS[0]).is_dir(), "its feedback stays"
    assert [p.name for p in (root / "autograded").iterdir()] == ["ada"]


def test_a_new_gradebook_carries_the_revision_alembic_heads_names(tmp_path, monkeypatch):
    ini = tmp_path / "alembic.ini"  # as nbgrader writes it before it runs `alembic heads`
    write_alembic_ini(str(ini), f"sqlite:///{tmp_path / 'unused.db'}")
    heads = subprocess.run([NBGRADER.with_name("alembic"), "-c", ini, "heads"], capture_output=True, text=True,
                           check=True).stdout
    assert heads.split() == [schema_revision(), "(head)"], "nbgrader stamps the first line's revision"
    monkeypatch.setenv("PATH", "")  # nothing to run: the revision must come from alembic's API
    gradebook(tmp_path).close()
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(schema_revision(),)]


def test_nbgrader_export_writes_the_canvas_file(tmp_path):
    root = new_course(tmp_path, [LESSONS[0]])
    subprocess.run([NBGRADER, "db", "student", "add", "ada", "--first-name=Ada", "--last-name=Lovelace"],
                   cwd=root, check=True, capture_output=True)
    subprocess.run([NBGRADER, "export"], cwd=root, check=True, capture_output=True)
    canvas = pd.read_csv(root / "grades_canvas.csv")
    assert list(canvas.columns) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LESSONS[0]]
    assert canvas.Student.tolist() == ["Points Possible", "Lovelace, Ada"]
    assert pd.isna(canvas.loc[1, LESSONS[0]]), "no submission: nothing to send to the LMS"


def test_only_final_grades_reach_the_lms():
    grades = pd.DataFrame([
        dict(student="ada", lesson="01", score=7.0, max_score=8.0, status="graded"),
        dict(student="bob", lesson="01", score=8.0, max_score=8.0, status="flagged: test cell test-a edited"),
        dict(student="cy", lesson="01", score=float("nan"), max_score=8.0, status="not graded: broken"),
        dict(student="ada", lesson="02", score=5.0, max_score=9.0, status="needs hand grading (3 points)"),
    ])
    canvas = canvas_table(grades, {"ada": "Lovelace, Ada"}).set_index("Student")
    assert canvas.loc["Points Possible", "01"] == 8 and canvas.loc["Points Possible", "02"] == 9
    assert canvas.loc["Lovelace, Ada", "01"] == 7 and canvas.loc["Lovelace, Ada", "SIS Login ID"] == "ada"
    assert canvas[["01", "02"]].drop(index=["Points Possible"]).notna().sum().sum() == 1


def test_a_submission_in_a_misnamed_folder_is_pointed_to_in_grades(tmp_path):
    """autograde cannot grade it (no lesson is called so); grades.csv would show the lesson as not handed in."""
    root = new_course(tmp_path, [LESSONS[0]])
    released = notebook_path("lessons", LESSONS[0], root)
    for student, folder, name in [("judy", "01-naive-memory", released.name), ("ivy", "09_missing_lesson", "x.ipynb")]:
        (root / "submitted" / student / folder).mkdir(parents=True)
        shutil.copy(released, root / "submitted" / student / folder / name)
    table = grade_table(root).set_index("student")
    assert table.loc["judy", "status"] == ("not graded: submitted/judy/01-naive-memory/ is not named as a lesson "
                                           f"of lessons/: rename it to submitted/judy/{LESSONS[0]}/, then "
                                           "`make autograde`")
    assert pd.isna(table.loc["judy", "score"])
    assert table.loc["ivy", "status"] == "no submission"
    assert table.loc["ivy", "notes"] == ("submitted/ivy/09_missing_lesson/ is not named as a lesson of lessons/, "
                                         "and is not graded")


def test_a_file_that_is_json_but_no_notebook_is_told_what_it_lacks(tmp_path, capsys):
    """nbformat's reader fails on it with an error of its own ("'int' object is not iterable")."""
    root = new_course(tmp_path, [LESSONS[0]])
    folder = root / "submitted" / "olga" / LESSONS[0]
    folder.mkdir(parents=True)
    (folder / f"{LESSONS[0]}.ipynb").write_text('{"cells": 5}')
    assert main(["autograde", "--root", str(root), "--unsafe"]) == 1
    assert (f"olga/{LESSONS[0]}: {LESSONS[0]}.ipynb is not a valid notebook (the top level: 'metadata' is a required "
            "property, 'nbformat_minor' is a required property, 'nbformat' is a required property; cells: 5 is not "
            "of type 'array')") in capsys.readouterr().err
