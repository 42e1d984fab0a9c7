"""The sandbox a learner's kernel runs in when a lab is graded.

The kernel runs under bubblewrap (Debian's ``bubblewrap``, the ``bwrap`` command) as user 65534 ("nobody")
in fresh namespaces: no network, its own process tree, and a file system made of read-only system folders, this
Python and the ``gpucost_lab`` package, plus one throw-away folder of its own. The course folder, ``solutions/``,
the gradebook, the answer keys and other submissions are simply not there. ``prlimit`` caps its address space,
CPU time, file sizes and process count; the grader stops it at the notebook's total time limit.

Without ``bwrap`` (or where the system forbids new namespaces) grading refuses to run a submission, with a
message naming the package to install, unless ``allow_unsandboxed`` is set explicitly (a trusted notebook on a
machine without bubblewrap; the report then says so).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534


@dataclass(frozen=True)
class Limits:
    """What one graded notebook may use. CPU seconds and the total are for the whole notebook, not a cell."""

    memory_mb: int = 6144  # address space of the kernel (torch on the CPU needs ~2 GB of it to import)
    cpu_s: int = 900
    file_mb: int = 256  # largest file the kernel may write
    processes: int = 256

    def prlimit(self) -> list[str]:
        return [
            "prlimit",
            f"--as={self.memory_mb * 2**20}",
            f"--cpu={self.cpu_s}",
            f"--fsize={self.file_mb * 2**20}",
            f"--nproc={self.processes}",
            "--core=0",
            "--",
        ]


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made on this machine."""


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """None when a sandbox can be made here, else why not (checked once, by running one)."""
    for tool, package in (("bwrap", "bubblewrap"), ("prlimit", "util-linux")):
        if shutil.which(tool) is None:
            return f"`{tool}` was not found: install Debian's `{package}` package to grade in a sandbox"
    try:
        probe = subprocess.run(
            [
                "bwrap",
                *_system_binds(),
                "--unshare-all",
                "--uid",
                str(NOBODY),
                "--gid",
                str(NOBODY),
                "--die-with-parent",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap could not run: {err}"
    if probe.returncode != 0:
        return f"bwrap could not make a sandbox here: {probe.stderr.strip().splitlines()[-1:] or probe.returncode}"
    return None


def _system_binds() -> list[str]:
    binds = []
    for folder in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"):
        if os.path.lexists(folder):
            binds += (
                ["--ro-bind", folder, folder]
                if not os.path.islink(folder)
                else ["--symlink", os.readlink(folder), folder]
            )
    return binds


def _python_binds() -> list[str]:
    """This Python, its environment and the gpucost_lab package, each read-only at its own path."""
    import gpucost_lab

    package = Path(gpucost_lab.__file__).resolve().parent
    folders = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), package}
    folders |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir() and "site-packages" in p}
    binds = []
    for folder in sorted(folders, key=lambda p: len(p.parts)):
        if str(folder).startswith(("/usr/", "/bin", "/lib", "/etc")):
            continue  # already there
        binds += ["--ro-bind", str(folder), str(folder)]
    return binds


def kernel_argv(workdir: Path, limits: Limits, extra_env: dict[str, str] | None = None) -> list[str]:
    """The command that starts an IPython kernel in the sandbox, for a kernelspec (``{connection_file}`` left in).

    The kernel's environment is this and ``extra_env`` only (the grader's own is cleared)."""
    home = workdir / "home"
    env = {
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "MPLCONFIGDIR": str(home / ".matplotlib"),
        "NBGRADER_EXECUTION": "autograde",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        **(extra_env or {}),
    }
    setenv = [arg for key, value in env.items() for arg in ("--setenv", key, value)]
    # the empty /tmp first: this Python or the package may live under /tmp (a fresh clone), and a later mount wins
    return [
        *limits.prlimit(),
        "bwrap",
        "--tmpfs",
        "/tmp",
        *_system_binds(),
        *_python_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--bind",
        str(workdir),
        str(workdir),
        "--chdir",
        str(workdir / "notebook"),
        "--unshare-all",
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        *setenv,
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
        "--HistoryManager.hist_file=:memory:",
    ]


def unsandboxed_argv(workdir: Path, limits: Limits) -> list[str]:
    """The kernel without a sandbox, only under ``prlimit`` (used only when explicitly allowed)."""
    return [
        *limits.prlimit(),
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
        "--HistoryManager.hist_file=:memory:",
    ]
