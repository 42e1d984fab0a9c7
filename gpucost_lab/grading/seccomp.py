"""The system calls a graded kernel may not make: a seccomp filter that bubblewrap loads (``--seccomp FD``) before it
starts the kernel, on the privileged path and the unprivileged one alike.

The sandbox's namespaces and sized mounts (:mod:`.kernel_command`) hold only while the learner's code cannot make new
ones: in a user namespace of its own it is uid 0 and can mount a tmpfs of any size over ``/tmp``, and every kernel
interface gated on a namespace's capabilities opens. The filter refuses, with ``EPERM``:

- new namespaces: ``unshare``, ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag (``clone3``, whose flags sit in
  memory a filter cannot read, says ``ENOSYS``: the C library then falls back to ``clone``, which is checked);
- mounts and file-system roots: ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and the new mount API
  (``open_tree``, ``move_mount``, ``fsopen``, ``fsconfig``, ``fsmount``, ``fspick``, ``mount_setattr``);
- other processes' memory: ``ptrace``, ``process_vm_readv``, ``process_vm_writev``;
- the kernel's own interfaces: ``keyctl``, ``add_key``, ``request_key``, ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring_*``, ``name_to_handle_at``/``open_by_handle_at``, modules, ``kexec``, ``swapon``,
  ``reboot``, ``acct``, ``quotactl``, ``iopl``/``ioperm``;
- any call of another architecture's table (x32, or 32-bit calls on a 64-bit kernel).

Standard library only (``tools/system_packages.py`` loads :mod:`.sandbox`, which uses it): the filter is classic BPF,
written here as bytes. x86-64 and AArch64 are supported; elsewhere :func:`problem` says why no sandbox can be made.
"""

from __future__ import annotations

import os
import platform
import struct

CLONE_NEW_FLAGS = 0x7E020080  # NEWTIME | NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_X32_BIT = 0x40000000  # x86-64's x32 calls have this bit set in their number

_SETS = ("mount", "process", "kernel")
# the refused calls of each architecture: (name, number); clone and clone3 are handled apart
_X86_64 = {
    "mount": {"mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
              "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
              "mount_setattr": 442},
    "process": {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311},
    "kernel": {"keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
               "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
               "name_to_handle_at": 303, "open_by_handle_at": 304, "init_module": 175, "finit_module": 313,
               "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "swapon": 167, "swapoff": 168,
               "reboot": 169, "acct": 163, "quotactl": 179, "iopl": 172, "ioperm": 173},
}  # fmt: skip
_AARCH64 = {
    "mount": {"mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
              "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
              "mount_setattr": 442},
    "process": {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271},
    "kernel": {"keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
               "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
               "name_to_handle_at": 264, "open_by_handle_at": 265, "init_module": 105, "finit_module": 273,
               "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "swapon": 224, "swapoff": 225,
               "reboot": 142, "acct": 89, "quotactl": 60},
}  # fmt: skip
#: machine -> (audit architecture, clone, clone3, the refused calls)
ARCHITECTURES = {
    "x86_64": (0xC000003E, 56, 435, _X86_64),
    "aarch64": (0xC00000B7, 220, 435, _AARCH64),
}

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_NR, _ARCH, _ARG0 = (
    0,
    4,
    16,
)  # offsets in struct seccomp_data (args[0]'s low word: both architectures are little-endian)


def _assemble(steps: list[tuple | str]) -> bytes:
    """``(code, k, true, false)`` steps, ``true``/``false`` the labels (str) a jump goes to, or a step's own label
    (a lone str); the bytes of the ``struct sock_filter`` array."""
    where: dict[str, int] = {}
    pc = 0
    for step in steps:
        if isinstance(step, str):
            where[step] = pc
        else:
            pc += 1
    out, pc = [], 0
    for step in steps:
        if isinstance(step, str):
            continue
        code, k, true, false = step
        jt, jf = (where[label] - pc - 1 if label else 0 for label in (true, false))
        out.append(struct.pack("<HBBI", code, jt, jf, k))
        pc += 1
    return b"".join(out)


def refused_calls(machine: str | None = None) -> dict[str, int]:
    """Every call the filter refuses on ``machine`` (default: this one), by name (clone's namespace flags aside)."""
    tables = ARCHITECTURES[machine or platform.machine()][3]
    return {name: number for group in _SETS for name, number in tables[group].items()}


def program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one), as the bytes of its ``struct sock_filter`` array."""
    arch, clone, clone3, _ = ARCHITECTURES[machine or platform.machine()]
    numbers = sorted(set(refused_calls(machine).values()))
    steps: list[tuple | str] = [
        (_LD_ABS_W, _ARCH, None, None),
        (_JEQ, arch, None, "deny"),  # another architecture's table
        (_LD_ABS_W, _NR, None, None),
        (_JGE, _X32_BIT, "deny", None),
        *((_JEQ, number, "deny", None) for number in numbers),
        (_JEQ, clone, "clone", None),
        (_JEQ, clone3, "enosys", None),
        (_RET, _ALLOW, None, None),
        "clone",
        (_LD_ABS_W, _ARG0, None, None),
        (_JSET, CLONE_NEW_FLAGS, "deny", None),
        (_RET, _ALLOW, None, None),
        "deny",
        (_RET, _ERRNO | _EPERM, None, None),
        "enosys",
        (_RET, _ERRNO | _ENOSYS, None, None),
    ]  # classic BPF jumps forward only: the exits come last
    return _assemble(steps)


def problem() -> str | None:
    """Why no filter can be made on this machine (its architecture has no table here), or None."""
    machine = platform.machine()
    if machine not in ARCHITECTURES:
        return (
            f"no seccomp filter for this machine's architecture, {machine!r} (supported: "
            f"{', '.join(ARCHITECTURES)}): its graded kernels could make namespaces and mounts of their own"
        )
    return None


def write(path: os.PathLike | str) -> str:
    """The filter written to ``path`` (mode 0600), for bubblewrap to read; the path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(program())
    return str(path)
