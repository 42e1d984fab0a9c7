"""GPU time by kind of kernel and by kernel name, as the two tables of HolisticTraceAnalysis's
``get_gpu_kernel_breakdown`` define them (traceinsight 0.6.1, with its default ``include_memory_kernels=True``).

Every kernel, memcpy and memset has a type, from its name alone (:func:`kernel_type`, HTA's patterns):

- ``"communication"``: NCCL / RCCL / HCCL collectives (names starting ``nccl``, ``hip`` or ``hccl``, or containing
  ``ncclKernel``);
- ``"memory"``: copies and fills (``Memcpy ...``, ``Memset ...``, ``dma...``);
- ``"computation"``: every other name, except
- ``"other"``: names that look like synchronization or launch bookkeeping (``...Sync``, ``Stream Wait Event``,
  ``cuda...LaunchKernel``, ...), left out of :func:`kernel_breakdown` as HTA leaves them out.

:func:`kernel_breakdown` (HTA's first table) measures the time during which exactly a given set of types runs:
each type's intervals are merged, then the timeline is cut wherever one starts or ends, and every piece goes to the
set of types running in it: ``"computation"`` alone, ``"computation overlapping communication"`` (both at once),
and so on. The pieces add up to the union of all the GPU work, the busy time of
:func:`~gpucost_lab.timeline.busy_idle`. :func:`kernels_by_name` (HTA's second table, without its folding of the
smaller kernels into "others") sums each name's durations; overlapping kernels each count in full.

Both apply the last-step rule of ``busy_idle`` (two or more ``ProfilerStep#N``: work launched after the last one
began is left out; ``include_last_step=True`` keeps it). Unlike HTA they count only kernels, memcpys and memsets: HTA
takes every event that carries a stream, so a ``gpu_user_annotation`` with a stream would count as computation.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpucost_lab._validate import integer_at_least
from gpucost_lab.timeline.definitions import with_definitions
from gpucost_lab.timeline.load import GPU_WORK, Trace, clip_events, window_bounds
from gpucost_lab.timeline.views import busy_runs, launched_before_last_step, select_events

KERNEL_TYPES = ("computation", "communication", "memory")  # the order of the names in an overlap label
_COMMUNICATION = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
_MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
_NOT_COMPUTATION = re.compile(
    r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|(^runFunction)"
    r"|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)"
)
BY_TYPE_COLUMNS = ["kernel_type", "total_us", "share"]
BY_NAME_COLUMNS = ["name", "kernel_type", "count", "total_us", "share"]


def kernel_type(name: str) -> str:
    """``"communication"``, ``"memory"``, ``"computation"`` or ``"other"`` for a GPU operation's name (module doc)."""
    if _COMMUNICATION.match(name):
        return "communication"
    if _MEMORY.match(name):
        return "memory"
    return "other" if _NOT_COMPUTATION.match(name) else "computation"


def _work(trace: Trace, include_last_step: bool, start_us, end_us) -> pd.DataFrame:
    """The GPU operations counted, with a ``kernel_type`` column."""
    select_events(trace, start_us, end_us)  # an empty window fails here, naming the file
    ev = trace.events
    work = ev[ev["kind"].isin(GPU_WORK)]
    if not include_last_step:
        work = launched_before_last_step(ev, work)
    work = clip_events(work, *window_bounds(start_us, end_us))
    types = {name: kernel_type(name) for name in work["name"].unique()}
    return work.assign(kernel_type=work["name"].map(types).astype(object))


def _overlap_label(mask: int) -> str:
    return " overlapping ".join(t for bit, t in enumerate(KERNEL_TYPES) if mask >> bit & 1)


def kernel_breakdown(
    trace: Trace,
    *,
    include_last_step: bool = False,
    start_us: float | None = None,
    end_us: float | None = None,
    definitions: str = "course",
) -> pd.DataFrame:
    """GPU time by the set of kernel types running (module doc), largest first:

    - ``kernel_type``: ``"computation"``, ``"communication"``, ``"memory"``, or an overlap such as
      ``"computation overlapping communication"`` (types in :data:`KERNEL_TYPES` order; HTA's labels, lower case);
    - ``total_us``: microseconds during which exactly those types run (HTA's ``sum``);
    - ``share``: ``total_us`` over the sum of all rows (HTA's ``percentage`` / 100, unrounded).

    Only sets with time in them are listed; empty on a trace without GPU operations. ``definitions="hta"``: on
    HTA's view of the trace (:mod:`gpucost_lab.timeline.definitions`).
    """
    trace, applied = with_definitions(trace, definitions)
    work = _work(trace, include_last_step or applied, start_us, end_us)
    times, steps = [], []
    for bit, name in enumerate(KERNEL_TYPES):
        ops = work[work["kernel_type"] == name]
        if len(ops):
            starts, ends = busy_runs(ops)[:2]
            times += [starts, ends]
            steps += [np.full(len(starts), 1 << bit), np.full(len(ends), -(1 << bit))]
    if not times:
        return pd.DataFrame(
            {
                "kernel_type": pd.Series(dtype=object),
                "total_us": pd.Series(dtype=float),
                "share": pd.Series(dtype=float),
            }
        )
    t, step = np.concatenate(times), np.concatenate(steps)
    order = np.argsort(t, kind="stable")
    t, mask = t[order], np.cumsum(step[order])
    piece = np.diff(t)  # the time from each boundary to the next runs with the mask set at the boundary
    table = pd.Series(piece, index=mask[:-1]).groupby(level=0).sum()
    table = table[(table.index > 0) & (table > 0)]
    out = pd.DataFrame(
        {"kernel_type": [_overlap_label(int(m)) for m in table.index], "total_us": table.to_numpy(float)}
    )
    out["share"] = out["total_us"] / out["total_us"].sum()
    return out.sort_values(["total_us", "kernel_type"], ascending=[False, True], ignore_index=True)[BY_TYPE_COLUMNS]


def kernels_by_name(
    trace: Trace,
    n: int | None = None,
    *,
    include_last_step: bool = False,
    start_us: float | None = None,
    end_us: float | None = None,
) -> pd.DataFrame:
    """Kernels, memcpys and memsets grouped by full name, largest total first (the ``n`` largest when given):

    - ``name``: the full name as in the trace; ``kernel_type``: :func:`kernel_type` of it;
    - ``count``: how many; ``total_us``: their summed durations (HTA's ``sum (us)`` for that name);
    - ``share``: ``total_us`` over the summed durations of every GPU operation counted (all names, not only the
      ``n`` listed), so overlapping operations can make the shares of a busy span add up to more than its length.
    """
    if n is not None:
        integer_at_least("n", n, 1)
    work = _work(trace, include_last_step, start_us, end_us)
    table = (
        work.groupby("name")
        .agg(kernel_type=("kernel_type", "first"), count=("dur_us", "size"), total_us=("dur_us", "sum"))
        .reset_index()
    )
    total = table["total_us"].sum()
    table = table.assign(share=table["total_us"] / total if total > 0 else 0.0)
    table = table.astype({"name": object, "kernel_type": object, "count": "int64", "total_us": float, "share": float})
    table = table.sort_values(["total_us", "name"], ascending=[False, True], ignore_index=True)
    return (table if n is None else table.head(n))[BY_NAME_COLUMNS]
