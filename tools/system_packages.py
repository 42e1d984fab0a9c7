"""The system packages the course needs beyond pip, brought in by `make install` (so `make lab`) and `make test`.

Run by the Makefile with the machine's own Python, before any environment exists, so it uses the standard library
alone. `python3 tools/system_packages.py lab` checks what the course needs (bubblewrap, for grading's sandbox);
`... test` adds what the tests need (Chromium for the browser tests, npm for the JupyterHub proxy).

- Everything present: nothing is installed and nothing is printed.
- Missing, on a machine with apt-get where we are root or have passwordless sudo: installed once with apt-get,
  said in one line.
- Missing elsewhere on Linux: one line naming what is missing and the command that installs it (Debian/Ubuntu,
  Fedora), exit status 2, before any other work. `SYSTEM_PACKAGES=skip` goes on without them.
- macOS and Windows: one line saying what works there (the chapters and widgets) and that sandboxed grading needs
  Linux with unprivileged user namespaces; the set-up goes on.

After an install, a sandbox is tried (`gpucost_lab/grading/sandbox.py`, loaded by path): where the kernel forbids
user namespaces, one line says so and what to change, since installing bubblewrap cannot fix that.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Need:
    """One system package: the command (or absolute path) that shows it is there, and its names per distribution."""

    command: str
    apt: str
    dnf: str
    why: str
    unless_root: bool = False  # needed only where the grader is not root

    def present(self, which=shutil.which) -> bool:
        if self.unless_root and hasattr(os, "geteuid") and os.geteuid() == 0:
            return True
        if os.path.isabs(self.command):
            return os.access(self.command, os.X_OK)
        return which(self.command) is not None


#: What `make install` needs (grading) and what `make test` needs on top (the browser and hub tests).
NEEDS: dict[str, tuple[Need, ...]] = {
    "lab": (
        Need("bwrap", "bubblewrap", "bubblewrap", "grading's sandbox"),
        Need("prlimit", "util-linux", "util-linux", "grading's limits"),
        Need("setpriv", "util-linux", "util-linux", "grading's unprivileged kernel"),
        Need("/usr/bin/env", "coreutils", "coreutils", "grading's empty environment"),
        Need("systemd-run", "systemd", "systemd", "grading's control group, where the grader is not root", True),
    ),
    "test": (
        Need("/usr/bin/chromium", "chromium", "chromium", "the browser tests"),
        Need("npm", "npm", "npm", "the JupyterHub proxy of the hub tests"),
    ),
}

NON_LINUX_NOTE = (
    "on {system} the chapters, widgets and labs run, but sandboxed grading (gpucost-lab grade, nbgrader autograde) "
    "needs Linux with bubblewrap and unprivileged user namespaces: grade on a Linux machine or a JupyterHub"
)


def needed(kind: str) -> tuple[Need, ...]:
    if kind not in NEEDS:
        raise SystemExit(f"system_packages.py: the set must be one of {', '.join(NEEDS)}, got {kind!r}")
    return NEEDS["lab"] + (NEEDS["test"] if kind == "test" else ())


def decide(missing: list[Need], system: str, is_root: bool, has_sudo: bool, has_apt: bool) -> tuple[str, str]:
    """What to do: ("none", ""), ("note", line), ("install", the apt-get prefix) or ("stop", line)."""
    if system != "Linux":
        return ("note", NON_LINUX_NOTE.format(system={"Darwin": "macOS"}.get(system, system))) if missing else ("", "")
    if not missing:
        return "none", ""
    if has_apt and (is_root or has_sudo):
        return "install", "" if is_root else "sudo -n "
    names = ", ".join(f"{n.apt} ({n.why})" for n in missing)
    apt = " ".join(n.apt for n in missing)
    dnf = " ".join(n.dnf for n in missing)
    return (
        "stop",
        f"missing system packages: {names}; install them as root, Debian/Ubuntu: `sudo apt-get install -y {apt}`, "
        f"Fedora: `sudo dnf install -y {dnf}`, then run make again (or add SYSTEM_PACKAGES=skip to go on without "
        f"them)",
    )


def _has_sudo() -> bool:
    if shutil.which("sudo") is None:
        return False
    return subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0


def _apt_install(prefix: str, packages: list[str]) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sudo = prefix.split()
    for argv in (
        [*sudo, "apt-get", "update", "-qq"],
        [*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise SystemExit(f"make: `{' '.join(argv)}` failed: {last}")


def _sandbox_problem() -> str | None:
    """The grading sandbox's own reason it cannot run here, or None. Its modules use the standard library alone: they
    are loaded from the tree under stand-in packages, since the package's own ``__init__`` needs the environment."""
    import types

    for name, folder in (
        ("gpucost_lab", ROOT / "gpucost_lab"),
        ("gpucost_lab.grading", ROOT / "gpucost_lab" / "grading"),
    ):
        package = types.ModuleType(name)
        package.__path__ = [str(folder)]
        sys.modules.setdefault(name, package)
    module = importlib.import_module("gpucost_lab.grading.sandbox")
    return module.unavailable_reason() or module.cgroup_problem()


def main(argv: list[str]) -> int:
    kind = argv[1] if len(argv) > 1 else "lab"
    if os.environ.get("SYSTEM_PACKAGES", "") == "skip":
        return 0
    missing = [n for n in needed(kind) if not n.present()]
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    system = platform.system()
    has_apt = shutil.which("apt-get") is not None
    action, detail = decide(
        missing, system, is_root, has_sudo=bool(missing) and not is_root and has_apt and _has_sudo(), has_apt=has_apt
    )
    if action == "note":
        print(f"note: {detail}")
    elif action == "stop":
        print(f"make: {detail}", file=sys.stderr)
        return 2
    elif action == "install":
        packages = sorted({n.apt for n in missing})
        print(f"installing {', '.join(packages)} with apt-get ({', '.join(n.why for n in missing)})")
        _apt_install(detail, packages)
    if action == "install" and any(n.command == "bwrap" for n in missing):
        problem = _sandbox_problem()
        if problem:
            print(f"note: grading will refuse to run here: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
