"""The views of a loaded trace: busy and idle time, gaps, sync points, copies, top ops, memory, phases and steps."""

# No ``from __future__ import annotations`` here: the module defines a function of that name (``annotations``).
import numpy as np
import pandas as pd

from gpucost_lab._validate import integer_at_least, non_negative
from gpucost_lab.timeline.definitions import with_definitions
from gpucost_lab.timeline.load import (
    COPY_DIRECTIONS,
    GPU_WORK,
    BusyIdle,
    Trace,
    clip_events,
    no_events_in_window,
    window_bounds,
)

_HOST_SYNC = [
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "aten::item",
    "aten::_local_scalar_dense",
]


def select_events(trace: Trace, start_us: float | None, end_us: float | None) -> pd.DataFrame:
    """The trace's events, cut to the window when one is given (ValueError naming the file when it is empty)."""
    lo, hi = window_bounds(start_us, end_us)
    events = clip_events(trace.events, lo, hi)
    if events.empty:
        ev = trace.events
        span = (ev["ts_us"].min(), (ev["ts_us"] + ev["dur_us"]).max())
        raise no_events_in_window(trace.path, start_us, end_us, span)
    return events


# ----------------------------------------------------------------------------------------------- busy and idle
def _main_thread(events: pd.DataFrame) -> tuple[str, str] | None:
    """The (pid, tid) holding the most ProfilerStep + cpu_op time (ties: the first in sort order)."""
    host = events[events["kind"].isin(["step", "cpu_op"]) & events["lane"].str.startswith("thread ")]
    if host.empty:
        return None
    return host.groupby(["pid", "tid"])["dur_us"].sum().idxmax()


def launched_before_last_step(events: pd.DataFrame, work: pd.DataFrame) -> pd.DataFrame:
    """HTA's rule: with two or more ProfilerStep#N, drop GPU work launched after the last step began (launch: the
    first runtime call with the work's correlation id; work without one counts from its own start). In numpy, not
    pandas (benchmarks/RESULTS.md, "Trace loading at scale")."""
    kind, ts = events["kind"].to_numpy(object, copy=False), events["ts_us"].to_numpy(float)
    steps = (kind == "step") & (events["cat"].to_numpy(object, copy=False) != "gpu_user_annotation")
    if np.count_nonzero(steps) < 2:
        return work
    runtime = (kind == "runtime") & events["correlation"].notna().to_numpy()
    ids, first = np.unique(events["correlation"].to_numpy(np.int64, na_value=0)[runtime], return_index=True)
    launch_us = ts[runtime][first]
    wanted = work["correlation"].to_numpy(np.int64, na_value=0)
    at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
    found = work["correlation"].notna().to_numpy() & (ids[at] == wanted if len(ids) else False)
    launched = np.where(found, launch_us[at] if len(ids) else 0.0, work["ts_us"].to_numpy(float))
    return work[launched < ts[steps].max()]


BusyBasis = tuple[pd.DataFrame, float, float, str]  # (ops whose union is busy, span start, span end, basis name)


def busy_basis(trace: Trace, start_us: float | None, end_us: float | None, include_last_step: bool) -> BusyBasis | None:
    """What busy time is measured from (module doc of :mod:`gpucost_lab.timeline`): the ops whose union is busy, the
    span's start and end, and the basis's name ("gpu" or "main thread"); None when there is nothing to measure."""
    lo, hi = window_bounds(start_us, end_us)
    ev = trace.events
    if trace.accelerated:
        ops = ev[ev["kind"].isin(GPU_WORK)]
        ops = frame = ops if include_last_step else launched_before_last_step(ev, ops)
        basis = "gpu"
    else:
        thread = _main_thread(ev)
        frame = (
            ev.iloc[:0]
            if thread is None
            else ev[(ev["pid"] == thread[0]) & (ev["tid"] == thread[1]) & ev["kind"].isin(["step", "cpu_op"])]
        )
        ops, basis = frame[frame["kind"] == "cpu_op"], "main thread"
    ops, frame = clip_events(ops, lo, hi), clip_events(frame, lo, hi)
    if ops.empty:
        return None
    return ops, float(frame["ts_us"].min()), float((frame["ts_us"] + frame["dur_us"]).max()), basis


def _required_basis(trace: Trace, start_us: float | None, end_us: float | None, include_last_step: bool) -> BusyBasis:
    """:func:`busy_basis`, or ValueError naming the file when there is nothing to measure busy time from."""
    basis = busy_basis(trace, start_us, end_us, include_last_step)
    if basis is not None:
        return basis
    select_events(trace, start_us, end_us)  # an empty window is named as such
    what = "kernel, memcpy or memset" if trace.accelerated else "main-thread cpu_op"
    where = "" if start_us is None and end_us is None else f" in the window start_us={start_us}, end_us={end_us}"
    raise ValueError(f"{trace.path}: no {what} events{where} to measure busy time from")


def busy_runs(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Union of the ops' intervals: run starts, run ends, and per run the name that starts and that ends it."""
    s = ops["ts_us"].to_numpy(float)
    e = s + ops["dur_us"].to_numpy(float)
    order = np.lexsort((-e, s))  # by start, the longest first
    s, e, names = s[order], e[order], ops["name"].to_numpy(object)[order]
    reach = np.maximum.accumulate(e)
    first = np.r_[True, s[1:] > reach[:-1]]
    run_end = reach[np.r_[np.flatnonzero(first)[1:] - 1, len(s) - 1]]
    at_end = reach == run_end[np.cumsum(first) - 1]  # within a run: from the op that reaches its end onwards
    ender = at_end & np.r_[True, ~at_end[:-1] | first[1:]]  # that op, the outermost of those ending there
    return s[first], run_end, names[first], names[ender]


def measure_busy(basis: BusyBasis) -> tuple[BusyIdle, pd.DataFrame]:
    """BusyIdle and the gap table (unsorted) of one busy basis."""
    ops, span_start, span_end, name = basis
    run_start, run_end, starts_name, ends_name = busy_runs(ops)
    busy = float(np.sum(run_end - run_start))
    span = span_end - span_start
    edges = np.r_[span_start, run_end]
    table = pd.DataFrame(
        {
            "start_us": edges,
            "duration_us": np.r_[run_start, span_end] - edges,
            "before": pd.array([None, *ends_name], dtype=object),
            "after": pd.array([*starts_name, None], dtype=object),
        }
    )
    return BusyIdle(
        span_us=span, busy_us=busy, idle_us=span - busy, start_us=span_start, end_us=span_end, basis=name
    ), table[table["duration_us"] > 0]


def widest_gaps(table: pd.DataFrame, top: int | None, min_us: float = 0) -> pd.DataFrame:
    """The gaps widest first (ties: the earlier first), indexed by ``rank`` from 1: the widest gap is rank 1."""
    table = table[table["duration_us"] >= min_us]
    table = table.sort_values(["duration_us", "start_us"], ascending=[False, True], ignore_index=True)
    table.index = pd.RangeIndex(1, len(table) + 1, name="rank")
    return table if top is None else table.head(top)


def busy_idle(
    trace: Trace,
    *,
    start_us: float | None = None,
    end_us: float | None = None,
    include_last_step: bool = False,
    definitions: str = "course",
) -> BusyIdle:
    """Busy and idle time of the device (an accelerator's trace) or of the main thread (CPU-only trace); see the
    module doc. ``definitions="hta"``: as HTA's temporal breakdown measures it
    (:mod:`gpucost_lab.timeline.definitions`)."""
    trace, applied = with_definitions(trace, definitions)
    return measure_busy(_required_basis(trace, start_us, end_us, include_last_step or applied))[0]


def gaps(
    trace: Trace,
    top: int | None = None,
    min_us: float = 0,
    *,
    start_us: float | None = None,
    end_us: float | None = None,
    include_last_step: bool = False,
) -> pd.DataFrame:
    """Idle intervals of the busy basis, widest first: ``start_us, duration_us, before, after``, indexed by ``rank``
    (1 is the widest gap, as :func:`gpucost_lab.timeline.plot.plot_timeline` labels it).

    ``before`` / ``after`` name the operation ending just before / starting just after the gap (None at the edge
    of a CPU span, where a step starts or ends with no operator running).
    """
    if top is not None:
        integer_at_least("top", top, 1)
    non_negative("min_us", min_us)
    return widest_gaps(measure_busy(_required_basis(trace, start_us, end_us, include_last_step))[1], top, min_us)


# ----------------------------------------------------------------------------------------------- other views
def _merge_nested(events: pd.DataFrame) -> pd.DataFrame:
    """One row per group of nested/overlapping events on one (pid, lane), named by the outermost."""
    ev = events.assign(end_us=events["ts_us"] + events["dur_us"])
    ev = ev.sort_values(["pid", "lane", "ts_us", "end_us"], ascending=[True, True, True, False])
    keys = [ev["pid"], ev["lane"]]
    reach_before = ev.groupby(keys)["end_us"].cummax().groupby(keys).shift()
    group = (reach_before.isna() | (ev["ts_us"] > reach_before)).cumsum()
    out = ev.groupby(group).agg(
        name=("name", "first"), ts_us=("ts_us", "first"), end_us=("end_us", "max"), lane=("lane", "first")
    )
    return out.assign(duration_us=out["end_us"] - out["ts_us"])[["name", "ts_us", "duration_us", "lane"]]


def sync_points(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Host/device synchronizations, in time order: ``name, ts_us, duration_us, lane`` (merging: module doc)."""
    ev = select_events(trace, start_us, end_us)
    host = _merge_nested(ev[ev["kind"].isin(["runtime", "cpu_op"]) & ev["name"].isin(_HOST_SYNC)])
    device = ev[(ev["kind"] == "sync") | ((ev["kind"] == "memcpy") & ev["name"].str.contains("DtoH"))]
    if len(host) and len(device):
        host = host.sort_values("ts_us")
        reach = np.maximum.accumulate((host["ts_us"] + host["duration_us"]).to_numpy(float))
        idx = (
            np.searchsorted(
                host["ts_us"].to_numpy(float), (device["ts_us"] + device["dur_us"]).to_numpy(float), side="right"
            )
            - 1
        )
        overlaps = (idx >= 0) & (reach[np.maximum(idx, 0)] >= device["ts_us"].to_numpy(float))
        device = device[~overlaps]
    points = pd.concat([p for p in (host, _merge_nested(device)) if len(p)] or [host])
    return points.sort_values("ts_us", kind="stable", ignore_index=True)


def memcpy_summary(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Copies by direction (HtoD, DtoH, DtoD, HtoH, PtoP, other) plus a "memset" row:
    ``direction, count, total_us, total_bytes``; only directions present."""
    ev = select_events(trace, start_us, end_us)
    copies = ev[ev["kind"].isin(["memcpy", "memset"])]
    direction = copies["name"].str.extract(r"Memcpy\s+(\w+)", expand=False).astype(object)
    direction = direction.where(direction.isin(COPY_DIRECTIONS), "other").where(copies["kind"] == "memcpy", "memset")
    table = copies.groupby(direction.rename("direction")).agg(
        count=("dur_us", "size"), total_us=("dur_us", "sum"), total_bytes=("bytes", lambda b: b.sum(min_count=1))
    )
    order = {d: i for i, d in enumerate([*COPY_DIRECTIONS, "other", "memset"])}
    table = table.reset_index().sort_values("direction", key=lambda d: d.map(order), ignore_index=True)
    return table.astype({"direction": object, "count": int, "total_us": float, "total_bytes": "Int64"})


def top_ops(trace: Trace, n: int = 10, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Kernels (CUDA trace) or cpu_ops (CPU trace) by total time: ``name, kind, count, total_us, share``.

    ``share`` is total_us over the sum for all of that kind (a cpu_op's time includes the ops it calls).
    """
    integer_at_least("n", n, 1)
    kind = "kernel" if trace.accelerated else "cpu_op"
    ev = select_events(trace, start_us, end_us)
    ops = ev[ev["kind"] == kind]
    table = ops.groupby("name").agg(count=("dur_us", "size"), total_us=("dur_us", "sum")).reset_index()
    total = table["total_us"].sum()
    table = table.assign(kind=kind, share=table["total_us"] / total if total > 0 else 0.0)
    table = table.sort_values(["total_us", "name"], ascending=[False, True], ignore_index=True).head(n)
    return table[["name", "kind", "count", "total_us", "share"]]


def memory_events(trace: Trace, device_type: int | None, start_us: float | None, end_us: float | None) -> pd.DataFrame:
    """The ``[memory]`` events with an allocator total in the window, of ``device_type`` (None: every device)."""
    if device_type is not None:
        integer_at_least("device_type", device_type, 0)
    ev = select_events(trace, start_us, end_us)
    mem = ev[(ev["kind"] == "memory") & ev["total_allocated_bytes"].notna()]
    return mem if device_type is None else mem[mem["device_type"] == device_type]


def memory_over_time(
    trace: Trace, device_type: int | None = None, *, start_us: float | None = None, end_us: float | None = None
) -> pd.DataFrame:
    """The allocator's running total from ``[memory]`` events: ``ts_us, total_allocated_bytes``.

    ``device_type``: 0 CPU, 1 CUDA, None every device (each device keeps its own total).
    """
    mem = memory_events(trace, device_type, start_us, end_us)
    return mem[["ts_us", "total_allocated_bytes"]].reset_index(drop=True)


def peak_memory_bytes(
    trace: Trace, device_type: int | None = None, *, start_us: float | None = None, end_us: float | None = None
) -> int | None:
    """Largest ``Total Allocated`` among ``[memory]`` events; None without any.

    ``device_type`` None: the CUDA (1) total when the trace has CUDA memory events, else every device's.
    """
    mem = memory_events(trace, device_type, start_us, end_us)
    if device_type is None and (mem["device_type"] == 1).any():
        mem = mem[mem["device_type"] == 1]
    return None if mem.empty else int(mem["total_allocated_bytes"].max())


def phases(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Host-side user annotations (``record_function`` labels), ProfilerStep#N excluded: ``name, count,
    total_us``, largest total first."""
    ev = select_events(trace, start_us, end_us)
    ann = ev[(ev["kind"] == "annotation") & (ev["cat"] != "gpu_user_annotation")]
    table = ann.groupby("name").agg(count=("dur_us", "size"), total_us=("dur_us", "sum")).reset_index()
    table = table.sort_values(["total_us", "name"], ascending=[False, True], ignore_index=True)
    return table.astype({"count": int, "total_us": float})


def annotations(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Each host-side user annotation (``record_function`` label; ProfilerStep#N excluded), in time order:
    ``name, start_us`` (from the trace's first event), ``duration_us, depth`` (0 for an outermost one; an
    annotation that starts and ends inside another on its thread is one deeper, so nested ones are not
    counted twice when read)."""
    ev = select_events(trace, start_us, end_us)
    origin = float(trace.events["ts_us"].min())
    ann = ev[(ev["kind"] == "annotation") & (ev["cat"] != "gpu_user_annotation")]
    ann = ann.sort_values(["ts_us", "dur_us"], ascending=[True, False], kind="stable")
    rows: list[tuple[str, float, float, int]] = []
    open_ends: dict[tuple[str, str], list[float]] = {}  # (pid, tid) -> ends of the annotations still open there
    for name, pid, tid, ts, dur in zip(ann["name"], ann["pid"], ann["tid"], ann["ts_us"], ann["dur_us"]):
        ends = [e for e in open_ends.get((pid, tid), []) if e >= ts + dur]
        rows.append((name, float(ts) - origin, float(dur), len(ends)))
        open_ends[(pid, tid)] = ends + [ts + dur]
    return pd.DataFrame(rows, columns=["name", "start_us", "duration_us", "depth"]).astype({"depth": int})


def steps(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """The ``ProfilerStep#N`` annotations (host side when present): ``step, start_us, duration_us``."""
    ev = select_events(trace, start_us, end_us)
    marks = ev[ev["kind"] == "step"]
    if (marks["cat"] != "gpu_user_annotation").any():
        marks = marks[marks["cat"] != "gpu_user_annotation"]
    table = pd.DataFrame(
        {
            "step": marks["name"].str.extract(r"#(\d+)", expand=False).astype(int),
            "start_us": marks["ts_us"],
            "duration_us": marks["dur_us"],
        }
    )
    return table.sort_values(["step", "start_us"], ignore_index=True)
