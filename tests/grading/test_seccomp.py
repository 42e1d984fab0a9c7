"""gpucost_lab.grading.seccomp: the filter's program is well formed (every jump forward and inside it), and under
bubblewrap it refuses new namespaces and mounts while the kernel's ordinary work (threads, forks, a subprocess) goes
on; an architecture without a table is named."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile

import pytest

from gpucost_lab.grading import kernel_command, seccomp

from .helpers import needs_sandbox

_RET, _JMP_CLASS = 0x06, 0x05


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHITECTURES))
def test_every_jump_lands_forward_inside_the_program_and_it_ends_in_returns(machine):
    program = seccomp.program(machine)
    assert len(program) % 8 == 0
    steps = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    for pc, (code, jt, jf, _) in enumerate(steps):
        if code & 0x07 == _JMP_CLASS:
            assert pc + 1 + max(jt, jf) < len(steps), (pc, jt, jf)
    assert all(code == _RET for code, _, _, _ in steps[-2:])


def test_the_calls_the_issue_names_are_refused():
    for machine in seccomp.ARCHITECTURES:
        names = set(seccomp.refused_calls(machine))
        assert {"unshare", "setns", "mount", "umount2", "pivot_root", "ptrace", "keyctl", "bpf"} <= names


def test_an_architecture_without_a_table_is_named(monkeypatch):
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "riscv64")
    assert "'riscv64'" in seccomp.problem() and "x86_64, aarch64" in seccomp.problem()


# The base interpreter (the standard library is all WORK needs), its prefix bound again over the tmpfs on /tmp:
# a checkout under /tmp keeps its environment, and the venv's python with it, below that mount.
PYTHON = os.path.realpath(sys.executable)
WORK = (
    "import os, subprocess, threading\n"
    "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
    "pid = os.fork()\n"
    "os._exit(0) if pid == 0 else os.waitpid(pid, 0)\n"
    "print(subprocess.run(['true']).returncode)\n"
)


@needs_sandbox
@pytest.mark.parametrize(
    "command, refused",
    [
        (["unshare", "-U", "true"], True),  # a user namespace
        (["unshare", "-n", "true"], True),  # a network namespace
        (["sh", "-c", "mount -t tmpfs none /tmp"], True),
        ([PYTHON, "-c", WORK], False),  # a thread, a fork, a subprocess: the kernel's own work
    ],
)
def test_under_bubblewrap_the_filter_refuses_namespaces_and_mounts_only(command, refused):
    with tempfile.TemporaryFile() as program:
        program.write(seccomp.program())
        program.seek(0)
        sandbox = ["bwrap", "--seccomp", str(program.fileno()), "--ro-bind", "/", "/", "--tmpfs", "/tmp"]
        sandbox += ["--ro-bind", sys.base_prefix, sys.base_prefix, "--ro-bind", PYTHON, PYTHON]
        sandbox += ["--dev", "/dev", "--proc", "/proc", *kernel_command.namespaces(), "--"]
        done = subprocess.run(
            sandbox + command, capture_output=True, text=True, timeout=60, pass_fds=(program.fileno(),)
        )
    assert (done.returncode != 0) == refused, done
    if not refused:
        assert done.stdout == "0\n"
