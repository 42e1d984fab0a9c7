"""Loading a trace: ``load_trace`` streams a Kineto / Chrome trace into a :class:`Trace` (see the package docstring).

The events are read a segment of about 1 MB at a time (:mod:`gpucost_lab.timeline.framing`), decoded by msgspec
into typed structs of the fields kept and gathered into numpy columns (:mod:`gpucost_lab.timeline.reader`); the
frame is built once, at the end. Why msgspec, on evidence: benchmarks/RESULTS.md, "Trace loading at scale".
"""

from __future__ import annotations

import gzip
import math
import os
import stat
import zlib
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path

import ijson
import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.timeline.devices import describe
from gpucost_lab.timeline.framing import MalformedTrace
from gpucost_lab.timeline.limits import MAX_EVENTS, MAX_TRACE_BYTES, TraceRefused, no_usable_events, too_large_trace
from gpucost_lab.timeline.reader import INTS, KINDS, MISSING, read_events

EVENT_COLUMNS = [
    "name",
    "kind",
    "cat",
    "pid",
    "tid",
    "lane",
    "ts_us",
    "dur_us",
    "stream",
    "correlation",
    "bytes",
    "total_allocated_bytes",
    "device_type",
    "input_dims",  # a cpu_op's input shapes as compact JSON ("[[128,256],[]]"), "" when not recorded
]
GPU_WORK = ["kernel", "memcpy", "memset"]
COPY_DIRECTIONS = ["HtoD", "DtoH", "DtoD", "HtoH", "PtoP"]
_MALFORMED = (ijson.JSONError, MalformedTrace, EOFError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError)


@dataclass(frozen=True, eq=False)
class Trace:
    """A loaded trace: ``events`` has :data:`EVENT_COLUMNS`, sorted by ``ts_us``; ``device`` is one of
    :data:`~gpucost_lab.timeline.devices.DEVICES` ("cuda", "rocm", "mtia", "cpu": named from the trace, see
    :mod:`gpucost_lab.timeline.devices`); ``skipped`` counts the events left out by reason (``{"dur negative": 2}``);
    ``device_name``, ``rank``, ``world_size`` and ``base_time_ns`` (``baseTimeNanoseconds``: the Unix time in ns
    the timestamps count from) are what the file says of itself (None when it does not)."""

    path: str
    events: pd.DataFrame = field(repr=False)
    device: str
    skipped: dict = field(default_factory=dict)
    device_name: str | None = None
    rank: int | None = None
    world_size: int | None = None
    base_time_ns: int | None = None

    @property
    def accelerated(self) -> bool:
        """Whether the trace holds an accelerator's work (a GPU's or an MTIA's), measured on the device."""
        return self.device != "cpu"

    def __repr__(self) -> str:
        rank = "" if self.rank is None else f", rank={self.rank}"
        return f"Trace(path={self.path!r}, device={self.device!r}{rank}, events={len(self.events)})"


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
def window_bounds(start_us: float | None, end_us: float | None) -> tuple[float, float]:
    """The window as (lo, hi) absolute microseconds, unbounded where None."""
    for name, value in (("start_us", start_us), ("end_us", end_us)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value)):
            raise InputError(name, f"{name} must be a finite number of microseconds (as ts_us) or None, got {value!r}")
    lo = -math.inf if start_us is None else float(start_us)
    hi = math.inf if end_us is None else float(end_us)
    if lo >= hi:
        raise InputError("end_us", f"end_us must be > start_us ({start_us!r}), got {end_us!r}")
    return lo, hi


class _Capped:
    """A binary file whose reads refuse (TraceRefused) more than ``limit`` bytes in all: a gzip file's output is
    counted as it is decompressed, so a small file cannot unpack into more JSON than the largest trace allowed."""

    def __init__(self, raw, path, limit: int, compressed: bool):
        self._raw, self._path, self._left, self._compressed = raw, path, limit, compressed
        self._limit = limit

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(min(size, self._left + 1) if size is not None and size >= 0 else self._left + 1)
        self._left -= len(data)
        if self._left < 0:
            raise too_large_trace(self._path, self._limit, self._compressed)
        return data

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open(path: Path, max_bytes: int | None = None):
    """The file, decompressed when it is gzip (by content, not by name), its output capped at ``max_bytes``. Opened
    without blocking and checked on the open file: a FIFO, a socket or a device (whose read may never end, or never
    start) is refused before a byte is read, as is a plain file over ``max_bytes`` (default
    :data:`~gpucost_lab.timeline.limits.MAX_TRACE_BYTES`, read when called)."""
    max_bytes = MAX_TRACE_BYTES if max_bytes is None else max_bytes
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise TraceRefused(
                f"{path}: not a regular file (a FIFO, a socket or a device, whose reading may never end); "
                f"allowed: a trace file (.json or .json.gz)"
            )
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    try:
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        if not gzipped and status.st_size > max_bytes:
            raise too_large_trace(path, max_bytes)
    except BaseException:
        f.close()
        raise
    return _Capped(gzip.GzipFile(fileobj=f, mode="rb") if gzipped else f, path, max_bytes, gzipped)


def _read_columns(
    path: Path, lo: float, hi: float, progress: bool = False, max_events: int = MAX_EVENTS
) -> tuple[dict, dict, tuple[float, float], dict, dict]:
    """The events overlapping [lo, hi] as numpy columns (:func:`~gpucost_lab.timeline.reader.read_events`)."""
    from tqdm.auto import tqdm

    with (
        tqdm(desc=f"reading {path.name}", unit=" events", unit_scale=True, disable=not progress) as bar,
        _open(path) as raw,
    ):
        return read_events(raw, path, lo, hi, max_events, bar)


def _frame(columns: dict, texts: dict) -> pd.DataFrame:
    """The events table, sorted (stably) by start; ``MISSING`` integers become <NA>. Empties ``columns``."""
    order = np.argsort(columns["ts"], kind="stable")
    texts = {**texts, "kind": list(KINDS)}
    data = {}
    for key in EVENT_COLUMNS:
        raw = columns.pop({"ts_us": "ts", "dur_us": "dur"}.get(key, key))[order]
        if key in texts:
            data[key] = pd.array(texts[key] or [""], dtype="str").take(raw)
        elif key in INTS:
            data[key] = pd.arrays.IntegerArray(raw, raw == MISSING)
        else:
            data[key] = raw
    return pd.DataFrame(data, copy=False)


def clip_events(events: pd.DataFrame, lo: float, hi: float) -> pd.DataFrame:
    """Events overlapping [lo, hi], their intervals cut to it."""
    if lo == -math.inf and hi == math.inf:
        return events
    end = events["ts_us"] + events["dur_us"]
    keep = (events["ts_us"] <= hi) & (end >= lo)
    out = events[keep].copy()
    out["ts_us"] = out["ts_us"].clip(lower=lo)
    out["dur_us"] = end[keep].clip(upper=hi) - out["ts_us"]
    return out


def no_events_in_window(path, start_us, end_us, span: tuple[float, float]) -> ValueError:
    return ValueError(
        f"{path}: no events in the window start_us={start_us}, end_us={end_us} "
        f"(the trace's events run from {span[0]:.3f} to {span[1]:.3f} us)"
    )


def load_trace(
    path,
    *,
    start_us: float | None = None,
    end_us: float | None = None,
    progress: bool = False,
    max_events: int = MAX_EVENTS,
) -> Trace:
    """Load a Kineto/Chrome trace (``.json`` or gzip, by content) into a :class:`Trace`.

    ``progress=True`` shows a progress bar (events read) in a terminal or notebook, for large traces.

    An event with an unusable ts, dur or integer arg is skipped and counted in ``Trace.skipped`` by reason.
    Raises ValueError naming the file for a missing file, a directory, a FIFO, socket or device, truncated or
    malformed JSON or gzip, JSON nested too deep, more than ``max_events`` events, more JSON than
    :data:`~gpucost_lab.timeline.limits.MAX_TRACE_BYTES` (decompressed), a string, a run of whitespace or an event over
    its limit, a trace without usable events, or a ``start_us``/``end_us`` window (absolute, as ``ts_us``) holding
    none. Limits and skip rules: :mod:`gpucost_lab.timeline.limits`.
    """
    path = Path(path)
    lo, hi = window_bounds(start_us, end_us)
    max_events = integer_at_least("max_events", max_events, 1)
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such trace file") from None
    except OSError as exc:  # a name longer than the file system allows, a folder that cannot be searched, ...
        raise ValueError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None
    if stat.S_ISDIR(status.st_mode):
        raise ValueError(f"{path}: is a directory, not a trace file (.json or .json.gz)")
    try:
        columns, texts, seen, skipped, outline = _read_columns(path, lo, hi, progress, max_events)
    except _MALFORMED as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"{path}: not a readable trace: truncated or malformed JSON or gzip ({detail})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None
    except TraceRefused:
        raise
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed trace event ({exc})") from None
    if not len(columns["ts"]):
        if seen[0] <= seen[1]:
            raise no_events_in_window(path, start_us, end_us, seen)
        if skipped:
            raise no_usable_events(path, skipped)
        raise ValueError(f"{path}: no trace events ('traceEvents' is missing or holds no complete events)")
    events = clip_events(_frame(columns, texts), lo, hi)
    about = describe(events, outline)
    return Trace(
        path=str(path),
        events=events,
        device=about.device,
        skipped=dict(sorted(skipped.items())),
        device_name=about.device_name,
        rank=about.rank,
        world_size=about.world_size,
        base_time_ns=about.base_time_ns,
    )


EXAMPLE_TRACES = (
    "a100_alexnet_train",
    "a100_cuda_event_sync",
    "sampled_rank0_gpu",
    "sampled_rank1_gpu",
    "mi250_rocm_minitoy_train",
    "mtia_inference_rank0",
    "cpu_only_small",
)
_EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "hta_traces"


def example_trace(name: str) -> Path:
    """The path of one of the course's real profiler traces (``EXAMPLE_TRACES``: A100 GPU traces, two ranks of one
    multi-GPU job, an AMD MI250 trace, a Meta MTIA trace and one CPU-only trace from HolisticTraceAnalysis's test
    data, MIT License; see ``gpucost_lab/data/hta_traces/README.md``)."""
    if name not in EXAMPLE_TRACES:
        raise InputError("name", f"name must be one of {', '.join(map(repr, EXAMPLE_TRACES))}, got {name!r}")
    return _EXAMPLES / f"{name}.json.gz"
