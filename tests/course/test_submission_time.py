"""autograde refuses a timestamp.txt exactly when nbgrader could not read it, and says what to do.

nbgrader itself fails on such a file with an error that names neither the file nor the fix
("'CourseDirectory' object has no attribute 'fail'"), so the check runs before nbgrader does.
"""

import pytest
from nbgrader.coursedir import CourseDirectory

from lab_utils.course.autograde import timestamp_problem

TIMES = ["2026-01-16 09:30:00.000000 UTC", "2026-01-16 09:30:00 Europe/Berlin", "2026-01-16T09:30:00Z", "",
         "  \n", "the day after tomorrow", "2026-13-45 10:00", "99999999999999999999", "x" * 100]


def nbgrader_reads(folder) -> bool:
    try:
        CourseDirectory().get_existing_timestamp(str(folder))
    except Exception:  # noqa: BLE001 (whatever nbgrader raises, it stops grading the submission)
        return False
    return True


@pytest.mark.parametrize("text", TIMES)
def test_refused_exactly_when_nbgrader_cannot_read_it(tmp_path, text):
    (tmp_path / "timestamp.txt").write_text(text, encoding="utf-8")
    problem = timestamp_problem(tmp_path / "timestamp.txt")
    assert (problem is None) == nbgrader_reads(tmp_path)
    if problem:
        assert problem.startswith(f"timestamp.txt reads '{text.strip()[:40]}")
        assert "nbgrader collect" in problem and "delete the file" in problem


def test_bytes_that_are_not_text_are_named(tmp_path):
    (tmp_path / "timestamp.txt").write_bytes(b"\xff\xfe2026")
    assert not nbgrader_reads(tmp_path)
    assert timestamp_problem(tmp_path / "timestamp.txt").startswith("timestamp.txt is not UTF-8 text")


def test_no_file_is_no_problem(tmp_path):
    assert timestamp_problem(tmp_path / "timestamp.txt") is None
