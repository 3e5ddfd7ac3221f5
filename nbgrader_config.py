"""nbgrader settings for the course (solutions/ is the source, lessons/ the release).

The settings live in lab_utils.course, so `nbgrader ...` and `make release|autograde|...`
always agree.
"""

from pathlib import Path

from lab_utils.course import configure

configure(get_config(), Path(__file__).resolve().parent)  # noqa: F821 (nbgrader provides get_config)
