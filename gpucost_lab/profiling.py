"""Profile a short, representative window of a step function (chapters 01 and 02).

Profiling every step distorts the workload; ``torch.profiler.schedule(wait, warmup, active)`` records
only a few steps after the profiler itself has warmed up.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Callable

import pandas as pd
from torch.profiler import ProfilerActivity, profile, schedule

from ._validate import integer_at_least

OPERATOR_COLUMNS = ["name", "calls", "self_time_s", "total_time_s", "self_time_share"]


def profile_window(
    step: Callable[[], object],
    *,
    device: str = "cpu",
    wait: int = 1,
    warmup: int = 1,
    active: int = 5,
    record_shapes: bool = False,
    profile_memory: bool = True,
    with_stack: bool = False,
    trace_path: str | os.PathLike | None = None,
) -> profile:
    """Run ``wait + warmup + active`` steps under the profiler, recording the ``active`` ones.

    With ``trace_path`` (``.json`` or ``.json.gz``) the Chrome/Kineto trace is written there; open it
    in Perfetto. Returns the finished profiler, for :func:`operator_table` and :func:`peak_allocated_bytes`.
    """
    integer_at_least("wait", wait, 0)
    integer_at_least("warmup", warmup, 0)
    integer_at_least("active", active, 1)
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
    ) as prof:
        for _ in range(wait + warmup + active):
            step()
            prof.step()
    if trace_path is not None:
        prof.export_chrome_trace(str(trace_path))
    return prof


def operator_table(prof: profile, top: int | None = 10, on_device: bool = False) -> pd.DataFrame:
    """Operators by self time, widest first: ``name, calls, self_time_s, total_time_s, self_time_share``.

    ``on_device=True`` ranks by time on the accelerator (kernels) instead of CPU time.
    """
    rows = []
    for e in prof.key_averages():
        if e.key.startswith("ProfilerStep"):  # the step markers, not operators
            continue
        self_us = e.self_device_time_total if on_device else e.self_cpu_time_total
        total_us = e.device_time_total if on_device else e.cpu_time_total
        rows.append((e.key, e.count, self_us / 1e6, total_us / 1e6))
    table = pd.DataFrame(rows, columns=OPERATOR_COLUMNS[:4])
    total_self_s = table["self_time_s"].sum()
    table["self_time_share"] = table["self_time_s"] / total_self_s if total_self_s > 0 else 0.0
    table = table.sort_values("self_time_s", ascending=False, kind="stable").reset_index(drop=True)
    return table if top is None else table.head(top)


def peak_allocated_bytes(prof: profile, device_type: int = 0) -> int:
    """Peak of the allocator's running total during the recorded steps, from ``[memory]`` events.

    ``device_type`` 0 is the CPU, 1 is CUDA. Allocations made before profiling started are not in
    the running total, so this is memory allocated *within* the window.
    """
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            events = json.load(f).get("traceEvents", [])
    finally:
        os.unlink(path)
    totals = [
        e["args"]["Total Allocated"]
        for e in events
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == device_type
    ]
    return int(max(totals, default=0))
