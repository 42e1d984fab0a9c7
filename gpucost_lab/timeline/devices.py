"""Which device a trace ran on, and which rank of which job it is, from the trace itself (:func:`describe`).

Kineto writes the devices' properties (``deviceProperties``) and, for a distributed job, ``distributedInfo``
(backend, rank, world size) beside the events; the device events' categories and the runtime calls' names say the
rest. The device is named by the first rule that holds:

- ``"mtia"``: an event of a Meta MTIA category (``mtia_ccp_events``, ``mtia_runtime``), or a distributed backend
  naming MTIA (``mtia:hccl``, as HolisticTraceAnalysis's ``infer_gpu_type`` reads it);
- ``"cpu"``: no kernel, memcpy or memset at all;
- ``"rocm"``: an AMD GPU under ROCm/HIP: a runtime call named ``hip...`` (``hipLaunchKernel``, as HTA reads it) or
  a device property named ``AMD ...``; Kineto files HIP's events under the CUDA categories;
- ``"cuda"``: any other trace with device work (an NVIDIA GPU).

Each accelerator's device events are its work: on all three, kernels, copies and fills are busy time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

DEVICES = ("cuda", "rocm", "mtia", "cpu")
_DEVICE_WORK = ("kernel", "memcpy", "memset")


@dataclass(frozen=True)
class Description:
    """What a trace says of itself: ``device`` (one of :data:`DEVICES`), ``device_name`` (its
    ``deviceProperties`` name, None when absent), ``rank`` and ``world_size`` (``distributedInfo``, None when
    absent), the collective ``backend`` ("nccl", "gloo", ...; None when absent) and ``base_time_ns``
    (``baseTimeNanoseconds``: the Unix time in nanoseconds the events' timestamps count from; None when absent)."""

    device: str
    device_name: str | None = None
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    base_time_ns: int | None = None


def _count(value: Any) -> int | None:
    """A non-negative integer read from the file, or None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _device_name(outline: dict) -> str | None:
    devices = outline.get("deviceProperties")
    first = devices[0] if isinstance(devices, list) and devices else None
    name = first.get("name") if isinstance(first, dict) else None
    return name if isinstance(name, str) and name else None


def _device(events: pd.DataFrame, backend: str | None, device_name: str | None) -> str:
    cats = pd.unique(events["cat"].to_numpy(object))
    if any(str(c).lower().startswith("mtia") for c in cats) or "mtia" in (backend or "").lower():
        return "mtia"
    if not events["kind"].isin(_DEVICE_WORK).any():
        return "cpu"
    runtime = pd.unique(events.loc[events["kind"] == "runtime", "name"].to_numpy(object))
    if any(str(n).startswith("hip") for n in runtime) or (device_name or "").startswith("AMD"):
        return "rocm"
    return "cuda"


def describe(events: pd.DataFrame, outline: dict) -> Description:
    """The trace's :class:`Description` from its events (columns ``kind``, ``cat``, ``name``) and the values of
    its top-level keys (``outline``; see :data:`~gpucost_lab.timeline.framing.OUTLINE_KEYS`)."""
    info = outline.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    backend = info.get("backend") if isinstance(info.get("backend"), str) else None
    name = _device_name(outline)
    return Description(
        device=_device(events, backend, name),
        device_name=name,
        rank=_count(info.get("rank")),
        world_size=_count(info.get("world_size")),
        backend=backend,
        base_time_ns=_count(outline.get("baseTimeNanoseconds")),
    )
