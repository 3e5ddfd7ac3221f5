"""nbgrader settings for the course: solutions/ is the source, lessons/ the release."""

from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.course_id = "agent-memory-lab"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "lessons"
# Graded notebooks run offline: lab_utils replays stored model answers while
# NBGRADER_EXECUTION is set, so a grader never spends money or needs a key.
c.ExecutePreprocessor.timeout = 120
