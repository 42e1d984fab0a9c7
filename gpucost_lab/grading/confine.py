"""The control group a graded kernel runs in: one cap on the memory of all its processes (tmpfs pages included,
which the kernel charges to the group of the process that writes them) and one on their number.

``prlimit`` caps each process alone (its address space, CPU time, file size); a learner's code that starts children
or fills a tmpfs escapes those. The group does not: its first process (the sandbox's launcher) writes itself into
``cgroup.procs`` before it starts bubblewrap, every child inherits the group, and when grading ends every process
left in it is killed and the group removed.

Made directly where the grader is root, on cgroup v2 (beside the grader's own group, with the controllers its
parent delegates) or v1 (under the grader's own group in the ``memory`` and ``pids`` hierarchies). Where the grader
is not root, systemd makes a transient scope (``systemd-run --user --scope``) when the user's service manager runs.
Elsewhere none can be made and :func:`problem` says why; grading then refuses unless
``GPUCOST_GRADE_WITHOUT_CGROUP=1`` allows it explicitly. Standard library only (see ``sandbox``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Set to 1 to grade without the group where none can be made (memory and process caps then per process only).
WITHOUT_CGROUP_ENV = "GPUCOST_GRADE_WITHOUT_CGROUP"


@dataclass(frozen=True)
class Group:
    """A made control group: the ``cgroup.procs`` files its first process joins, or a ``systemd-run`` prefix."""

    procs: tuple[str, ...] = ()
    prefix: tuple[str, ...] = ()


def _own(controller: str | None) -> str | None:
    """This process's group path in a hierarchy (v2: ``controller`` None), from ``/proc/self/cgroup``."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (controller is None and controllers == "") or (controller and controller in controllers.split(",")):
            return path
    return None


def _v2_parent() -> Path | None:
    if not (CGROUP_ROOT / "cgroup.controllers").exists():
        return None
    own = _own(None)
    if own is None:
        return None
    parent = (CGROUP_ROOT / own.lstrip("/")).parent if own != "/" else CGROUP_ROOT
    wanted = {"memory", "pids"}
    return parent if wanted <= set((parent / "cgroup.subtree_control").read_text().split()) else None


def _v1_parents() -> dict[str, Path] | None:
    parents = {}
    for controller in ("memory", "pids"):
        own = _own(controller)
        mount = CGROUP_ROOT / controller
        if own is None or not mount.is_dir():
            return None
        parents[controller] = mount / own.lstrip("/")
    return parents


def _write(path: Path, value: str) -> None:
    path.write_text(value)


@contextlib.contextmanager
def _direct(memory_bytes: int, processes: int) -> Iterator[Group]:
    """A group made by writing to the cgroup file system (the grader is root); removed, its processes killed."""
    name = f"gpucost-grade-{uuid.uuid4().hex[:12]}"
    made: list[Path] = []
    try:
        v2 = _v2_parent()
        if v2 is not None:
            group = v2 / name
            group.mkdir()
            made.append(group)
            _write(group / "memory.max", str(memory_bytes))
            if (group / "memory.swap.max").exists():
                _write(group / "memory.swap.max", "0")
            _write(group / "pids.max", str(processes))
        else:
            parents = _v1_parents()
            if parents is None:
                raise OSError("no cgroup v2 with memory and pids delegated, and no v1 memory and pids hierarchies")
            for parent in parents.values():
                group = parent / name
                group.mkdir()
                made.append(group)
            memory = parents["memory"] / name
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():  # memory and swap together: no swap beyond it
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            _write(parents["pids"] / name / "pids.max", str(processes))
        yield Group(procs=tuple(str(g / "cgroup.procs") for g in made))
    finally:
        for group in made:
            _empty_and_remove(group)


def _empty_and_remove(group: Path, wait_s: float = 10.0) -> None:
    """Kill every process left in ``group``, then remove it (a group can be removed only once empty)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        if (group / "cgroup.kill").exists():
            _write(group / "cgroup.kill", "1")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        group.rmdir()


def _systemd_prefix(memory_bytes: int, processes: int) -> tuple[str, ...]:
    return (
        "systemd-run",
        "--user",
        "--scope",
        "--quiet",
        "--collect",
        "-p",
        f"MemoryMax={memory_bytes}",
        "-p",
        "MemorySwapMax=0",
        "-p",
        f"TasksMax={processes}",
        "--",
    )


def problem() -> str | None:
    """None where a group can be made for a graded kernel, else why not (checked by making and removing one)."""
    if os.geteuid() == 0:
        try:
            with _direct(64 * 2**20, 16):
                return None
        except OSError as err:
            return f"no control group can be made here ({err.strerror or err})"
    if shutil.which("systemd-run") is None:
        return "the grader is not root and systemd-run is missing, so no control group can be made"
    probe = subprocess.run([*_systemd_prefix(64 * 2**20, 16), "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        said = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        return f"the grader is not root and systemd cannot make a scope for it ({said})"
    return None


@contextlib.contextmanager
def kernel_group(memory_bytes: int, processes: int) -> Iterator[Group]:
    """The group for one graded kernel: made for the duration, every process in it killed at the end."""
    if os.geteuid() == 0:
        with _direct(memory_bytes, processes) as group:
            yield group
    else:  # systemd removes the scope, and kills what is in it, when its processes end or the grader kills them
        yield Group(prefix=_systemd_prefix(memory_bytes, processes))
