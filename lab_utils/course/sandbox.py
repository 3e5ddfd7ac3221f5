"""Student code runs in a sandbox while nbgrader grades it.

Only the kernel is sandboxed, not nbgrader: the kernel that runs a submission is started by
Debian's bubblewrap (`bwrap`). It sees the system's folders (/usr, /etc, …) read-only, the Python it
runs on and the course package with its data, the submission's working copy
(autograded/<student>/<lesson>/) but not its notebooks (the graded one holds the hidden tests by
then: reading it is refused) and the grader's list of fonts (font_list), read-only too; nothing
else of the machine: not the course folder (solutions, gradebook, git history), not the homes, not
/etc/shadow. It writes only to a private /tmp, has no network, only a few of the grader's environment
variables (no key or token), and its own process namespace (what the student's code starts ends with
the kernel). `prlimit` caps its memory (address space), CPU time and processes; nbgrader's per-cell
timeout stops a hang.
The process cap is RLIMIT_NPROC in a user namespace of the sandbox's own, where it counts the
kernel's processes alone; root, whom RLIMIT_NPROC does not bind, gets a pids cgroup instead
(cgroup.py), where the machine lets root make one. A cell that ran into the cap leaves no process
but the kernel behind it, and the kernel may start no new one (processes.py without a cgroup).

The kernel talks to nbgrader over unix sockets (ZMQ's `ipc` transport) in a folder shared with
the sandbox, since TCP on 127.0.0.1 does not cross into a sandbox without a network.

Limits, in nbgrader_config.py (defaults below):

    c.Sandbox.memory_mb = 2048     # address space of the kernel
    c.Sandbox.cpu_seconds = 300    # CPU time of the kernel, the whole notebook together
    c.Sandbox.wall_seconds = 600   # time of the whole notebook, waits (sleep) included
    c.Sandbox.tmp_mb = 256         # size of its private /tmp
    c.Sandbox.max_processes = 64   # processes and threads of the kernel at once
    c.Sandbox.enabled = True       # False only where bubblewrap cannot run (`--unsafe`)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, Unicode
from traitlets.config import Config, Configurable

from lab_utils.course import cgroup, processes
from lab_utils.paths import DATA_DIR, PACKAGE_DIR

INSTRUCTOR_FOLDERS = ("solutions", "submitted", "autograded", "feedback")
AFTER_WALL = 1  # seconds a cell may run once the notebook is past c.Sandbox.wall_seconds
# What each error means when the sandbox or the timeout stopped a cell.
STOPPED = {
    # SandboxedExecute's timeout errors name the limit that ran out.
    "c.Execute.timeout": "the cell ran past its time (c.Execute.timeout) and was interrupted",
    "c.Sandbox.wall_seconds": "the notebook ran past its time in all (c.Sandbox.wall_seconds): the cell was interrupted",
    "MemoryError": "the memory cap stopped an allocation",
    "Read-only file system": "a write outside /tmp was refused (the sandbox is read-only elsewhere)",
    # The graded notebook (hidden tests put back) and the system's secrets are devices on a nodev mount.
    "Permission denied": "a read was refused (the graded notebook, which holds the hidden tests, or a secret)",
    "Network is unreachable": "a network connection was refused (no network in the sandbox)",
    "Connection refused": "a network connection was refused (no network in the sandbox)",
    "No space left on device": "a write failed on a full disk (the private /tmp holds c.Sandbox.tmp_mb)",
    "Resource temporarily unavailable": "the process cap refused a new process (c.Sandbox.max_processes)",
    "can't start new thread": "the process cap refused a new thread (c.Sandbox.max_processes)",
}


class Sandbox(Configurable):
    """The limits of the sandbox (set them in nbgrader_config.py as `c.Sandbox.<name>`)."""

    enabled = Bool(True, help="Run student code under bubblewrap; False only with --unsafe.").tag(config=True)
    memory_mb = Integer(2048, help="Address-space cap of the kernel, in MiB.").tag(config=True)
    cpu_seconds = Integer(300, help="CPU-time cap of the kernel over the whole notebook.").tag(config=True)
    wall_seconds = Integer(600, help="Time of the whole notebook, waits included (CPU time does not count a "
                                     "sleep); past it, each cell left may run AFTER_WALL seconds.").tag(config=True)
    tmp_mb = Integer(256, help="Size of the kernel's private /tmp, in MiB.").tag(config=True)
    # A fork bomb's copies each hold tens of megabytes of their own until they are ended: hundreds fill a machine.
    max_processes = Integer(64, help="Processes and threads the kernel may run at once.").tag(config=True)
    kernel_log = Unicode("", help="File for the kernel's own messages (its stderr); empty: this "
                                  "process's stderr. autograde gives each submission one.").tag(config=True)

    def command(self, kernel: list[str], workdir: str, sockets: str) -> list[str]:
        """The kernel's argv wrapped in bwrap and prlimit."""
        # The kernel's python by its folder's real path, which python_and_course() mounts (the folder,
        # not the file: a venv's python is a link to the base one, and must stay in its venv).
        python = os.path.join(os.path.realpath(os.path.dirname(kernel[0])), os.path.basename(kernel[0]))
        # -P: the submission's folder is not put first on the import path, so a handed-in
        # ipykernel_launcher.py cannot replace the kernel before any check runs.
        kernel = [python, "-P", *kernel[1:]]
        # RLIMIT_NPROC counts a user's processes per user namespace, so in one of the sandbox's own it
        # counts the kernel's alone. It does not bind root, who gets a pids cgroup (SandboxKernelManager).
        rootless = process_cap() == "rlimit"
        # The grader's home, empty and read-only: a write there fails as any write outside /tmp does.
        home = os.path.realpath(os.path.expanduser("~"))
        home = [] if home in ("/", "/tmp") or home.startswith("/tmp/") else [home]
        return [
            "bwrap", *(["--unshare-user"] if rootless else []),
            *system_mounts(), "--dev", "/dev", "--proc", "/proc",
            "--size", str(self.tmp_mb * 2**20), "--tmpfs", "/tmp", *[arg for h in home for arg in ("--tmpfs", h)],
            *[arg for path in python_and_course() for arg in ("--ro-bind", path, path)], *font_list(),
            # The grader's own code, which the students' repository leaves out, is not theirs to read; nor
            # are the installed modules no lesson needs that would show an answer the test calling it.
            *[arg for folder in (GRADERS_CODE, *out_of_reach()) for arg in ("--tmpfs", folder, "--remount-ro", folder)],
            # The submission is read, not written: what the student's code writes goes to /tmp. Its
            # notebooks are not even read (a device on a nodev mount): the graded one holds the hidden tests.
            "--ro-bind", workdir, workdir, "--bind", sockets, sockets,
            *[arg for notebook in notebooks(workdir) for arg in ("--ro-bind", "/dev/null", notebook)],
            *[arg for h in home for arg in ("--remount-ro", h)], "--remount-ro", "/",
            # A process of its own namespace: whatever the student's code starts dies with the kernel,
            # so nothing can rewrite the graded notebook after nbgrader has read it.
            "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-pid", "--die-with-parent",
            # Only what a kernel needs of the grader's environment: no key or token reaches student code.
            "--clearenv", *[arg for name, value in kept_environment().items() for arg in ("--setenv", name, value)],
            # ipykernel would watch nbgrader's pid, which its namespace cannot see, and quit at once; its
            # parent there is the namespace's init (pid 1), which ipykernel knows not to watch.
            "--setenv", "JPY_PARENT_PID", "1", "--setenv", "HOME", "/tmp",
            "--setenv", "LAB_WORK_DIR", "/tmp/work", "--setenv", "IPYTHONDIR", "/tmp/ipython",
            "--setenv", "MPLCONFIGDIR", MPLCONFIGDIR, "--chdir", workdir,
            # One thread for numpy's linear algebra, not one per core: on a large server, those alone
            # would fill the process cap. Kernels grade side by side anyway.
            *[arg for name in BLAS_THREADS for arg in ("--setenv", name, "1")],
            "prlimit", f"--as={self.memory_mb * 2**20}", f"--cpu={self.cpu_seconds}",
            *([f"--nproc={self.max_processes}"] if rootless else []), "--", *kernel,
        ]


# The system the kernel sees, read-only; nothing else of the machine (homes, other folders, the
# course's own folder with its solutions, gradebook and git history) is there.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SECRETS = ("/etc/shadow", "/etc/gshadow")  # readable by root, who may be grading
GRADERS_CODE = os.path.realpath(Path(__file__).parent)  # lab_utils/course: the kernel imports none of it
# Installed with the course's tools, imported by no lesson: a paused greenlet's frames (gr_frame) are the stack
# of the test that called an answer, which no audit event or watch marks (greenlet comes with playwright).
OUT_OF_REACH = ("greenlet",)
MPLCONFIGDIR = "/tmp/matplotlib"  # the kernel's matplotlib settings and caches
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
KEPT_VARIABLES = ("PATH", "PYTHONPATH", "LANG", "LANGUAGE", "TZ", "NBGRADER_EXECUTION", "NBGRADER_VALIDATING")


def system_mounts() -> list[str]:
    mounts = []
    for path in SYSTEM:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            mounts += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            mounts += ["--ro-bind", path, path]
    return mounts + [arg for path in SECRETS if os.path.exists(path) for arg in ("--ro-bind", "/dev/null", path)]


def out_of_reach() -> list[str]:
    """The folders of the OUT_OF_REACH packages installed here."""
    return [os.path.realpath(folder) for name in OUT_OF_REACH if (spec := importlib.util.find_spec(name))
            for folder in spec.submodule_search_locations or ()]


def python_and_course() -> list[str]:
    """What the kernel runs on, outside the system folders: the environment, its base Python, the
    course package and its data; parents first, so that a bind inside another is not hidden by it."""
    needed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, PACKAGE_DIR, DATA_DIR)}
    return sorted(p for p in needed if not any(Path(p).is_relative_to(s) for s in SYSTEM))


def notebooks(workdir: str) -> list[str]:
    """The notebooks in the submission's working copy: nbgrader has written the graded one there with
    the hidden tests put back, so student code that read it could answer from them."""
    return sorted(str(path) for path in Path(workdir).glob("*.ipynb"))


def font_list() -> list[str]:
    """matplotlib's list of the machine's fonts, the grader's, bound read-only where the kernel's
    matplotlib looks for it: else every kernel scans the fonts again (0.3 CPU-s for 40 fonts, seconds
    for thousands). Not when a font it lists lies outside the sandbox (in the home): the kernel's
    matplotlib would miss that file, scan again and fail to save its list."""
    import matplotlib
    from matplotlib import font_manager

    listed = Path(matplotlib.get_cachedir(), f"fontlist-v{font_manager.FontManager.__version__}.json")
    fonts = font_manager.fontManager.ttflist + font_manager.fontManager.afmlist
    seen = (*SYSTEM, *python_and_course())
    inside = [any(Path(os.path.realpath(font.fname)).is_relative_to(folder) for folder in seen) for font in fonts]
    if not (listed.exists() and all(inside)):
        return []
    return ["--ro-bind", str(listed), f"{MPLCONFIGDIR}/{listed.name}"]


def kept_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name in KEPT_VARIABLES or name.startswith("LC_")}


def available() -> bool:
    return shutil.which("bwrap") is not None and shutil.which("prlimit") is not None


def process_cap() -> str:
    """How the kernel's processes are capped on this machine: "rlimit", "cgroup", or "" (they are not)."""
    if os.geteuid() != 0:
        return "rlimit"
    return "cgroup" if cgroup.parent() is not None else ""


class SandboxKernelManager(AsyncKernelManager):
    """A kernel started inside the sandbox, reached over unix sockets."""

    _sockets: str | None = None  # the folder of its unix sockets, once started in the sandbox
    _group: Path | None = None  # its pids cgroup, where root's kernels get one (cgroup.py)
    _log = None  # the open file of Sandbox.kernel_log

    @property
    def kernel_spec(self):
        spec = super().kernel_spec
        if spec is not None:
            # SIGINT to the process group would stop bwrap itself; ask the kernel instead.
            spec.interrupt_mode = "message"
        return spec

    async def _async_pre_start_kernel(self, **kw):
        self._sandbox = Sandbox(parent=self)
        if self._sandbox.kernel_log:
            # A fork bomb's copies of the kernel each write ipykernel's warnings: hundreds of them.
            log = Path(self._sandbox.kernel_log)
            log.parent.mkdir(parents=True, exist_ok=True)
            self._log = kw["stderr"] = log.open("ab")
        if self._sandbox.enabled:
            if not available():
                raise RuntimeError("bubblewrap is not installed (apt-get install bubblewrap): student code "
                                   "would run with your rights; `--unsafe` grades without a sandbox")
            # A short path of its own: a unix socket's path is limited to about 100 bytes.
            # Named as its cgroup is, after this grader, so that what a killed grader left is told and removed.
            for stale in cgroup.left_by_killed_graders(Path(tempfile.gettempdir())):
                shutil.rmtree(stale, ignore_errors=True)
            self._sockets = tempfile.mkdtemp(prefix=f"{cgroup.PREFIX}{os.getpid()}-")
            self.connection_file = os.path.join(self._sockets, "kernel.json")
            self.transport = "ipc"
            self.ip = os.path.join(self._sockets, "ipc")
            self._group = cgroup.create(self._sandbox.max_processes) if process_cap() == "cgroup" else None
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if not self._sandbox.enabled:
            return cmd
        workdir = os.path.realpath(self._launch_args.get("cwd") or os.getcwd())
        cmd = self._sandbox.command(cmd, workdir, self._sockets)
        return cgroup.enter(self._group, cmd) if self._group else cmd

    def end_fork_bomb(self) -> None:
        """After the process cap refused the kernel a process, end every process but the kernel, and
        let it start no new one. A fork bomb's copies would otherwise keep every core busy, and the
        kernel could not even answer an interrupt."""
        if self._group:
            if cgroup.hit_the_cap(self._group):
                cgroup.hold(self._group, keep=3)  # sh's bwrap, bwrap's init, the kernel: the three started first
        elif self._sandbox.enabled and process_cap() == "rlimit" and self.has_kernel:
            processes.end_fork_bomb(self.provisioner.process.pid, self._sandbox.max_processes)

    async def _async_interrupt_kernel(self) -> None:
        self.end_fork_bomb()  # a cell past the timeout may be a fork bomb's
        await super()._async_interrupt_kernel()

    interrupt_kernel = _async_interrupt_kernel

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if self._sockets and not restart:
            shutil.rmtree(self._sockets, ignore_errors=True)
        if self._group:  # its processes have ended with the kernel, restarted or not
            cgroup.remove(self._group)
            self._group = None
        if self._log and not restart:
            self._log.close()

    # nbclient calls this one, not the shutdown that calls the method above, when the kernel died.
    cleanup_resources = _async_cleanup_resources


class SandboxedExecute(Execute):
    """nbgrader's Execute step with the kernel in the sandbox, and the whole notebook's time capped: a
    notebook that waits in every cell (a sleep costs no CPU time) would hold a grading slot for the
    per-cell timeout times its cells."""

    def __init__(self, **kw):
        kw.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(**kw)
        self.timeout_func = self._time_left

    def preprocess(self, nb, resources=None, km=None):
        self._wall_seconds = Sandbox(parent=self).wall_seconds
        self._deadline = time.monotonic() + self._wall_seconds
        return super().preprocess(nb, resources, km)

    def _time_left(self, cell) -> float:
        """The per-cell timeout, or what is left of the notebook's time; AFTER_WALL once that is spent."""
        return max(min(self.timeout, self._deadline - time.monotonic()), AFTER_WALL)

    async def _async_handle_timeout(self, timeout, cell=None):
        """nbgrader's timeout error ("No reply from kernel before timeout"), saying which limit ran out."""
        reply = await super()._async_handle_timeout(timeout, cell)
        if reply:
            limit = (f"the notebook ran past c.Sandbox.wall_seconds ({self._wall_seconds} s in all)"
                     if timeout < self.timeout else f"the cell ran past c.Execute.timeout ({self.timeout} s)")
            reply["content"] = {**reply["content"], "evalue": limit,
                                "traceback": [f"\x1b[0;31m{reply['content']['ename']}\x1b[0m: {limit}"]}
        return reply

    def preprocess_cell(self, cell, resources, index):
        cell, resources = super().preprocess_cell(cell, resources, index)
        if isinstance(self.km, SandboxKernelManager):
            self.km.end_fork_bomb()  # the next cell runs without what a bomb in this one left
        return cell, resources


def install(c: Config) -> None:
    """Autograde executes with SandboxedExecute in place of nbgrader's Execute."""
    steps = c.Autograde.get("autograde_preprocessors") or Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [SandboxedExecute if step is Execute else step for step in steps]


def incidents(nb, course_root: Path, own_folder: Path) -> list[str]:
    """What the sandbox or the timeout stopped, by graded cell (or cell number), from the outputs.
    `own_folder` (the submission's, where the kernel runs) is in sight, though read-only."""
    hidden = {os.path.join(os.path.realpath(course_root), name): name for name in INSTRUCTOR_FOLDERS}
    own = os.path.realpath(own_folder) + os.sep
    found = []
    for number, cell in enumerate(nb.cells, 1):
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell {number}"
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            said = f"{output.get('ename')}: {output.get('evalue')}"
            found += [f"{name}: {why}" for key, why in STOPPED.items() if key in said]
            found += [f"{name}: {folder}/ was out of reach (the sandbox hides it)"
                      for path, folder in hidden.items() if path + os.sep in said.replace(own, "")]
    return list(dict.fromkeys(found))
