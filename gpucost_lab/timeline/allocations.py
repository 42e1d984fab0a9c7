"""Memory over one training step, phase by phase: ``allocations_by_phase(trace)`` (chapter 04).

The profiler (``profile_memory=True``) records a ``[memory]`` event at every allocation and free, each carrying the
allocator's running total (:func:`~gpucost_lab.timeline.memory_over_time`). Read against the step's outermost
``record_function`` labels, the running total tells the story of a step: it climbs through the forward pass as
activations are saved for backward, peaks early in backward, falls as backward frees them (gradients take their
place), and the optimizer adds its state on its first step.

On a CPU trace the total counts the bytes allocated *while the profiler recorded*: weights and anything created
before it started are not in it. A CUDA trace counts the caching allocator's ``allocated`` bytes (tensors in use);
its ``reserved`` bytes (blocks held from the device, in use or cached for reuse) are what ``nvidia-smi`` shows, and
an out-of-memory error comes when a request fits neither the cached blocks nor the device.
"""

import numpy as np
import pandas as pd

from gpucost_lab.timeline.load import Trace
from gpucost_lab.timeline.views import annotations, memory_events

COLUMNS = ["phase", "start_us", "duration_us", "at_start_bytes", "peak_bytes", "at_end_bytes", "change_bytes"]


def allocations_by_phase(trace: Trace, device_type: int | None = 0) -> pd.DataFrame:
    """One row per outermost ``record_function`` label, in time order: ``phase, start_us`` (from the trace's first
    event), ``duration_us``, and the allocator's running total on ``device_type`` (0 CPU, 1 CUDA) at the phase's
    start, its peak inside it and at its end (bytes), and ``change_bytes`` = end - start. The total before the first
    ``[memory]`` event is 0 (nothing allocated since the profiler started)."""
    mem = memory_events(trace, device_type, None, None)
    if mem.empty:
        raise ValueError(
            f"{trace.path}: no [memory] events on device type {device_type}; profile with "
            "profile_memory=True (gpucost_lab.measure.profiling.profile_window records them by default)"
        )
    origin = float(trace.events["ts_us"].min())
    ts = mem["ts_us"].to_numpy(dtype=float) - origin
    total = mem["total_allocated_bytes"].to_numpy(dtype=float)

    def at(t: float) -> float:
        i = np.searchsorted(ts, t, side="right") - 1
        return float(total[i]) if i >= 0 else 0.0

    rows = []
    labels = annotations(trace)
    for name, start, duration in labels.loc[labels["depth"] == 0, ["name", "start_us", "duration_us"]].itertuples(
        index=False
    ):
        end = start + duration
        inside = total[(ts >= start) & (ts <= end)]
        first, last = at(start), at(end)
        peak = max([first, *inside.tolist()])
        rows.append((name, start, duration, first, peak, last, last - first))
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.astype({c: "int64" for c in COLUMNS if c.endswith("_bytes")})


__all__ = ["COLUMNS", "allocations_by_phase"]
