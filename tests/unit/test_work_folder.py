"""The work folder: one run of a lesson at a time in it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lab_utils.paths import LOCK_FILE, ROOT, WorkFolderBusy, work_dir

TAKE = "from lab_utils.paths import work_dir; work_dir('lesson04', 'runs'); print('taken', flush=True)"


def python(code: str, work: os.PathLike | str, env_extra: dict | None = None, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_WORK_DIR": str(work), **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-c", code], env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.PIPE, **popen)


def test_a_second_run_at_once_stops_naming_the_first_and_its_exit_frees_the_folder(tmp_path):
    first = python(TAKE + "; input()", tmp_path)  # holds the folder until told to end
    assert first.stdout.readline() == "taken\n"
    second = python(TAKE, tmp_path)
    _, said = second.communicate(timeout=60)
    assert second.returncode != 0
    assert (f"WorkFolderBusy: another run of this lesson (pid {first.pid}) is using the work folder "
            f"{tmp_path / 'lesson04'}") in said
    assert "wait until that run ends" in said and "set LAB_WORK_DIR to another folder" in said
    first.communicate("\n", timeout=60)
    third = python(TAKE, tmp_path)
    assert third.communicate(timeout=60)[0] == "taken\n"


def test_the_same_process_gets_its_folder_again_and_other_lessons_are_free(offline, tmp_path):
    first = python(TAKE + "; input()", tmp_path / "work")
    assert first.stdout.readline() == "taken\n"
    try:
        assert work_dir("lesson05") == work_dir("lesson05", "runs").parent
        with pytest.raises(WorkFolderBusy):
            work_dir("lesson04")
    finally:
        first.communicate("\n", timeout=60)


def test_nbgrader_validate_runs_beside_the_students_own_kernel(offline, tmp_path, monkeypatch):
    first = python(TAKE + "; input()", tmp_path / "work")
    assert first.stdout.readline() == "taken\n"
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    try:
        assert work_dir("lesson04").is_dir()
    finally:
        first.communicate("\n", timeout=60)


def test_the_lock_is_a_dot_file_no_listing_of_a_lesson_sees(offline):
    folder = work_dir("lesson02")
    assert (folder / LOCK_FILE).exists() and LOCK_FILE.startswith(".")
    assert not [*folder.glob("*.json*"), *folder.glob("*.md")]


def test_a_tilde_means_the_home_folder(tmp_path):
    run = python("from lab_utils.paths import work_dir; print(work_dir('lesson01'))", "~/labwork",
                 cwd=tmp_path, env_extra={"HOME": str(tmp_path / "home")})
    assert run.communicate(timeout=60)[0] == f"{tmp_path / 'home' / 'labwork' / 'lesson01'}\n"
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("code, who", [
    ("", "set in the environment this runs in; make that folder writable"),
    ("import os; os.environ['LAB_WORK_DIR'] = {blocked!r}; ", "set by this notebook; a graded notebook"),
])
def test_an_unwritable_work_folder_is_blamed_on_whoever_set_it(tmp_path, code, who):
    (tmp_path / "a-file").touch()
    blocked = str(tmp_path / "a-file" / "work")  # no folder can be made in a file, not even by root
    started = blocked if not code else str(tmp_path / "work")
    run = python(code.format(blocked=blocked) + "from lab_utils.paths import work_dir; work_dir('lesson01')", started)
    said = run.communicate(timeout=60)[1].strip().splitlines()[-1]
    assert said.startswith(f"NotADirectoryError: [Errno 20] cannot create the work folder {blocked}/lesson01: "
                           f"Not a directory; LAB_WORK_DIR is {blocked!r}, {who}"), said
