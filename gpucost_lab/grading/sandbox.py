"""The sandbox a learner's kernel runs in when a lab is graded.

The kernel runs under bubblewrap (Debian's ``bubblewrap``, the ``bwrap`` command) as user 65534 ("nobody")
in fresh namespaces: no network, its own process tree, and a file system made of read-only system folders, this
Python and the ``gpucost_lab`` package, plus one throw-away folder of its own. The course folder, ``solutions/``,
the gradebook, the answer keys and other submissions are simply not there. ``prlimit`` caps its address space,
CPU time, file sizes and process count; the grader stops it at the notebook's total time limit.

Without ``bwrap`` or ``prlimit`` (or where the kernel forbids unprivileged user namespaces) every grading entry
point refuses before it touches a submission (:func:`require`), with one line naming the package to install or the
setting to change, unless ``allow_unsandboxed`` is set explicitly (a trusted notebook on a machine without
bubblewrap; the log then says so). The module uses the standard library alone: ``tools/system_packages.py`` loads
it by path before any environment exists.
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


#: The commands a sandbox needs, with the Debian/Ubuntu and Fedora package that brings each
#: (tools/system_packages.py installs them for `make install`).
TOOLS = (("bwrap", "bubblewrap"), ("prlimit", "util-linux"))

#: The kernel settings that forbid unprivileged user namespaces: (setting, the value that forbids them, a value that
#: allows them).
USERNS_SETTINGS = (
    ("kernel.apparmor_restrict_unprivileged_userns", "1", "0"),  # Ubuntu 24.04 (AppArmor): 1 by default
    ("kernel.unprivileged_userns_clone", "0", "1"),  # Debian's older kernels
    ("user.max_user_namespaces", "0", "15000"),
)

_SYSCTL_ROOT = Path("/proc/sys")


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made on this machine; the message is one line saying why and what to change."""


def require(allow_unsandboxed: bool = False) -> str | None:
    """Raise :class:`SandboxUnavailable` with :func:`unavailable_reason` where no sandbox can be made, unless
    ``allow_unsandboxed``; returns the reason (None where a sandbox can be made). Every grading entry point calls it
    before it touches a submission."""
    reason = unavailable_reason()
    if reason and not allow_unsandboxed:
        raise SandboxUnavailable(f"cannot grade: {reason}")
    return reason


class _Refused(SystemExit):
    """Stops nbgrader's autograde before it writes anything. A SystemExit (status 2), since nbgrader logs and ignores
    any Exception a pre-convert hook raises; its text is the one line (shown by the formgrader's API too)."""

    def __init__(self, line: str) -> None:
        super().__init__(2)
        self.line = line

    def __str__(self) -> str:
        return self.line


@dataclass(frozen=True)
class BeforeAutograde:
    """nbgrader's ``Autograde.pre_convert_hook`` (set by ``course.autograde_steps``): where no sandbox can be made,
    the plain ``nbgrader autograde`` stops with the one line, before the submission is copied or the gradebook
    written, unless ``c.SandboxedExecute.allow_unsandboxed`` is set in ``config``."""

    config: object

    def __call__(self, **_hook_arguments) -> None:
        allowed = bool(self.config.SandboxedExecute.get("allow_unsandboxed", False))
        try:
            require(allowed)
        except SandboxUnavailable as err:
            print(f"nbgrader autograde: error: {err}", file=sys.stderr)
            raise _Refused(str(err)) from None


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """None when a sandbox can be made here, else why not in one line (checked once, by running one)."""
    for tool, package in TOOLS:
        if shutil.which(tool) is None:
            return (
                f"`{tool}` was not found on the PATH: grading runs each submission in a sandbox; install the "
                f"`{package}` package (Debian/Ubuntu: `sudo apt-get install -y {package}`, Fedora: "
                f"`sudo dnf install -y {package}`)"
            )
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
        return _namespace_problem(probe.stderr, probe.returncode)
    return None


def _namespace_problem(stderr: str, status: int) -> str:
    """Why bwrap could not make a sandbox, naming the setting that forbids it where one does."""
    said = (stderr.strip().splitlines() or [f"exit status {status}"])[-1].strip()
    for setting, forbidding, allowing in USERNS_SETTINGS:
        value = _sysctl(setting)
        if value == forbidding:
            return (
                f"bubblewrap cannot create user namespaces here ({said}): this kernel forbids unprivileged user "
                f"namespaces ({setting} = {value}); allow them as root with `sysctl -w {setting}={allowing}`"
            )
    return (
        f"bubblewrap cannot create user namespaces here ({said}): unprivileged user namespaces are forbidden; on a "
        f"host, allow them (sysctl kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu, "
        f"kernel.unprivileged_userns_clone=1 on older Debian); in a container, start it with "
        f"`--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (Docker) or grade outside it"
    )


def _sysctl(name: str) -> str | None:
    try:
        return (_SYSCTL_ROOT / name.replace(".", "/")).read_text().strip()
    except OSError:
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
