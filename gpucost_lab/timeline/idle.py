"""Why a CUDA stream sits idle: each gap between consecutive GPU operations on a stream, put in one of three
categories, as HolisticTraceAnalysis's ``get_idle_time_breakdown`` defines them (traceinsight 0.6.1).

On each stream the GPU operations (kernels, memcpys and memsets; ``cuda_sync`` events are not operations) are
taken in start order; the gap before an operation is its start minus the end of the operation before it on that
stream (the first operation has no gap). The gap is

- **host wait** when the operation's launch (its correlated runtime call, ``cudaLaunchKernel`` say) started after
  the previous operation had ended: the GPU ran dry because the host had not yet enqueued the next operation;
- **kernel wait** when it is not host wait and shorter than ``consecutive_kernel_delay_us`` (30 us, HTA's
  default): the ordinary overhead between back-to-back launches;
- **other** otherwise: the operation was enqueued in time but something else held it back, typically a wait on an
  event recorded by another stream (a communication kernel, a copy).

An operation without a correlated launch in the trace is never host wait. As in HTA, the previous operation is the
one that started just before (not the one that ends last), so two operations that overlap on one stream give a
negative gap, counted as it is (kernel wait, being under the threshold); real traces do not overlap on one stream.
With two or more ``ProfilerStep#N`` the work launched after the last step began is left out, as for
:func:`~gpucost_lab.timeline.busy_idle` (``include_last_step=True`` keeps it).

This is per stream: idle time of one stream may be busy time of another, so the streams' idle times do not add up
to the GPU's idle time of ``busy_idle``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpucost_lab._validate import non_negative
from gpucost_lab.timeline.definitions import with_definitions
from gpucost_lab.timeline.load import GPU_WORK, Trace, clip_events, window_bounds
from gpucost_lab.timeline.views import launched_before_last_step, select_events

IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")
CONSECUTIVE_KERNEL_DELAY_US = 30.0  # HTA's default (its docstring says ns; it compares it with microsecond times)
IDLE_COLUMNS = ["stream", "idle_category", "idle_us", "share", "count"]


def _launch_times(events: pd.DataFrame) -> pd.Series:
    """Start of the earliest runtime call per correlation id."""
    runtime = events[(events["kind"] == "runtime") & events["correlation"].notna()]
    return runtime.drop_duplicates("correlation").set_index("correlation")["ts_us"]


def _gaps(trace: Trace, delay_us: float, include_last_step: bool, start_us, end_us) -> tuple[pd.DataFrame, list]:
    """The categorized gaps and the streams holding GPU operations."""
    non_negative("consecutive_kernel_delay_us", delay_us)
    select_events(trace, start_us, end_us)  # an empty window fails here, naming the file
    ev = trace.events
    work = ev[ev["kind"].isin(GPU_WORK) & ev["stream"].notna()]
    if not include_last_step:
        work = launched_before_last_step(ev, work)
    work = clip_events(work, *window_bounds(start_us, end_us))
    work = work.sort_values(["stream", "ts_us"], kind="stable")
    stream = work["stream"].to_numpy(np.int64)
    start = work["ts_us"].to_numpy(float)
    end = start + work["dur_us"].to_numpy(float)
    launch = work["correlation"].map(_launch_times(ev)).astype(float).to_numpy()
    names = work["name"].to_numpy(object)
    has_prev = np.r_[False, stream[1:] == stream[:-1]] if len(stream) else np.zeros(0, bool)
    prev_end = np.r_[np.nan, end[:-1]] if len(end) else end
    gap = start - prev_end
    with np.errstate(invalid="ignore"):
        host = launch > prev_end  # NaN (no launch in the trace) compares False
    category = np.where(host, "host_wait", np.where(gap < delay_us, "kernel_wait", "other"))
    prev_name = np.r_[[None], names[:-1]] if len(names) else names
    gaps = pd.DataFrame(
        {
            "stream": stream[has_prev],
            "start_us": prev_end[has_prev],
            "duration_us": gap[has_prev],
            "idle_category": category[has_prev].astype(object),
            "before": prev_name[has_prev],
            "after": names[has_prev],
        }
    )
    return gaps, sorted(int(s) for s in np.unique(stream))


def idle_gaps(
    trace: Trace,
    *,
    consecutive_kernel_delay_us: float = CONSECUTIVE_KERNEL_DELAY_US,
    include_last_step: bool = False,
    start_us: float | None = None,
    end_us: float | None = None,
) -> pd.DataFrame:
    """Every gap between consecutive GPU operations on a stream, categorized (module doc):
    ``stream, start_us, duration_us, idle_category, before, after`` (``start_us``: where the gap begins, the end
    of the operation before it; ``before``/``after``: the operations either side), in stream then time order.
    Empty on a trace without GPU operations."""
    return _gaps(trace, consecutive_kernel_delay_us, include_last_step, start_us, end_us)[0]


def idle_breakdown(
    trace: Trace,
    *,
    consecutive_kernel_delay_us: float = CONSECUTIVE_KERNEL_DELAY_US,
    include_last_step: bool = False,
    start_us: float | None = None,
    end_us: float | None = None,
    definitions: str = "course",
) -> pd.DataFrame:
    """Idle time of each CUDA stream by cause (module doc), one row per stream and category (``definitions="hta"``:
    on HTA's view of the trace, :mod:`gpucost_lab.timeline.definitions`):

    - ``stream``: the CUDA stream id; every stream with a GPU operation gets all three rows, streams ascending;
    - ``idle_category``: ``"host_wait"``, ``"kernel_wait"`` or ``"other"`` (:data:`IDLE_CATEGORIES` order);
    - ``idle_us``: the sum of that stream's gaps of that category, in microseconds (HTA's ``idle_time``);
    - ``share``: ``idle_us`` over the stream's idle time in all three categories (HTA's ``idle_time_ratio``,
      unrounded; 0 where the stream has no idle time);
    - ``count``: how many gaps.

    Empty (these columns, no rows) on a trace without GPU operations.
    """
    trace, applied = with_definitions(trace, definitions, idle=True)
    gaps, streams = _gaps(trace, consecutive_kernel_delay_us, include_last_step or applied, start_us, end_us)
    if not streams:
        return pd.DataFrame(
            {c: pd.Series(dtype=t) for c, t in zip(IDLE_COLUMNS, ["int64", object, float, float, "int64"])}
        )
    table = gaps.groupby(["stream", "idle_category"])["duration_us"].agg(["sum", "size"])
    index = pd.MultiIndex.from_product([streams, list(IDLE_CATEGORIES)], names=["stream", "idle_category"])
    table = table.reindex(index, fill_value=0)
    total = table["sum"].groupby(level="stream").transform("sum")
    share = (table["sum"] / total.where(total != 0)).fillna(0.0)
    out = pd.DataFrame(
        {"idle_us": table["sum"].astype(float), "share": share.astype(float), "count": table["size"].astype("int64")}
    ).reset_index()
    return out.astype({"stream": "int64", "idle_category": object})[IDLE_COLUMNS]
