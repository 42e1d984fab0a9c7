"""Tests of gpucost_lab.grading.confine: the control group of a graded kernel, against the caps given and the kernel's
own cgroup files. Where the grader is root the group is made here, read back and removed, the process left in it
killed; elsewhere systemd's scope is asked for with the same caps, and why none can be made is said in one line.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from gpucost_lab.grading import confine
from gpucost_lab.grading.sandbox import cgroup_problem

MIB_64 = 64 * 2**20  # 67,108,864 bytes


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(confine.os, "geteuid", lambda: 1000)


def test_where_the_grader_is_not_root_a_systemd_scope_carries_the_caps(not_root):
    with confine.kernel_group(MIB_64, 16) as group:
        assert group.procs == ()  # nothing to join: the scope's command starts inside the group
        prefix = group.prefix
    assert prefix[:3] == ("systemd-run", "--user", "--scope") and prefix[-1] == "--"
    properties = {prefix[i + 1] for i, arg in enumerate(prefix) if arg == "-p"}
    assert properties == {"MemoryMax=67108864", "MemorySwapMax=0", "TasksMax=16"}  # no swap beyond the memory cap


def test_why_no_group_can_be_made_is_one_line(not_root, monkeypatch):
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    missing = confine.problem()
    assert "systemd-run is missing" in missing and "\n" not in missing
    monkeypatch.setattr(confine.shutil, "which", lambda name: f"/usr/bin/{name}")
    said = "Failed to connect to bus: No medium found"
    monkeypatch.setattr(
        confine.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 1, "", f"warning\n{said}\n")
    )
    refused = confine.problem()
    assert refused.endswith(f"({said})") and "\n" not in refused  # the scope's own last line
    monkeypatch.setattr(confine.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 0, "", ""))
    assert confine.problem() is None


def _limits(folders: list[Path]) -> dict[str, str]:
    """The group's caps as the kernel reads them back: cgroup v2's files or v1's, whichever the group has."""
    names = ("memory.max", "memory.limit_in_bytes", "pids.max")
    return {name: (f / name).read_text().strip() for f in folders for name in names if (f / name).exists()}


@pytest.mark.skipif(os.geteuid() != 0, reason="the group is made directly where the grader is root")
@pytest.mark.skipif(cgroup_problem() is not None, reason=f"no control group here: {cgroup_problem()}")
def test_as_root_the_group_caps_memory_and_processes_and_kills_what_is_left():
    with confine.kernel_group(MIB_64, 16) as group:
        assert group.prefix == () and group.procs
        folders = [Path(procs).parent for procs in group.procs]
        assert all(folder.is_dir() for folder in folders)
        limits = _limits(folders)
        assert limits.get("memory.max", limits.get("memory.limit_in_bytes")) == "67108864"
        assert limits["pids.max"] == "16"
        left = subprocess.Popen(["sleep", "60"])  # a process the kernel leaves behind
        for procs in group.procs:
            Path(procs).write_text(str(left.pid))
            assert str(left.pid) in Path(procs).read_text().split()
    assert left.wait(timeout=15) == -signal.SIGKILL
    assert not any(folder.exists() for folder in folders)
