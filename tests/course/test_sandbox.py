"""Student code runs in the sandbox while it is graded: each attack is stopped and reported, and
every other submission (and the rest of the attacker's notebook) is still graded.

One student adds a cell per attack to a correct notebook; a second student hands in the solution.

The course lives outside /tmp, as a real one does, so that the sandbox's private /tmp does not
hide it by accident and each refusal is the sandbox's own.
"""

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import suppress
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pandas as pd
import pytest
from traitlets.config import Config

from coursetools import course_cli, new_course, solution, with_cell
from lab_utils.course import cgroup, sandbox
from lab_utils.paths import ROOT
from nbtools import LESSONS, submit
from ports import unused_port

pytestmark = pytest.mark.slow  # minutes, not seconds: started first (conftest.py)

LESSON = LESSONS[0]
TOKEN = uuid.uuid4().hex[:8]
HOME_FILE = Path.home() / f"lab-sandbox-{TOKEN}.txt"
TMP_FILE = Path("/tmp") / f"lab-sandbox-{TOKEN}.txt"
# The classic fork bomb, a third student's: every copy forks on, and the copies at the cap keep the
# cores so busy that the kernel could not even answer an interrupt.
BOMB = "import os\nwhile True:\n    os.fork()"
# An outside cheater's helper, left running through a shell (`cmd &`): the shell ends at once, and the
# helper, no child of the kernel's, lives on in the sandbox as its init's.
DAEMON = f"import os, sys\nos.system(f\"{{sys.executable}} -c 'import time; time.sleep(300)' {TOKEN} &\")"
MAX_PROCESSES = 100
KEY = f"sk-ant-canary-{TOKEN}"
UNCAPPED = "processes cannot be capped here (root, no pids cgroup): autograde warns of it"
needs_cap = pytest.mark.skipif(not sandbox.process_cap(), reason=UNCAPPED)


def attacks(root: Path, port: int) -> dict[str, tuple[str, str]]:
    """attack -> (the code of a cell the attacker adds, what the autograde note must say)."""
    neighbour = root / "submitted" / "honest" / LESSON / f"{LESSON}.ipynb"
    return {
        # First, before an attack writes anything: what a student would look for (the answers, the
        # gradebook, git history, the grader's own code, a key in the environment, the hidden tests in
        # the graded notebook).
        "look": ("import glob, os\n"
                 f"found = [p for base in ({str(root)!r}, {str(ROOT)!r}, os.path.expanduser('~'), '/work', '/home')\n"
                 "         for p in glob.glob(base + '/**', recursive=True)\n"
                 "         if 'solutions' in p or p.endswith('gradebook.db') or '/.git/' in p or 'fixtures' in p\n"
                 "         or '/lab_utils/course/' in p]\n"
                 "key = os.environ.get('ANTHROPIC_API_KEY')\n"
                 "shadow = os.path.getsize('/etc/shadow') if os.path.exists('/etc/shadow') else 0\n"
                 "notebooks, read = glob.glob('*.ipynb'), []\n"
                 "for path in notebooks:\n"
                 "    try:\n        read.append(open(path).read())\n"
                 "    except PermissionError:\n        pass\n"
                 "hidden = sum(text.count('BEGIN ' + 'HIDDEN TESTS') for text in read)\n"
                 "print(f'found {len(found)} {found[:3]}; key {key}; shadow {shadow}; '\n"
                 "      f'notebooks {len(notebooks)}, read {len(read)}, {hidden} hidden tests')",
                 ""),
        # A process left running, in a session of its own (out of the kernel's process group, which
        # is stopped with the kernel) and holding none of its pipes, to change the graded notebook
        # after nbgrader has read it.
        "leftover": (f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', "
                     f"{TOKEN!r}], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
                     "stderr=subprocess.DEVNULL)", ""),
        # Processes started until one is refused, each waiting a minute; at most 3000, so that a missing
        # cap fails the test instead of the machine. It prints how many it got, then ends them.
        "forks": ("import os, signal, time\nchildren = []\ntry:\n    while len(children) < 3000:\n"
                  "        if (pid := os.fork()) == 0:\n            time.sleep(60)\n            os._exit(0)\n"
                  "        children.append(pid)\nfinally:\n    print(f'started {len(children)}')\n"
                  "    for pid in children:\n        os.kill(pid, signal.SIGKILL)\n        os.waitpid(pid, 0)",
                  "the process cap refused a new process"),
        # The graded notebook, hidden tests put back, is in the folder the kernel runs in.
        "notebook": ("import glob\nopen(glob.glob('*.ipynb')[0]).read()", "a read was refused (the graded notebook"),
        "loop": ("while True:\n    pass", "the cell ran past its time (c.Execute.timeout)"),
        "memory": ("hog = bytearray(4 * 2**30)", "memory cap stopped an allocation"),
        "network": (f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)",
                    "network connection was refused"),
        # Refused where the course folder is (read-only), or written to the sandbox's own /tmp when the
        # course is under /tmp: either way the gradebook is untouched (test_nothing_outside_...).
        "gradebook": (f"open({str(root / 'gradebook.db')!r}, 'ab').write(b'0 points for all')", ""),
        "neighbour": (f"open({str(neighbour)!r}, 'w').write('{{}}')", "submitted/ was out of reach"),
        "home": (f"open({str(HOME_FILE)!r}, 'w').write('was here')",
                 "write outside /tmp was refused"),
        "tmp": (f"open({str(TMP_FILE)!r}, 'w').write('was here')", ""),
        # Not an attack: a student who moves the work folder next to the notebook, as a clone allows
        # (put back after, so that the rest of the notebook writes where the grader says).
        "workdir": ("%env LAB_WORK_DIR=work\nfrom lab_utils.paths import work_dir\n"
                    "try:\n    work_dir('mine')\nfinally:\n    %env LAB_WORK_DIR=/tmp/work",
                    "write outside /tmp was refused"),
        # Not an attack: how many threads does numpy's linear algebra start (one per core would fill the cap)?
        "blas": ("import os, numpy\nprint('linear algebra threads:', os.environ.get('OPENBLAS_NUM_THREADS'))", ""),
        # Not an attack: when did the list of fonts the kernel's matplotlib reads come to be?
        "fonts": ("import glob, os\n"
                  "print('font list:', [os.stat(p).st_mtime_ns for p in glob.glob('/tmp/matplotlib/fontlist-*.json')])",
                  ""),
        # An outside cheater's way to the test that called an answer: the frames of the paused main greenlet.
        "greenlet": ("try:\n    from greenlet import getcurrent\n    print('greenlet: imported')\n"
                     "except ImportError:\n    print('greenlet: out of reach')", ""),
    }


@pytest.fixture(scope="module")
def graded():
    base = ROOT / "work" / "tests"
    base.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="sandbox-", dir=base))
    server = socket.create_server(("127.0.0.1", unused_port()))
    server.settimeout(0.5)
    reached = []

    def listen():
        while not stop.is_set():
            try:
                reached.append(server.accept())
            except TimeoutError:
                continue

    stop = threading.Event()
    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    try:
        new_course(root, [LESSON], f"c.Execute.timeout = 5\nc.Sandbox.max_processes = {MAX_PROCESSES}")
        cases = attacks(root, server.getsockname()[1])
        submit(root, "honest", LESSON, solution(root, LESSON))
        neighbour_before = (root / "submitted" / "honest" / LESSON / f"{LESSON}.ipynb").read_bytes()
        attacker = solution(root, LESSON)
        for at, (code, _) in enumerate(cases.values(), 1):
            with_cell(attacker, code, at)
        submit(root, "attacker", LESSON, attacker)
        submit(root, "bomber", LESSON, with_cell(solution(root, LESSON), BOMB))
        submit(root, "quitter", LESSON, with_cell(solution(root, LESSON), "import os\nos._exit(0)"))
        submit(root, "daemon", LESSON, with_cell(solution(root, LESSON), DAEMON))
        # The sockets folder of a grader killed earlier (by SIGTERM, so it never cleaned up).
        killed = subprocess.Popen(["true"])
        killed.wait()
        stale = Path(tempfile.mkdtemp(prefix=f"{cgroup.PREFIX}{killed.pid}-"))
        with pytest.MonkeyPatch.context() as env:
            env.setenv("ANTHROPIC_API_KEY", KEY)  # the grader's own, which no kernel may see
            run = course_cli(root, "autograde", "--jobs", "2")
        course_cli(root, "grades")
        yield SimpleNamespace(root=root, run=run, cases=cases, reached=reached, neighbour_before=neighbour_before,
                              stale=stale, table=pd.read_csv(root / "grades.csv").set_index("student"))
    finally:
        stop.set()
        listener.join()
        server.close()
        shutil.rmtree(root, ignore_errors=True)
        HOME_FILE.unlink(missing_ok=True)
        TMP_FILE.unlink(missing_ok=True)


def test_every_submission_is_still_graded_in_full(graded):
    assert graded.run.returncode == 0
    assert "autograde: 5 of 5 submissions done" in graded.run.stdout
    table = graded.table.drop(["quitter", "daemon"])  # its kernel exits at once, by its own hand; see below
    assert (table.auto_score == table.auto_max).all(), "an attack cell must not cost the rest of the notebook"
    assert not table.status.str.startswith("not graded").any()


@pytest.mark.parametrize("attack", ["notebook", "loop", "memory", "network", "neighbour", "home", "forks", "workdir"])
def test_each_attack_is_stopped_and_reported(graded, attack):
    if attack == "forks" and not sandbox.process_cap():
        pytest.skip(UNCAPPED)
    cell = list(graded.cases).index(attack) + 2
    said = graded.cases[attack][1]
    notes = [line for line in graded.run.stdout.splitlines()
             if line.startswith(f"  note    attacker/{LESSON}: stopped: cell {cell}: ")]
    assert len(notes) == 1 and said in notes[0], f"cell {cell} ({attack}) is reported"
    assert said in graded.table.loc["attacker", "notes"], "grades.csv keeps the note"
    assert "stopped" not in str(graded.table.loc["honest", "notes"])


def left_running() -> list[str]:
    """The command lines of processes that carry this run's token (the leftover attack's)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with suppress(OSError):
            if TOKEN in (line := cmdline.read_bytes().replace(b"\0", b" ").decode()):
                found.append(line)
    return found


def test_nothing_the_student_started_outlives_the_kernel(graded):
    cell = list(graded.cases).index("leftover") + 2
    assert f"attacker/{LESSON}: stopped: cell {cell}: " not in graded.run.stdout, "the leftover process started"
    assert not left_running(), "a process the submission started is still running after grading"
    if sandbox.process_cap() == "cgroup":
        left = [g.name for g in cgroup.parent().glob(f"{cgroup.PREFIX}*") if not cgroup.creator_alive(g)]
        assert not left, f"kernel cgroups left behind: {left}"
    # The kernels' socket folders too, the quitter's (whose kernel died) among them.
    left = [d.name for d in Path(tempfile.gettempdir()).glob(f"{cgroup.PREFIX}*") if not cgroup.creator_alive(d)]
    assert not left, f"kernel socket folders left behind: {left}"


def test_what_a_killed_grader_left_is_removed(graded):
    assert not graded.stale.exists()


def test_a_process_left_running_through_a_shell_costs_the_tests_beside_it(graded):
    daemon = graded.table.loc["daemon"]
    assert daemon.auto_score == 0 < daemon.auto_max, "the helper ran beside every test"
    assert "the answer switched off the watch" in daemon.status, daemon.status
    assert "can get around the grading: os.system;" in daemon.status, daemon.status


def test_a_kernel_cgroup_is_swept_only_once_its_grader_is_gone():
    """Grading in parallel, one grader's new, still empty cgroup must survive another's sweep."""
    if sandbox.process_cap() != "cgroup":
        pytest.skip("no kernel cgroups here: processes are capped by RLIMIT_NPROC, or not at all")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = cgroup.parent() / f"{cgroup.PREFIX}{gone.stdout.strip()}-0"
    orphan.mkdir()
    mine = cgroup.create(8)
    try:
        newer = cgroup.create(8)
        cgroup.remove(newer)
        assert mine.exists() and not orphan.exists()
    finally:
        cgroup.remove(mine)
        cgroup.remove(orphan)


@needs_cap
def test_a_fork_bomb_ends_in_its_cell_and_the_rest_is_graded(graded):
    notes = [line for line in graded.run.stdout.splitlines() if line.startswith(f"  note    bomber/{LESSON}: ")]
    # The bomb's cell ends at the cap or at the timeout, or both, as its kernel meets them.
    assert notes and all("stopped: cell 2: " in note for note in notes), notes
    assert any(re.search(r"the process cap refused|c\.Execute\.timeout", note) for note in notes), notes
    assert graded.table.loc["bomber", "auto_score"] == graded.table.loc["bomber", "auto_max"]


def test_a_notebook_that_waits_in_every_cell_ends_at_the_time_cap(tmp_path):
    """Outside cheaters slept just under the per-cell timeout in cell after cell (a sleep costs no CPU time):
    past c.Sandbox.wall_seconds, each cell left may run a second. Each stopped cell names the limit it met."""
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": kernel}, cells=[
        nbformat.v4.new_code_cell(source) for source in ("import time\ntime.sleep(5)", "time.sleep(30)",
                                                         "time.sleep(30)", "after = 1")])
    settings = Config({"Execute": {"timeout": 4}, "Sandbox": {"wall_seconds": 10}})
    started = time.monotonic()
    nb, _ = sandbox.SandboxedExecute(config=settings).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    took = time.monotonic() - started
    said = [" ".join(o.get("evalue") for o in cell.outputs if o.get("ename") == "CellTimeoutError")
            for cell in nb.cells]
    assert [bool(s) for s in said] == [True, True, True, False] and took < 30, (said, took)
    assert said[0] == "the cell ran past c.Execute.timeout (4 s)"
    assert said[2] == "the notebook ran past c.Sandbox.wall_seconds (10 s in all)"
    notes = sandbox.incidents(nb, tmp_path, tmp_path)
    assert "cell 1: the cell ran past its time (c.Execute.timeout) and was interrupted" in notes
    assert "cell 3: the notebook ran past its time in all (c.Sandbox.wall_seconds): the cell was interrupted" in notes


def test_a_kernel_that_cannot_start_says_why(tmp_path):
    """What a kernel writes to stderr goes to its submission's log (a fork bomb's copies write
    hundreds of warnings), and its last line into the problem when grading failed."""
    root = new_course(tmp_path / "course", [LESSON], "c.Sandbox.memory_mb = 8")  # too little to load Python
    submit(root, "ada", LESSON, solution(root, LESSON))
    run = course_cli(root, "autograde")
    assert "nbgrader failed (RuntimeError: Kernel died before replying to kernel_info)" in run.stdout
    assert re.search(r"its kernel's last message: '.*failed to map segment.*' \(all in autograde_logs/ada/", run.stdout)


def test_a_notebook_that_moves_its_work_folder_is_told_why_it_cannot_write_there(graded):
    nb = nbformat.read(graded.root / "autograded" / "attacker" / LESSON / f"{LESSON}.ipynb", as_version=4)
    cell = nb.cells[list(graded.cases).index("workdir") + 1]
    said = [o["evalue"] for o in cell.outputs if o.output_type == "error"]
    assert said and "cannot create the work folder" in said[0], said
    assert "LAB_WORK_DIR is 'work', set by this notebook" in said[0] and "leave LAB_WORK_DIR to the grader" in said[0]


@needs_cap
def printed_by_the_attacker(graded) -> str:
    nb = nbformat.read(graded.root / "autograded" / "attacker" / LESSON / f"{LESSON}.ipynb", as_version=4)
    return "".join(o.get("text", "") for cell in nb.cells for o in cell.get("outputs", []))


def test_the_process_cap_is_the_configured_one(graded):
    printed = printed_by_the_attacker(graded)
    started = int(re.search(r"^started (\d+)$", printed, re.M)[1])
    # The kernel's own threads count too, so the flood gets a little less than the cap.
    assert MAX_PROCESSES // 2 < started < MAX_PROCESSES


def test_the_answers_and_the_graders_secrets_are_out_of_sight(graded):
    printed = printed_by_the_attacker(graded)
    assert "found 0 []; key None; shadow 0; notebooks 1, read 0, 0 hidden tests" in printed, printed[-500:]
    assert KEY not in printed


@pytest.mark.skipif(importlib.util.find_spec("greenlet") is None, reason="greenlet is not installed here")
def test_greenlet_installed_for_the_course_is_out_of_the_kernels_reach(graded):
    assert "greenlet: out of reach" in printed_by_the_attacker(graded)


def test_numpy_starts_one_thread_whatever_the_cores(graded):
    assert "linear algebra threads: 1" in printed_by_the_attacker(graded)


def test_the_kernel_reads_the_graders_list_of_fonts(graded):
    """The grader's own file, not one the kernel made: matplotlib scans no font in the sandbox."""
    printed = printed_by_the_attacker(graded)
    listed = sandbox.font_list()[1]
    assert f"font list: [{os.stat(listed).st_mtime_ns}]" in printed


def test_a_font_out_of_the_sandboxs_sight_keeps_the_list_of_fonts_out(monkeypatch):
    from matplotlib import font_manager

    def fonts_in(folder):
        font = font_manager.FontEntry(fname=str(Path(folder) / "Mine.ttf"), name="Mine")
        monkeypatch.setattr(font_manager.fontManager, "ttflist", [font])
        return sandbox.font_list()

    assert fonts_in("/usr/share/fonts/truetype")[0] == "--ro-bind"
    assert fonts_in(Path.home() / ".fonts") == [], "the kernel would look for Mine.ttf and scan again"


def test_nothing_outside_the_working_copy_changed(graded):
    assert not graded.reached, "the server on 127.0.0.1 was reached"
    assert not HOME_FILE.exists() and not TMP_FILE.exists()
    assert not (graded.root / "gradebook.db").read_bytes().endswith(b"0 points for all")
    honest = graded.root / "submitted" / "honest" / LESSON / f"{LESSON}.ipynb"
    assert honest.read_bytes() == graded.neighbour_before


@pytest.mark.parametrize("uid", [0, 1000])
def test_the_kernel_command_caps_processes_as_the_user_can(monkeypatch, uid):
    """As a user, prlimit's --nproc in a user namespace of the sandbox's own (there it counts the
    kernel's processes alone; the attack above checks root's cgroup)."""
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    command = sandbox.Sandbox(max_processes=64).command([sys.executable, "-m", "ipykernel_launcher"],
                                                        "/work", "/sockets")
    limits = command[command.index("prlimit"):command.index("--", command.index("prlimit"))]
    assert ("--nproc=64" in limits, "--unshare-user" in command) == (bool(uid), bool(uid))


def test_without_bubblewrap_autograde_refuses_unless_unsafe(tmp_path, monkeypatch):
    (tmp_path / "solutions").mkdir()  # a course with no lesson yet: the check comes first
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    # A PATH with neither bwrap nor prlimit (the CLI runs this Python by its full path).
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    refused = course_cli(tmp_path, "autograde")
    assert refused.returncode == 2 and "bubblewrap is not installed" in refused.stderr
    unsafe = course_cli(tmp_path, "autograde", "--unsafe")
    assert unsafe.returncode == 0 and "autograde: 0 of 0 submissions done" in unsafe.stdout
