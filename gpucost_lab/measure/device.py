"""Pick the device and the way to synchronize it before a clock read (chapter 01).

CUDA launches are asynchronous: the Python call returns when the kernel is *queued*, not when it has
run. A clock read without ``torch.cuda.synchronize()`` before it times the queueing. On the CPU, torch
operators run synchronously, so the synchronization is an explicit no-op.

torch is imported only where a device has to be asked about ("auto", "cuda"): a CPU-only caller, such as a phase
timer on a simulated clock, never pays for importing it.
"""

from __future__ import annotations

from collections.abc import Callable

from gpucost_lab._validate import InputError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(name: str = "auto") -> str:
    """Return ``"cpu"`` or ``"cuda"`` (or ``"cuda:N"``) for ``name``; "auto" prefers CUDA when present."""
    if not isinstance(name, str) or not (name in DEVICE_CHOICES or name.startswith("cuda:")):
        raise InputError(
            "device", f"device must be one of {', '.join(map(repr, DEVICE_CHOICES))} (or 'cuda:N'), got {name!r}"
        )
    if name == "cpu":
        return name
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(
                "device", f"device {name!r} was asked for but CUDA is not available here; allowed: 'auto', 'cpu'"
            )
        if ":" in name:
            index = name.split(":", 1)[1]
            if not index.isdigit() or int(index) >= torch.cuda.device_count():
                raise InputError(
                    "device",
                    f"device {name!r} does not exist; this machine has {torch.cuda.device_count()} CUDA device(s)",
                )
    return name


def _cpu_synchronize() -> None:
    """CPU operators have finished when they return: nothing to wait for."""


def synchronizer(device: str) -> Callable[[], None]:
    """The function to call before every clock read on ``device``."""
    if device.startswith("cuda"):
        import torch

        return lambda: torch.cuda.synchronize(device)
    return _cpu_synchronize


def sync_method(device: str) -> str:
    """How :func:`synchronizer` waits on ``device``, as recorded in a contract."""
    return "torch.cuda.synchronize" if device.startswith("cuda") else "none needed (cpu runs synchronously)"
