"""The course's nbgrader settings: the one file an instructor edits.

Every course command (`make release|autograde|feedback|grades`, Formgrader, and the bare
`.venv/bin/nbgrader ...` run in this folder) loads this file. `configure` sets the course's
defaults (solutions/ is the source, lessons/ the release, the sandbox, the LMS export); put your
own settings below it, and they win. See docs/instructors.md.
"""

from pathlib import Path

from lab_utils.course.config import configure

c = get_config()  # noqa: F821 (nbgrader provides get_config)
configure(c, Path(__file__).resolve().parent)

# Late submissions: graded in full unless a penalty is set, e.g. no points at all when late:
# c.LateSubmissionPlugin.penalty_method = "zero"

# The sandbox student code runs in while it is graded (these are the defaults):
# c.Sandbox.memory_mb = 2048     # memory (address space) of the kernel
# c.Sandbox.cpu_seconds = 300    # CPU time of the kernel, the whole notebook together
# c.Sandbox.wall_seconds = 600   # time of the whole notebook, waits (sleep) included
# c.Sandbox.tmp_mb = 256         # size of its private /tmp
# c.Sandbox.max_processes = 64   # processes and threads of the kernel at once
# c.Execute.timeout = 120        # seconds per cell
