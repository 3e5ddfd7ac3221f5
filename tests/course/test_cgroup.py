"""Where the sandbox makes a kernel's pids cgroup, on the hierarchies machines have: each case a
/proc (this process's cgroups and mounts) and a cgroup tree made for it. test_sandbox checks the
cap itself, on this machine's hierarchy."""

from pathlib import Path

import pytest

from lab_utils.course import cgroup


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """machine(memberships, mounts): a /proc/self with these cgroup lines and cgroup mounts
    (fstype, mount point, root of the hierarchy mounted there, controllers)."""
    def make(memberships: list[str], mounts: list[tuple[str, Path, str, str]]) -> None:
        own = tmp_path / "proc" / "self"
        own.mkdir(parents=True)
        (own / "cgroup").write_text("".join(f"{line}\n" for line in memberships))
        (own / "mountinfo").write_text("".join(
            f"{n} 23 0:{n} {root} {point} rw,relatime shared:{n} - {fstype} {fstype} rw,{options}\n"
            for n, (fstype, point, root, options) in enumerate(mounts, 30)))
        monkeypatch.setattr(cgroup, "PROC", tmp_path / "proc")
    return make


def tree(base: Path, subtrees: dict[str, str]) -> None:
    """Cgroup folders under base, each with its cgroup.subtree_control."""
    for path, controllers in subtrees.items():
        (base / path).mkdir(parents=True, exist_ok=True)
        (base / path / "cgroup.subtree_control").write_text(controllers + "\n")


def test_v1_the_pids_hierarchy_at_this_process_cgroup(tmp_path, machine):
    pids = tmp_path / "fs" / "pids"
    (pids / "docker" / "abc").mkdir(parents=True)
    machine(["9:memory:/docker/abc", "8:pids:/docker/abc", "0::/"],
            [("cgroup", tmp_path / "fs" / "memory", "/", "memory"), ("cgroup", pids, "/", "pids")])
    assert cgroup.parent() == pids / "docker" / "abc"


def test_v1_a_container_sees_its_own_cgroup_as_the_mount(tmp_path, machine):
    pids = tmp_path / "fs" / "pids"
    pids.mkdir(parents=True)
    machine(["8:pids:/docker/abc"], [("cgroup", pids, "/docker/abc", "pids")])
    assert cgroup.parent() == pids


def test_v2_the_nearest_cgroup_whose_subtree_has_pids(tmp_path, machine):
    fs = tmp_path / "fs"
    tree(fs, {".": "cpu memory pids", "user.slice": "memory pids", "user.slice/user-0.slice": "memory pids",
              "user.slice/user-0.slice/session-1.scope": ""})
    machine(["0::/user.slice/user-0.slice/session-1.scope"], [("cgroup2", fs, "/", "nsdelegate")])
    assert cgroup.parent() == fs / "user.slice" / "user-0.slice"


@pytest.mark.parametrize("case", ["v2 without pids", "hybrid without a v1 pids hierarchy", "no cgroups"])
def test_nowhere_to_cap_is_none(tmp_path, machine, case):
    fs = tmp_path / "fs"
    tree(fs, {".": "cpu memory", "system.slice": "memory", "system.slice/ci.service": ""})
    machine(*{
        "v2 without pids": (["0::/system.slice/ci.service"], [("cgroup2", fs, "/", "nsdelegate")]),
        "hybrid without a v1 pids hierarchy": (["4:memory:/", "0::/"],
                                               [("cgroup", tmp_path / "memory", "/", "memory"),
                                                ("cgroup2", fs, "/", "nsdelegate")]),
        "no cgroups": (["0::/"], []),
    }[case])
    assert cgroup.parent() is None
