"""Loading a trace: ``load_trace`` streams a Kineto / Chrome trace into a :class:`Trace` (see the package docstring)."""
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

from .._validate import integer_at_least
from ..trace_input import (MAX_EVENTS, DepthLimitedReader, TraceRefused, event_integers, event_times,
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


EXAMPLE_TRACES = ("a100_alexnet_train", "a100_cuda_event_sync", "sampled_rank0_gpu", "cpu_only_small")
_EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "hta_traces"


def example_trace(name: str) -> Path:
    """The path of one of the course's real profiler traces (``EXAMPLE_TRACES``: A100 GPU traces and one CPU-only
    trace from HolisticTraceAnalysis's test data, MIT License; see ``gpucost_lab/data/hta_traces/README.md``)."""
    if name not in EXAMPLE_TRACES:
        raise ValueError(f"name must be one of {', '.join(map(repr, EXAMPLE_TRACES))}, got {name!r}")
    return _EXAMPLES / f"{name}.json.gz"
