"""The sandbox a learner's kernel runs in when a lab is graded, and the check that one can be made here.

The kernel runs under bubblewrap (Debian's ``bubblewrap``, the ``bwrap`` command) in fresh namespaces: no network,
its own process tree, no environment of the grader's, and a file system made of read-only system folders, a few
files of ``/etc``, this Python and the ``gpucost_lab`` package, plus sized tmpfs mounts of its own
(:mod:`.kernel_command`). The course folder, ``solutions/``, the gradebook, the answer keys, ``/etc/shadow`` and
other submissions are simply not there. Where the grader is root the kernel is a uid no account has, without
capabilities, never root in disguise. A seccomp filter (:mod:`.seccomp`) refuses what would undo the rest:
new namespaces (``unshare -Urm``), mounts, ``ptrace``, ``keyctl``, ``bpf`` and the like. ``prlimit`` caps each
process's address space, CPU time, file sizes and the uid's processes; a control group (:mod:`.confine`) caps the
memory and the number of all its processes together, tmpfs included; the grader stops it at the notebook's total
time limit.

Where no sandbox can be made (``bwrap``, ``prlimit`` or ``setpriv`` missing, user namespaces forbidden, no control
group) every grading entry point refuses before it touches a submission (:func:`require`), with one line naming the
package to install or the setting to change, unless ``allow_unsandboxed`` is set explicitly (a trusted notebook;
the log then says so), or, for the control group alone, ``GPUCOST_GRADE_WITHOUT_CGROUP=1``. The module and the two
it uses need the standard library alone: ``tools/system_packages.py`` loads them before any environment exists.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucost_lab.grading import confine, seccomp
from gpucost_lab.grading import kernel_command as _command


@dataclass(frozen=True)
class Limits:
    """What one graded notebook may use. CPU seconds and the total are for the whole notebook, not a cell."""

    memory_mb: int = 6144  # address space of each process (torch on the CPU needs ~2 GB of it to import)
    total_memory_mb: int = 3072  # all the kernel's processes together, its tmpfs files included (control group)
    cpu_s: int = 900
    file_mb: int = 256  # largest file the kernel may write
    processes: int = 256  # processes and threads, of the sandbox's uid (RLIMIT_NPROC) and of its control group
    work_mb: int = 512  # the working folder (a tmpfs, the submission's files copied in)
    tmp_mb: int = 256  # /tmp
    shm_mb: int = 256  # /dev/shm
    home_mb: int = 64  # $HOME (matplotlib's cache)

    def prlimit(self) -> list[str]:
        return [
            shutil.which("prlimit") or "prlimit",
            f"--as={self.memory_mb * 2**20}",
            f"--cpu={self.cpu_s}",
            f"--fsize={self.file_mb * 2**20}",
            f"--nproc={self.processes}",
            "--core=0",
            "--",
        ]


#: The commands a sandbox needs, with the Debian/Ubuntu and Fedora package that brings each
#: (tools/system_packages.py installs them for `make install`).
TOOLS = (("bwrap", "bubblewrap"), ("prlimit", "util-linux"), ("setpriv", "util-linux"))

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
    if reason is None and not os.environ.get(confine.WITHOUT_CGROUP_ENV):
        group = cgroup_problem()
        if group:
            raise SandboxUnavailable(
                f"cannot grade: {group}: the kernel's memory and processes would be capped per process only; grade "
                f"as root on a machine with cgroups, or set {confine.WITHOUT_CGROUP_ENV}=1 to accept that"
            )
    return reason


@functools.lru_cache(maxsize=1)
def cgroup_problem() -> str | None:
    """None where a control group can be made for a graded kernel, else why not (checked once)."""
    return confine.problem()


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

    config: Any  # the nbgrader configuration (a traitlets Config)

    def __call__(self, notebooks=(), **_hook_arguments) -> None:
        allowed = bool(self.config.SandboxedExecute.get("allow_unsandboxed", False))
        try:
            require(allowed)
        except SandboxUnavailable as err:
            print(f"nbgrader autograde: error: {err}", file=sys.stderr)
            raise _Refused(str(err)) from None
        for folder in {Path(nb).parent for nb in notebooks}:
            _drop_links(folder)


def _drop_links(folder: Path) -> None:
    """A submission in ``submitted/`` that holds links or special files (copied there by hand, or uploaded): each is
    removed, named in the log, before nbgrader copies the folder with the grader's rights (a hook cannot refuse one
    submission: nbgrader ignores what it raises). A notebook removed so is then not graded."""
    import logging

    from gpucost_lab.grading.links import offending

    for refused in sorted(offending(folder), key=lambda r: len(r.path.parts), reverse=True):
        logging.getLogger("gpucost_lab.grading").warning("not graded: %s", refused)
        if refused.path.is_symlink() or not refused.path.is_dir():
            with contextlib.suppress(OSError):
                os.unlink(refused.path)


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
    if _command.privileged() and _has_account(_command.SANDBOX_UID):
        return f"uid {_command.SANDBOX_UID}, the graded kernel's, belongs to an account here; it must be unused"
    if seccomp.problem():
        return seccomp.problem()
    try:
        probe = _probe()
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap could not run: {err}"
    if probe.returncode != 0:
        return _namespace_problem(probe.stderr, probe.returncode)
    return None


def _probe() -> subprocess.CompletedProcess:
    """A sandbox made as a graded kernel's is (its namespaces, its seccomp filter), running ``true``."""
    import tempfile

    with tempfile.TemporaryFile() as program:
        program.write(seccomp.program())
        program.seek(0)
        return subprocess.run(
            [
                "bwrap",
                "--seccomp",
                str(program.fileno()),
                *_command.system_binds(),
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                *_command.namespaces(),
                "--die-with-parent",
                "--",
                *_command.drop_privileges(),
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            pass_fds=(program.fileno(),),
        )


def _namespace_problem(stderr: str, status: int) -> str:
    """Why bwrap could not make a sandbox, naming the setting that forbids it where one does."""
    said = (stderr.strip().splitlines() or [f"exit status {status}"])[-1].strip()
    if _command.privileged() and not any(w in said.lower() for w in ("uid map", "user namespace", "unprivileged")):
        return (
            f"bubblewrap could not make its namespaces as root here ({said}): in a container, start it with "
            f"`--cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined` (Docker) "
            f"or grade outside it"
        )
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


def _has_account(uid: int) -> bool:
    import pwd

    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
