"""The command that starts a graded kernel in its sandbox (:mod:`.sandbox` says what the sandbox is and checks that
one can be made here), and the folder it runs from.

What the kernel sees, whoever grades:

- read-only: the system folders, a few files of ``/etc`` (the dynamic linker's cache, time zone, name service
  switch; a ``passwd`` and ``group`` naming only the sandbox's user), this Python, its environment and the package;
- its own tmpfs mounts, each sized and ``nosuid,nodev``: ``/tmp``, ``/dev/shm``, its home and its working folder
  (``/grading/notebook``, where the submission's files are copied from a read-only ``/grading/submission``);
- the one host folder it must write, the kernel's sockets, inside the run folder (mode 0700, on ``/dev/shm`` where
  there is one, so its writes are memory, charged to the kernel's control group);
- no network, its own process tree, no environment but the one set here: ``env -i`` clears it for ``prlimit`` and
  bubblewrap too, whose process is the sandbox's PID 1 (its ``/proc/1/environ`` is readable from inside);
- no namespace, mount or other kernel interface of its own: bubblewrap loads :mod:`.seccomp`'s filter (from the run
  folder, on :data:`SECCOMP_FD`) before it starts the kernel, so ``unshare -Urm`` is refused and the sized mounts
  stay as they are;
- not the grader's truth: the folder of :mod:`gpucost_lab.grading.truth` is an empty, read-only tmpfs inside.

Where the grader is root, bubblewrap runs privileged (no user namespace) and ``setpriv`` drops to
:data:`SANDBOX_UID`, a uid no account has, with no capabilities: files the kernel makes are that uid's, never root's,
and ``RLIMIT_NPROC`` binds (root is exempt from it). Elsewhere bubblewrap makes a user namespace, and the kernel is
the grader's own uid on the host (an unprivileged user cannot map another).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from gpucost_lab.grading import seccomp

#: The host uid (and gid) of a graded kernel when the grader is root: no account has it, nothing else runs as it.
SANDBOX_UID = 64_321
NOBODY = 65534  # the kernel's uid inside a user namespace (the grader is not root)
NOTEBOOK_DIR, SUBMISSION_DIR, HOME_DIR = "/grading/notebook", "/grading/submission", "/grading/home"
#: The files of /etc a kernel needs; the rest (``shadow``, the machine's accounts, keys) is not there.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "os-release", "mime.types")

# The sandbox's launcher where the grader is root: the connection file (written by jupyter_client, mode 0600) is
# given to the kernel's uid, the launcher joins the kernel's control group, then it becomes the sandbox.
_LAUNCH = (
    'conn=$1; uid=$2; shift 2; chown "$uid:$uid" "$conn" || exit 97; '
    'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 98; shift; done; shift; exec "$@"'
)
#: The descriptor bubblewrap reads the seccomp filter from, opened on the run folder's copy by :data:`_WITH_FILTER`.
SECCOMP_FD = 3
SECCOMP_FILE = "seccomp.bpf"
_WITH_FILTER = f'exec {SECCOMP_FD}<"$0" || exit 96; exec "$@"'
# Inside the sandbox: the submission's files into the working folder (a tmpfs), then the kernel.
_COPY_IN = f'cp -R {SUBMISSION_DIR}/. {NOTEBOOK_DIR}/ && exec "$@"'


def privileged() -> bool:
    """Whether the grader is root, and so drops the kernel to :data:`SANDBOX_UID` (else a user namespace)."""
    return os.geteuid() == 0


def run_root() -> str | None:
    """Where run folders are made: ``/dev/shm`` (memory, charged to the writer's control group) where usable."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def prepare(work: Path) -> None:
    """The run folder's parts the command binds: its sockets' folder, and the accounts file the kernel sees."""
    os.chmod(work, 0o700)
    (work / "ipc").mkdir()
    (work / "submission").mkdir(exist_ok=True)
    uid = SANDBOX_UID if privileged() else NOBODY
    (work / "passwd").write_text(f"grader:x:{uid}:{uid}:graded kernel:{HOME_DIR}:/bin/sh\n")
    (work / "group").write_text(f"grader:x:{uid}:\n")
    seccomp.write(work / SECCOMP_FILE)
    if privileged():
        os.chown(work / "ipc", SANDBOX_UID, SANDBOX_UID)
        os.chmod(work / "ipc", 0o700)


def seal(work: Path) -> None:
    """Once the kernel has made its sockets: its one host folder is no longer its own (the grader is root), so
    nothing the learner's code writes reaches the host's file system. Connecting to a socket needs no write right
    on its folder."""
    if privileged():
        os.chown(work / "ipc", 0, 0)
        os.chmod(work / "ipc", 0o755)


def _tmpfs(path: str, size_mb: int, mode: str = "1777") -> list[str]:
    return ["--perms", mode, "--size", str(size_mb * 2**20), "--tmpfs", path]


def system_binds() -> list[str]:
    """The system folders and the few files of ``/etc`` a kernel needs, read-only (a folder that is a link stays
    one)."""
    binds = []
    for folder in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.lexists(folder):
            binds += (
                ["--ro-bind", folder, folder]
                if not os.path.islink(folder)
                else ["--symlink", os.readlink(folder), folder]
            )
    for name in ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            binds += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return binds


def package_root() -> Path:
    """The folder holding the gpucost_lab package this grader runs."""
    import gpucost_lab

    return Path(gpucost_lab.__file__).resolve().parent.parent


def truth_folder() -> Path:
    """The folder of :mod:`gpucost_lab.grading.truth` (the labs' expected answers), which the kernel never sees."""
    import gpucost_lab

    return Path(gpucost_lab.__file__).resolve().parent / "grading" / "truth"


def python_binds() -> list[str]:
    """This Python, its environment and the gpucost_lab package, each read-only at its own path.

    bubblewrap makes the folders above each (``/root`` for a Python under it) with the host's modes; those it made
    are opened to the sandbox's user (``--chmod 0755``), the bound folders keep their own."""
    import gpucost_lab

    package = Path(gpucost_lab.__file__).resolve().parent
    folders = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), package}
    folders |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir() and "site-packages" in p}
    bound = sorted((f for f in folders if not str(f).startswith(("/usr/", "/bin", "/lib"))), key=lambda p: len(p.parts))
    bound = [f for i, f in enumerate(bound) if not any(f.is_relative_to(g) for g in bound[:i])]
    mounts = {Path("/"), Path("/tmp"), Path("/dev"), Path("/dev/shm")}  # ours (a sized tmpfs, 1777): never chmod
    made = {a for f in bound for a in f.parents if a not in mounts and not any(a.is_relative_to(g) for g in bound)}
    binds = [arg for f in bound for arg in ("--ro-bind", str(f), str(f))]
    return binds + [arg for a in sorted(made, key=lambda p: len(p.parts)) for arg in ("--chmod", "0755", str(a))]


def namespaces() -> list[str]:
    """bubblewrap's namespace flags: root needs no user namespace (and keeps only what ``setpriv`` needs)."""
    if privileged():
        flags = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        return [*flags, "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return ["--unshare-all", "--uid", str(NOBODY), "--gid", str(NOBODY)]


def drop_privileges() -> list[str]:
    """Inside the sandbox where the grader is root: become :data:`SANDBOX_UID` with no capability at all."""
    if not privileged():
        return []
    uid = str(SANDBOX_UID)
    return [
        shutil.which("setpriv") or "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def kernel_argv(work: Path, limits, env: dict[str, str], group) -> list[str]:
    """The command that starts an IPython kernel in the sandbox, for a kernelspec (``{connection_file}`` left in).

    ``group`` is the kernel's control group (:mod:`.confine`): its launcher joins it, or it is a systemd prefix.
    The kernel's environment is ``env`` and the few variables set here, nothing of the grader's."""
    setenv = [arg for key, value in _kernel_env(env).items() for arg in ("--setenv", key, value)]
    return [
        *_launcher(group),
        "/usr/bin/env",
        "-i",
        *limits.prlimit(),
        "/bin/sh",
        "-c",
        _WITH_FILTER,
        str(work / SECCOMP_FILE),
        shutil.which("bwrap") or "bwrap",
        "--seccomp",
        str(SECCOMP_FD),
        *_mounts(work, limits),
        "--chdir",
        NOTEBOOK_DIR,
        *namespaces(),
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        *setenv,
        "--",
        *drop_privileges(),
        "/bin/sh",
        "-c",
        _COPY_IN,
        "gpucost-kernel",
        *_kernel(),
    ]


def _kernel_env(env: dict[str, str]) -> dict[str, str]:
    """The kernel's whole environment: the few variables it needs, then ``env``."""
    return {
        "HOME": HOME_DIR,
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "MPLCONFIGDIR": f"{HOME_DIR}/.matplotlib",
        "NBGRADER_EXECUTION": "autograde",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "USER": "grader",
        "PYTHONPATH": str(package_root()),  # the kernel imports the very package the grader runs and binds
        **env,
    }


def _launcher(group) -> list[str]:
    """What starts the sandbox: the control group's prefix, and where the grader is root the launcher that gives
    the connection file to the kernel's uid and joins the group."""
    launch: list[str] = list(group.prefix) if group is not None else []
    if privileged():
        launch += ["/bin/sh", "-c", _LAUNCH, "gpucost-sandbox", "{connection_file}", str(SANDBOX_UID)]
        launch += [*(group.procs if group is not None else ()), "--"]
    return launch


def _mounts(work: Path, limits) -> list[str]:
    """bubblewrap's file system for the kernel: what it sees read-only, its sized tmpfs mounts, its sockets' folder."""
    # the sized /tmp first: this Python or the package may live under /tmp (a fresh clone), and a later mount wins
    return [
        *_tmpfs("/tmp", limits.tmp_mb),
        *system_binds(),
        "--ro-bind",
        str(work / "passwd"),
        "/etc/passwd",
        "--ro-bind",
        str(work / "group"),
        "/etc/group",
        *python_binds(),
        *_tmpfs(str(truth_folder()), 1, "0555"),  # over the grader's truth: an empty folder the kernel cannot fill
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *_tmpfs("/dev/shm", limits.shm_mb),
        *_tmpfs(HOME_DIR, limits.home_mb, "0777"),
        *_tmpfs(NOTEBOOK_DIR, limits.work_mb, "0777"),
        "--ro-bind",
        str(work / "submission"),
        SUBMISSION_DIR,
        "--bind",
        str(work / "ipc"),
        str(work / "ipc"),
        "--ro-bind",
        str(work / "connection.json"),
        str(work / "connection.json"),
        "--chmod",  # made by bubblewrap with the host folder's mode, 0700
        "0755",
        str(work),
    ]


def unsandboxed_argv(limits) -> list[str]:
    """The kernel without a sandbox, only under ``prlimit`` (used only when explicitly allowed)."""
    return [
        "/usr/bin/env",
        f"PYTHONPATH={package_root()}",
        *limits.prlimit(),
        *_kernel(),
    ]


def _kernel() -> list[str]:
    """The kernel itself, this Python's ipykernel (``{connection_file}`` left for jupyter_client)."""
    return [
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
        "--HistoryManager.hist_file=:memory:",
    ]
