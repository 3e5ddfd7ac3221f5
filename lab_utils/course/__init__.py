"""The instructor's side of the course: nbgrader, configured once, in nbgrader_config.py.

One module per job: config (the configuration and the course's folders), release, sandbox,
autograde (parallel), grades, feedback, export (the LMS), integrity (tamper flags from the kernel),
tampering (cells that reach into the kernel, read outside it), similarity (near-copies), publish (the
students' repository). `python -m lab_utils.course` is the one entry
point (see __main__). Students' modules never import this package.
"""

from lab_utils.course.config import lesson_names
from lab_utils.course.release import release

__all__ = ["lesson_names", "release"]
