"""Where each host-to-device copy ran: how long the host call held the host, how long the copy sat queued on its
stream, and how much kernel time on other streams it overlapped (chapters 02 and 07).

A stream runs its work in the order it was queued (PyTorch, "CUDA semantics", section "CUDA streams"; CUDA C++
Programming Guide, "Asynchronous Execution"). So a ``non_blocking`` copy from pinned memory issued on the stream
the model computes on returns to the host at once but waits on the device behind the kernels queued before it:
``waited_us`` large, ``overlapped_kernel_us`` zero. Only a copy issued on a second stream can run while kernels
run (``overlapped_kernel_us`` > 0). A copy from pageable memory holds the host for about the whole copy
(``host_call_us`` close to ``copy_us``): CUDA synchronizes the stream first and stages the data through a pinned
buffer (CUDA Runtime API, "API synchronization behavior").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpucost_lab._validate import one_of
from gpucost_lab.timeline.load import COPY_DIRECTIONS, Trace
from gpucost_lab.timeline.views import select_events

COPY_COLUMNS = ["name", "ts_us", "stream", "bytes", "copy_us", "host_call_us", "waited_us", "overlapped_kernel_us"]


def _overlap_us(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> float:
    """Length of [lo, hi] covered by the union of the intervals (starts, ends)."""
    cut_lo, cut_hi = np.maximum(starts, lo), np.minimum(ends, hi)
    keep = cut_hi > cut_lo
    if not keep.any():
        return 0.0
    order = np.argsort(cut_lo[keep])
    s, e = cut_lo[keep][order], cut_hi[keep][order]
    total, run_s, run_e = 0.0, s[0], e[0]
    for a, b in zip(s[1:], e[1:]):
        if a > run_e:
            total, run_s, run_e = total + run_e - run_s, a, b
        else:
            run_e = max(run_e, b)
    return float(total + run_e - run_s)


def copy_queueing(
    trace: Trace, direction: str = "HtoD", *, start_us: float | None = None, end_us: float | None = None
) -> pd.DataFrame:
    """One row per copy of ``direction`` ("HtoD", "DtoH", ...), in time order: :data:`COPY_COLUMNS`.

    ``host_call_us``: the runtime call (``cudaMemcpyAsync``) that issued it, matched by correlation id (<NA>
    without one); ``waited_us``: the copy's start minus that call's start (how long after the host asked for it
    the copy began: behind the work queued before it on its stream); ``overlapped_kernel_us``: kernel time on
    *other* streams inside the copy (overlapping kernels counted once).
    """
    one_of("direction", direction, COPY_DIRECTIONS)
    ev = select_events(trace, start_us, end_us)
    copies = ev[(ev["kind"] == "memcpy") & ev["name"].str.contains(f"Memcpy {direction}", regex=False)]
    copies = copies.sort_values("ts_us", kind="stable")
    runtime = ev[(ev["kind"] == "runtime") & ev["correlation"].notna()].drop_duplicates("correlation")
    calls = runtime.set_index("correlation")
    kernels = ev[ev["kind"] == "kernel"]
    k_start, k_end = kernels["ts_us"].to_numpy(float), (kernels["ts_us"] + kernels["dur_us"]).to_numpy(float)
    k_stream = kernels["stream"].to_numpy(np.int64, na_value=-1)
    rows = []
    for c in copies.itertuples(index=False):
        call = calls.loc[c.correlation] if pd.notna(c.correlation) and c.correlation in calls.index else None
        host_us = pd.NA if call is None else float(call["dur_us"])
        waited = pd.NA if call is None else float(c.ts_us - call["ts_us"])
        stream = -1 if pd.isna(c.stream) else int(c.stream)
        other = k_stream != stream
        overlapped = _overlap_us(k_start[other], k_end[other], c.ts_us, c.ts_us + c.dur_us)
        rows.append((c.name, c.ts_us, c.stream, c.bytes, c.dur_us, host_us, waited, overlapped))
    table = pd.DataFrame(rows, columns=COPY_COLUMNS)
    return table.astype(
        {"stream": "Int64", "bytes": "Int64", "copy_us": float, "host_call_us": "Float64", "waited_us": "Float64"}
    )


__all__ = ["COPY_COLUMNS", "copy_queueing"]
