"""Load a Kineto / Chrome profiler trace and read its timeline (chapter 02: walk the timeline from wide gaps inward).

``load_trace`` streams the file's ``traceEvents`` with ijson (bounded memory: one event dict at a time, only the
needed fields kept in per-column arrays) into a :class:`Trace`, one row per complete event and per ``[memory]``
instant. Every analysis takes that trace (and optional absolute ``start_us``/``end_us``, in the file's clock, which
keep the events overlapping the window, clipped to it) and returns a DataFrame with explicit columns or a frozen
dataclass; :func:`analyze` gathers them into the plain dict behind the CLI's ``--json``.

Definitions:

- **busy / idle on a CUDA trace** (basis ``"gpu"``), as HolisticTraceAnalysis's temporal breakdown: busy is the
  union of kernel, memcpy and memset intervals over all streams; the span runs from the first one's start to the
  last one's end; idle = span - busy. When the trace holds two or more ``ProfilerStep#N``, GPU work launched (its
  correlated runtime call starts) after the last step began is left out, as HTA does by default (the last step
  may be cut short); ``include_last_step=True`` keeps it. Unlike HTA, ``cuda_sync`` events ("Stream Sync",
  "Stream Wait Event") are not busy: they mark a stream waiting, not working.
- **busy / idle on a CPU-only trace** (basis ``"main thread"``): the main thread is the (pid, tid) whose
  ``ProfilerStep#N`` and ``cpu_op`` events add up to the most time. Busy is the union of its ``cpu_op`` intervals;
  the span runs from the first start to the last end among its steps and cpu_ops, so time at the start or end of
  a step with no operator running (a data-loading sleep, say) is idle.
- **sync points**: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize calls and
  ``aten::item`` / ``aten::_local_scalar_dense`` on the host; ``cuda_sync`` events and device-to-host memcpys
  on the device. Host events that nest or overlap on one thread are one sync point, named by the outermost
  (earliest start, longest); a device event overlapping a host sync point belongs to it; device events left over
  are sync points of their own (overlapping ones on one stream merged). N ``.item()`` calls are N sync points.
"""
from __future__ import annotations

import gzip
import math
import zlib
from array import array
from collections import Counter
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path

import ijson
import numpy as np
import pandas as pd

from ._validate import integer_at_least, non_negative
from .trace_input import (MAX_EVENTS, DepthLimitedReader, TraceRefused, event_integers, event_times,
                          no_usable_events, too_many_events)

try:
    _IJSON = ijson.get_backend("yajl2_c")
except ImportError:  # pragma: no cover - the pure-Python backend is slower but equivalent
    _IJSON = ijson

EVENT_COLUMNS = ["name", "kind", "cat", "pid", "tid", "lane", "ts_us", "dur_us", "stream", "correlation", "bytes",
                 "total_allocated_bytes", "device_type"]
KINDS = ("kernel", "memcpy", "memset", "sync", "runtime", "cpu_op", "annotation", "step", "python", "memory", "other")
_KIND_BY_CAT = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
                "memset": "memset", "cuda_sync": "sync", "cuda_runtime": "runtime", "cuda_driver": "runtime",
                "runtime": "runtime", "cpu_op": "cpu_op", "operator": "cpu_op", "user_annotation": "annotation",
                "gpu_user_annotation": "annotation", "python_function": "python"}
_GPU_KINDS = frozenset({"kernel", "memcpy", "memset", "sync"})
_GPU_WORK = ["kernel", "memcpy", "memset"]
_HOST_SYNC = ["cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "aten::item",
              "aten::_local_scalar_dense"]
_DIRECTIONS = ["HtoD", "DtoH", "DtoD", "HtoH", "PtoP"]
_MISSING = -(2**63)  # int64 sentinel for "argument absent"; becomes <NA>
_TEXT = ["name", "kind", "cat", "pid", "tid", "lane"]
_INTS = ["stream", "correlation", "bytes", "total_allocated_bytes", "device_type"]
_MALFORMED = (ijson.JSONError, EOFError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError)


@dataclass(frozen=True, eq=False)
class Trace:
    """A loaded trace: ``events`` has :data:`EVENT_COLUMNS`, sorted by ``ts_us``; ``device`` is "cuda" or "cpu";
    ``skipped`` counts the events left out by reason (``{"dur negative": 2}``)."""

    path: str
    events: pd.DataFrame = field(repr=False)
    device: str
    skipped: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Trace(path={self.path!r}, device={self.device!r}, events={len(self.events)})"


@dataclass(frozen=True)
class BusyIdle:
    """Busy and idle time over a span (microseconds); ``basis`` is "gpu" or "main thread"."""

    span_us: float
    busy_us: float
    idle_us: float
    start_us: float
    end_us: float
    basis: str


# ----------------------------------------------------------------------------------------------- loading
def _window(start_us: float | None, end_us: float | None) -> tuple[float, float]:
    """The window as (lo, hi) absolute microseconds, unbounded where None."""
    for name, value in (("start_us", start_us), ("end_us", end_us)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number of microseconds (as ts_us) or None, got {value!r}")
    lo = -math.inf if start_us is None else float(start_us)
    hi = math.inf if end_us is None else float(end_us)
    if lo >= hi:
        raise ValueError(f"end_us must be > start_us ({start_us!r}), got {end_us!r}")
    return lo, hi


def _open(path: Path):
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    with opener(path, "rb") as f:  # Chrome's "JSON array" format is a bare list of events
        head = f.read(4096).lstrip()
    return opener(path, "rb"), ("item" if head[:1] == b"[" else "traceEvents.item")


_PROGRESS_EVERY = 65_536  # events between progress-bar updates: cheap next to parsing them


def _read_columns(path: Path, lo: float, hi: float, progress: bool = False,
                  max_events: int = MAX_EVENTS) -> tuple[dict, tuple[float, float], dict]:
    """Stream the events into per-column lists/arrays, keeping those that overlap [lo, hi]; count skipped ones."""
    from tqdm.auto import tqdm

    bar = tqdm(desc=f"reading {path.name}", unit=" events", unit_scale=True, disable=not progress)
    read = 0
    columns = {k: [] if k in _TEXT else array("d" if k in ("ts_us", "dur_us") else "q") for k in EVENT_COLUMNS}
    (add_name, add_kind, add_cat, add_pid, add_tid, add_lane, add_ts, add_dur, add_stream, add_correlation,
     add_bytes, add_total, add_device) = (columns[k].append for k in EVENT_COLUMNS)
    one = {}.setdefault  # one str object per distinct name, cat, pid, tid and lane
    seen_lo, seen_hi = math.inf, -math.inf
    skipped: Counter = Counter()
    f, prefix = _open(path)
    with DepthLimitedReader(f, path) as f:
        for ev in _IJSON.items(f, prefix, use_float=True):
            read += 1
            if read % _PROGRESS_EVERY == 0:
                bar.update(_PROGRESS_EVERY)
            if read > max_events:
                raise too_many_events(path, max_events)
            ph = ev.get("ph") if isinstance(ev, dict) else None
            if ph == "X":
                kind, times = "other", event_times(ev.get("ts"), ev.get("dur"))
            elif ph == "i" and ev.get("name") == "[memory]":
                kind, times = "memory", event_times(ev.get("ts"), 0.0)
            else:
                continue
            if times.__class__ is str:
                skipped[times] += 1
                continue
            t, d = times
            seen_lo, seen_hi = (t if t < seen_lo else seen_lo), (t + d if t + d > seen_hi else seen_hi)
            if t > hi or t + d < lo:
                continue
            args, cat, name = ev.get("args"), str(ev.get("cat") or ""), str(ev.get("name") or "")
            args = args if isinstance(args, dict) else {}
            if kind == "other":
                kind = _KIND_BY_CAT.get(cat.lower(), "other")
                if kind == "annotation" and name.startswith("ProfilerStep#"):
                    kind = "step"
            integers = event_integers(kind, args)
            if integers.__class__ is str:
                skipped[integers] += 1
                continue
            stream, correlation, nbytes, total, device = integers
            tid = str(ev.get("tid"))
            on_gpu = stream is not None and (kind in _GPU_KINDS or cat == "gpu_user_annotation")
            lane = f"stream {stream}" if on_gpu else f"thread {tid}"
            add_name(one(name, name))
            add_kind(kind)
            add_cat(one(cat, cat))
            add_pid(one(str(ev.get("pid")), str(ev.get("pid"))))
            add_tid(one(tid, tid))
            add_lane(one(lane, lane))
            add_ts(t)
            add_dur(d)
            add_stream(_MISSING if stream is None else stream)
            add_correlation(_MISSING if correlation is None else correlation)
            add_bytes(_MISSING if nbytes is None else nbytes)
            add_total(_MISSING if total is None else total)
            add_device(_MISSING if device is None else device)
    bar.update(read % _PROGRESS_EVERY)
    bar.close()
    return columns, (seen_lo, seen_hi), skipped


def _frame(columns: dict) -> pd.DataFrame:
    """The events table, sorted by start; ``_MISSING`` integers become <NA>."""
    data = {k: pd.array(columns[k], dtype="str") for k in _TEXT}
    data.update(ts_us=np.frombuffer(columns["ts_us"]), dur_us=np.frombuffer(columns["dur_us"]))
    for key in _INTS:
        raw = np.frombuffer(columns[key], dtype=np.int64)
        data[key] = pd.arrays.IntegerArray(raw, raw == _MISSING)
    return pd.DataFrame(data)[EVENT_COLUMNS].sort_values("ts_us", kind="stable", ignore_index=True)


def _clip(events: pd.DataFrame, lo: float, hi: float) -> pd.DataFrame:
    """Events overlapping [lo, hi], their intervals cut to it."""
    if lo == -math.inf and hi == math.inf:
        return events
    end = events["ts_us"] + events["dur_us"]
    keep = (events["ts_us"] <= hi) & (end >= lo)
    out = events[keep].copy()
    out["ts_us"] = out["ts_us"].clip(lower=lo)
    out["dur_us"] = end[keep].clip(upper=hi) - out["ts_us"]
    return out


def _no_events_in_window(path, start_us, end_us, span: tuple[float, float]) -> ValueError:
    return ValueError(f"{path}: no events in the window start_us={start_us}, end_us={end_us} "
                      f"(the trace's events run from {span[0]:.3f} to {span[1]:.3f} us)")


def load_trace(path, *, start_us: float | None = None, end_us: float | None = None, progress: bool = False,
               max_events: int = MAX_EVENTS) -> Trace:
    """Load a Kineto/Chrome trace (``.json`` or gzip, by content) into a :class:`Trace`.

    ``progress=True`` shows a progress bar (events read) in a terminal or notebook, for large traces.

    An event with an unusable ts, dur or integer arg is skipped and counted in ``Trace.skipped`` by reason.
    Raises ValueError naming the file for a missing file, a directory, truncated or malformed JSON or gzip, JSON
    nested too deep, more than ``max_events`` events, a trace without usable events, or a ``start_us``/``end_us``
    window (absolute, as ``ts_us``) holding none. Limits and skip rules: :mod:`gpucost_lab.trace_input`.
    """
    path = Path(path)
    lo, hi = _window(start_us, end_us)
    max_events = integer_at_least("max_events", max_events, 1)
    if not path.exists():
        raise ValueError(f"{path}: no such trace file")
    if path.is_dir():
        raise ValueError(f"{path}: is a directory, not a trace file (.json or .json.gz)")
    try:
        columns, seen, skipped = _read_columns(path, lo, hi, progress, max_events)
    except _MALFORMED as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"{path}: not a readable trace: truncated or malformed JSON or gzip ({detail})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None
    except TraceRefused:
        raise
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed trace event ({exc})") from None
    if not columns["name"]:
        if seen[0] <= seen[1]:
            raise _no_events_in_window(path, start_us, end_us, seen)
        if skipped:
            raise no_usable_events(path, skipped)
        raise ValueError(f"{path}: no trace events ('traceEvents' is missing or holds no complete events)")
    events = _clip(_frame(columns), lo, hi)
    device = "cuda" if events["kind"].isin(_GPU_WORK).any() else "cpu"
    return Trace(path=str(path), events=events, device=device, skipped=dict(sorted(skipped.items())))


def _select(trace: Trace, start_us: float | None, end_us: float | None) -> pd.DataFrame:
    """The trace's events, cut to the window when one is given (ValueError naming the file when it is empty)."""
    lo, hi = _window(start_us, end_us)
    events = _clip(trace.events, lo, hi)
    if events.empty:
        ev = trace.events
        span = (ev["ts_us"].min(), (ev["ts_us"] + ev["dur_us"]).max())
        raise _no_events_in_window(trace.path, start_us, end_us, span)
    return events


# ----------------------------------------------------------------------------------------------- busy and idle
def _main_thread(events: pd.DataFrame) -> tuple[str, str] | None:
    """The (pid, tid) holding the most ProfilerStep + cpu_op time (ties: the first in sort order)."""
    host = events[events["kind"].isin(["step", "cpu_op"]) & events["lane"].str.startswith("thread ")]
    if host.empty:
        return None
    return host.groupby(["pid", "tid"])["dur_us"].sum().idxmax()


def _launched_before_last_step(events: pd.DataFrame, work: pd.DataFrame) -> pd.DataFrame:
    """HTA's rule: with two or more ProfilerStep#N, drop GPU work launched after the last step began."""
    steps = events[(events["kind"] == "step") & (events["cat"] != "gpu_user_annotation")]
    if len(steps) < 2:
        return work
    runtime = events[(events["kind"] == "runtime") & events["correlation"].notna()]
    launch_us = runtime.drop_duplicates("correlation").set_index("correlation")["ts_us"]
    launched = work["correlation"].map(launch_us).astype(float).fillna(work["ts_us"])
    return work[launched < steps["ts_us"].max()]


def _busy_basis(trace: Trace, start_us, end_us, include_last_step: bool, required: bool = True):
    """(ops whose union is busy, span start, span end, basis name); None when nothing to measure and not required."""
    lo, hi = _window(start_us, end_us)
    ev = trace.events
    if trace.device == "cuda":
        ops = ev[ev["kind"].isin(_GPU_WORK)]
        ops = frame = ops if include_last_step else _launched_before_last_step(ev, ops)
        basis = "gpu"
    else:
        thread = _main_thread(ev)
        frame = ev.iloc[:0] if thread is None else ev[(ev["pid"] == thread[0]) & (ev["tid"] == thread[1])
                                                       & ev["kind"].isin(["step", "cpu_op"])]
        ops, basis = frame[frame["kind"] == "cpu_op"], "main thread"
    ops, frame = _clip(ops, lo, hi), _clip(frame, lo, hi)
    if not ops.empty:
        return ops, float(frame["ts_us"].min()), float((frame["ts_us"] + frame["dur_us"]).max()), basis
    if required:
        _select(trace, start_us, end_us)  # an empty window is named as such
        what = "kernel, memcpy or memset" if trace.device == "cuda" else "main-thread cpu_op"
        where = "" if start_us is None and end_us is None else f" in the window start_us={start_us}, end_us={end_us}"
        raise ValueError(f"{trace.path}: no {what} events{where} to measure busy time from")
    return None


def _runs(ops: pd.DataFrame):
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


def _measure(basis) -> tuple[BusyIdle, pd.DataFrame]:
    """BusyIdle and the gap table (unsorted) of one busy basis."""
    ops, span_start, span_end, name = basis
    run_start, run_end, starts_name, ends_name = _runs(ops)
    busy = float(np.sum(run_end - run_start))
    span = span_end - span_start
    edges = np.r_[span_start, run_end]
    table = pd.DataFrame({"start_us": edges, "duration_us": np.r_[run_start, span_end] - edges,
                          "before": pd.array([None, *ends_name], dtype=object),
                          "after": pd.array([*starts_name, None], dtype=object)})
    return BusyIdle(span_us=span, busy_us=busy, idle_us=span - busy, start_us=span_start, end_us=span_end,
                    basis=name), table[table["duration_us"] > 0]


def _widest(table: pd.DataFrame, top: int | None, min_us: float = 0) -> pd.DataFrame:
    table = table[table["duration_us"] >= min_us]
    table = table.sort_values(["duration_us", "start_us"], ascending=[False, True], ignore_index=True)
    return table if top is None else table.head(top)


def busy_idle(trace: Trace, *, start_us: float | None = None, end_us: float | None = None,
              include_last_step: bool = False) -> BusyIdle:
    """Busy and idle time of the GPU (CUDA trace) or of the main thread (CPU-only trace); see the module doc."""
    return _measure(_busy_basis(trace, start_us, end_us, include_last_step))[0]


def gaps(trace: Trace, top: int | None = None, min_us: float = 0, *, start_us: float | None = None,
         end_us: float | None = None, include_last_step: bool = False) -> pd.DataFrame:
    """Idle intervals of the busy basis, widest first: ``start_us, duration_us, before, after``.

    ``before`` / ``after`` name the operation ending just before / starting just after the gap (None at the edge
    of a CPU span, where a step starts or ends with no operator running).
    """
    if top is not None:
        integer_at_least("top", top, 1)
    non_negative("min_us", min_us)
    return _widest(_measure(_busy_basis(trace, start_us, end_us, include_last_step))[1], top, min_us)


# ----------------------------------------------------------------------------------------------- other views
def _merge_nested(events: pd.DataFrame) -> pd.DataFrame:
    """One row per group of nested/overlapping events on one (pid, lane), named by the outermost."""
    ev = events.assign(end_us=events["ts_us"] + events["dur_us"])
    ev = ev.sort_values(["pid", "lane", "ts_us", "end_us"], ascending=[True, True, True, False])
    keys = [ev["pid"], ev["lane"]]
    reach_before = ev.groupby(keys)["end_us"].cummax().groupby(keys).shift()
    group = (reach_before.isna() | (ev["ts_us"] > reach_before)).cumsum()
    out = ev.groupby(group).agg(name=("name", "first"), ts_us=("ts_us", "first"), end_us=("end_us", "max"),
                                lane=("lane", "first"))
    return out.assign(duration_us=out["end_us"] - out["ts_us"])[["name", "ts_us", "duration_us", "lane"]]


def sync_points(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Host/device synchronizations, in time order: ``name, ts_us, duration_us, lane`` (merging: module doc)."""
    ev = _select(trace, start_us, end_us)
    host = _merge_nested(ev[ev["kind"].isin(["runtime", "cpu_op"]) & ev["name"].isin(_HOST_SYNC)])
    device = ev[(ev["kind"] == "sync") | ((ev["kind"] == "memcpy") & ev["name"].str.contains("DtoH"))]
    if len(host) and len(device):
        host = host.sort_values("ts_us")
        reach = np.maximum.accumulate((host["ts_us"] + host["duration_us"]).to_numpy(float))
        idx = np.searchsorted(host["ts_us"].to_numpy(float), (device["ts_us"] + device["dur_us"]).to_numpy(float),
                              side="right") - 1
        overlaps = (idx >= 0) & (reach[np.maximum(idx, 0)] >= device["ts_us"].to_numpy(float))
        device = device[~overlaps]
    points = pd.concat([p for p in (host, _merge_nested(device)) if len(p)] or [host])
    return points.sort_values("ts_us", kind="stable", ignore_index=True)


def memcpy_summary(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Copies by direction (HtoD, DtoH, DtoD, HtoH, PtoP, other) plus a "memset" row:
    ``direction, count, total_us, total_bytes``; only directions present."""
    ev = _select(trace, start_us, end_us)
    copies = ev[ev["kind"].isin(["memcpy", "memset"])]
    direction = copies["name"].str.extract(r"Memcpy\s+(\w+)", expand=False).astype(object)
    direction = direction.where(direction.isin(_DIRECTIONS), "other").where(copies["kind"] == "memcpy", "memset")
    table = copies.groupby(direction.rename("direction")).agg(
        count=("dur_us", "size"), total_us=("dur_us", "sum"), total_bytes=("bytes", lambda b: b.sum(min_count=1)))
    order = {d: i for i, d in enumerate([*_DIRECTIONS, "other", "memset"])}
    table = table.reset_index().sort_values("direction", key=lambda d: d.map(order), ignore_index=True)
    return table.astype({"direction": object, "count": int, "total_us": float, "total_bytes": "Int64"})


def top_ops(trace: Trace, n: int = 10, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Kernels (CUDA trace) or cpu_ops (CPU trace) by total time: ``name, kind, count, total_us, share``.

    ``share`` is total_us over the sum for all of that kind (a cpu_op's time includes the ops it calls).
    """
    integer_at_least("n", n, 1)
    kind = "kernel" if trace.device == "cuda" else "cpu_op"
    ev = _select(trace, start_us, end_us)
    ops = ev[ev["kind"] == kind]
    table = ops.groupby("name").agg(count=("dur_us", "size"), total_us=("dur_us", "sum")).reset_index()
    total = table["total_us"].sum()
    table = table.assign(kind=kind, share=table["total_us"] / total if total > 0 else 0.0)
    table = table.sort_values(["total_us", "name"], ascending=[False, True], ignore_index=True).head(n)
    return table[["name", "kind", "count", "total_us", "share"]]


def _memory(trace: Trace, device_type: int | None, start_us, end_us) -> pd.DataFrame:
    if device_type is not None:
        integer_at_least("device_type", device_type, 0)
    ev = _select(trace, start_us, end_us)
    mem = ev[(ev["kind"] == "memory") & ev["total_allocated_bytes"].notna()]
    return mem if device_type is None else mem[mem["device_type"] == device_type]


def memory_over_time(trace: Trace, device_type: int | None = None, *, start_us: float | None = None,
                     end_us: float | None = None) -> pd.DataFrame:
    """The allocator's running total from ``[memory]`` events: ``ts_us, total_allocated_bytes``.

    ``device_type``: 0 CPU, 1 CUDA, None every device (each device keeps its own total).
    """
    mem = _memory(trace, device_type, start_us, end_us)
    return mem[["ts_us", "total_allocated_bytes"]].reset_index(drop=True)


def peak_memory_bytes(trace: Trace, device_type: int | None = None, *, start_us: float | None = None,
                      end_us: float | None = None) -> int | None:
    """Largest ``Total Allocated`` among ``[memory]`` events; None without any.

    ``device_type`` None: the CUDA (1) total when the trace has CUDA memory events, else every device's.
    """
    mem = _memory(trace, device_type, start_us, end_us)
    if device_type is None and (mem["device_type"] == 1).any():
        mem = mem[mem["device_type"] == 1]
    return None if mem.empty else int(mem["total_allocated_bytes"].max())


def phases(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """Host-side user annotations (``record_function`` labels), ProfilerStep#N excluded: ``name, count,
    total_us``, largest total first."""
    ev = _select(trace, start_us, end_us)
    ann = ev[(ev["kind"] == "annotation") & (ev["cat"] != "gpu_user_annotation")]
    table = ann.groupby("name").agg(count=("dur_us", "size"), total_us=("dur_us", "sum")).reset_index()
    table = table.sort_values(["total_us", "name"], ascending=[False, True], ignore_index=True)
    return table.astype({"count": int, "total_us": float})


def steps(trace: Trace, *, start_us: float | None = None, end_us: float | None = None) -> pd.DataFrame:
    """The ``ProfilerStep#N`` annotations (host side when present): ``step, start_us, duration_us``."""
    ev = _select(trace, start_us, end_us)
    marks = ev[ev["kind"] == "step"]
    if (marks["cat"] != "gpu_user_annotation").any():
        marks = marks[marks["cat"] != "gpu_user_annotation"]
    table = pd.DataFrame({"step": marks["name"].str.extract(r"#(\d+)", expand=False).astype(int),
                          "start_us": marks["ts_us"], "duration_us": marks["dur_us"]})
    return table.sort_values(["step", "start_us"], ignore_index=True)


# ----------------------------------------------------------------------------------------------- summary
def _plain(value):
    """A JSON-ready Python value: no numpy scalars; NaN and NA become None."""
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return None if value is pd.NA else value


def _ms_records(table: pd.DataFrame, origin_us: float, relative: str = "") -> list[dict]:
    """Rows as plain dicts, each ``*_us`` column as ``*_ms`` (the ``relative`` one measured from ``origin_us``)."""
    return [{(k[:-3] + "_ms" if k.endswith("_us") else k):
             _plain((v - origin_us if k == relative else v) / 1e3 if k.endswith("_us") else v)
             for k, v in row.items()} for row in table.to_dict("records")]


GAP_FLOOR_US = 1.0  # analyze() lists gaps of at least the trace clock's 1 us resolution


def analyze(path_or_trace, top: int = 10, *, start_us: float | None = None, end_us: float | None = None) -> dict:
    """Every view at once, as plain JSON-ready values in milliseconds, times relative to the trace's first event.

    Keys: device, span_ms, busy_ms, idle_ms, gaps, sync_points, memcpy, top_ops, peak_memory_bytes, phases, steps,
    skipped_events (``Trace.skipped``: the events left out, by reason).
    With nothing to measure busy time from (no kernels; no cpu_ops), span/busy/idle are None and gaps empty.
    Gaps shorter than ``GAP_FLOOR_US`` are left out of the list (they still count as idle time).
    """
    integer_at_least("top", top, 1)
    trace = path_or_trace if isinstance(path_or_trace, Trace) else load_trace(path_or_trace)
    window = {"start_us": start_us, "end_us": end_us}
    _select(trace, start_us, end_us)  # an empty window fails here, naming the file
    origin_us = float(trace.events["ts_us"].min())
    result = {"device": trace.device, "span_ms": None, "busy_ms": None, "idle_ms": None, "gaps": []}
    basis = _busy_basis(trace, start_us, end_us, include_last_step=False, required=False)
    if basis is not None:
        b, table = _measure(basis)
        result.update(span_ms=b.span_us / 1e3, busy_ms=b.busy_us / 1e3, idle_ms=b.idle_us / 1e3,
                      gaps=_ms_records(_widest(table, top, min_us=GAP_FLOOR_US), origin_us, relative="start_us"))
    points = sync_points(trace, **window)[["name", "ts_us", "duration_us"]]
    result.update(
        sync_points=_ms_records(points, origin_us, relative="ts_us"),
        memcpy=_ms_records(memcpy_summary(trace, **window), origin_us),
        top_ops=_ms_records(top_ops(trace, top, **window), origin_us),
        peak_memory_bytes=_plain(peak_memory_bytes(trace, **window)),
        phases={p["name"]: p["total_ms"] for p in _ms_records(phases(trace, **window), origin_us)},
        steps=len(steps(trace, **window)), skipped_events=dict(trace.skipped))
    return result


COMPARE_COLUMNS = ["span_ms", "busy_ms", "idle_ms", "busy_share", "widest_gap_ms", "gaps_over_1ms", "sync_points",
                   "steps"]


def compare(traces: dict) -> pd.DataFrame:
    """One row per named trace: the figures to hold side by side after changing one suspected cause."""
    rows = {}
    for label, trace in traces.items():
        b = busy_idle(trace)
        g = gaps(trace, min_us=GAP_FLOOR_US)
        rows[label] = [b.span_us / 1e3, b.busy_us / 1e3, b.idle_us / 1e3, b.busy_us / b.span_us if b.span_us else 0.0,
                       float(g["duration_us"].max()) / 1e3 if len(g) else 0.0, int((g["duration_us"] >= 1e3).sum()),
                       len(sync_points(trace)), len(steps(trace))]
    return pd.DataFrame.from_dict(rows, orient="index", columns=COMPARE_COLUMNS)
