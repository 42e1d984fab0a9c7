"""Checks on a trace file's content, made while :func:`gpucost_lab.timeline.load_trace` streams it.

- **Nesting depth**: a parser keeps state per open level (ijson one prefix string per level, each as long as the
  path to it, so its memory grows with the square of the depth; benchmarks/RESULTS.md, "Bad input at full size").
  The nesting (brackets outside strings) of every byte is counted *before* any parser sees it, and the file is
  refused beyond :data:`MAX_DEPTH` levels: by :func:`segment_depths` for the segments of events the loader cuts
  (:mod:`gpucost_lab.timeline.framing`), by :func:`structure` for the rest of the document and by
  :class:`DepthLimitedReader` for a file read whole.
- **Event count**: at most :data:`MAX_EVENTS` entries in ``traceEvents`` (``load_trace(max_events=...)`` changes it).
- **Sizes**: at most :data:`MAX_TRACE_BYTES` of JSON (a gzip file's counted as it is decompressed, so a small file
  cannot unpack into more), no string and no number longer than :data:`MAX_STRING_BYTES`, no run of whitespace between
  events longer than :data:`MAX_WHITESPACE_BYTES` and no event longer than :data:`MAX_EVENT_BYTES`, each checked as
  the bytes arrive (:mod:`gpucost_lab.timeline.framing`): beyond the columns of the events it keeps, the loader holds
  one pending event and a block of about 1 MB with its scan, whatever the input. The file must be a regular file:
  a FIFO, a socket or a device is refused before a byte is read.
- **Event fields**: :func:`event_times` and :func:`event_integers` give an event's numbers, or the reason it is
  skipped (see :data:`SKIP_RULES`); ``load_trace`` counts the skipped events by reason in ``Trace.skipped``.
"""

from __future__ import annotations

import math
import re

import numpy as np

# A Kineto trace nests 6 or 7 levels (document, traceEvents, event, args, "Input Dims", a tensor list, a shape);
# 64 leaves room for any profiler's extras while the parser's prefixes stay a few kilobytes.
MAX_DEPTH = 64
# A loaded event costs about 130 bytes at peak and 265 bytes of JSON (benchmarks/RESULTS.md, "Trace loading": 10
# million events, a 2.7 GB trace, load in 1.3 GB and about 20 s); a few profiled steps of a large model hold well
# under a million.
MAX_EVENTS = 10_000_000
# The JSON read, decompressed: 10M events of 265-400 bytes (the simulator's and real Kineto events with their args).
# A larger plain file is refused before it is read, a gzip file when its output passes it (a "bomb" of 1,000:1 stops
# there, after about 30 s), so no file takes longer to refuse than the largest one allowed takes to load.
MAX_TRACE_BYTES = 4 * 10**9
# One string (an event's name, category or an argument; outside the events too) or number: the longest kernel names
# of real traces (CUTLASS templates) are a few KB, so 2 MiB is hundreds of times that. A run of whitespace between
# events: pretty-printed traces have a few bytes. One event with its args: a Kineto event takes 200-2,000 bytes
# (record_shapes of a cat of thousands of tensors some 100 KB). A 150 MB name took 2 GB and failed in numpy; a
# 256 MB gap of whitespace the same.
MAX_STRING_BYTES = 2 * 2**20
MAX_WHITESPACE_BYTES = 2 * 2**20
MAX_EVENT_BYTES = 8 * 2**20

SKIP_RULES = (
    "ts and dur must be finite numbers >= 0 (a complete 'X' event needs dur), ts + dur finite; "
    'args stream (or a string of its digits, as ROCm writes "0x0"), correlation, bytes, Bytes, Total Allocated '
    "and Device Type integers"
)

_NOT_SYNTAX = bytes(b for b in range(256) if b not in b'"[]{}')  # all but what strings and nesting are made of
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_STEP = np.zeros(256, dtype=np.int8)
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1
_INT64 = 2**63  # integer args must lie in (-2**63, 2**63): -2**63 marks an absent one


class TraceRefused(ValueError):
    """A trace beyond a limit of this module (the message names the file, the limit and what is allowed)."""


class DepthLimitedReader:
    """A binary file wrapper whose ``read`` refuses (:class:`TraceRefused`) data nested deeper than ``max_depth``.

    Brackets inside strings do not count; strings and escapes are followed across chunks; numpy does the counting.
    """

    def __init__(self, raw, path, max_depth: int = MAX_DEPTH):
        self._raw, self._path, self._max = raw, path, max_depth
        self._depth, self._in_string, self._escaped = 0, False, False

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        if data:
            self._scan(data)
        return data

    def _scan(self, data: bytes) -> None:
        if self._escaped or b"\\" in data:  # every byte counts to tell where a run of backslashes ends
            state = structure(data, self._path, self._depth, self._in_string, self._escaped, self._max)[2]
            self._depth, self._in_string, self._escaped = state
            return
        a = np.frombuffer(data.translate(None, _NOT_SYNTAX), dtype=np.uint8)  # only quotes and brackets
        if not len(a):
            return
        inside = np.bitwise_xor.accumulate((a == _QUOTE).view(np.uint8)).view(bool) ^ self._in_string
        step = _STEP[a]
        step[inside] = 0
        depth = self._depth + np.cumsum(step, dtype=np.int64)
        if depth.max() > self._max:
            raise too_deep(self._path, self._max)
        self._depth, self._in_string = int(depth[-1]), bool(inside[-1])

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def too_deep(path, max_depth: int = MAX_DEPTH) -> TraceRefused:
    return TraceRefused(
        f"{path}: JSON nested more than {max_depth} levels deep; allowed: at most {max_depth} levels "
        f"of arrays and objects inside one another"
    )


def _unescaped_quotes(a: np.ndarray, escaped: bool) -> tuple[np.ndarray, bool]:
    """Where the bytes ``a`` hold a quote not escaped by an odd run of backslashes (``escaped``: the first byte is
    escaped), and whether the byte after ``a`` is escaped."""
    backslash, quote = a == _BACKSLASH, a == _QUOTE
    if escaped:  # the first byte is escaped: it neither ends a string nor escapes the next one
        backslash[0] = quote[0] = False
    index = np.arange(len(a))
    last_other = np.maximum.accumulate(np.where(backslash, -1, index))  # the last byte so far not a backslash
    quote[1:] &= (index[:-1] - last_other[:-1]) % 2 == 0
    return quote, bool((len(a) - 1 - last_other[-1]) % 2)


def structure(
    data: bytes, path, depth: int = 0, in_string: bool = False, escaped: bool = False, max_depth: int = MAX_DEPTH
) -> tuple[np.ndarray, np.ndarray, tuple[int, bool, bool]]:
    """Per byte of ``data``, read from the state ``depth, in_string, escaped``: the nesting depth after it and
    whether it lies inside a string (a string's quotes count as inside), and the state after ``data``. Raises
    :class:`TraceRefused` (naming ``path``) where the depth passes ``max_depth``. Numpy, every byte: for the few
    bytes outside the trace's events and the rare segments :func:`segment_depths` cannot judge."""
    a = np.frombuffer(data, dtype=np.uint8)
    if not len(a):
        return np.zeros(0, np.int64), np.zeros(0, bool), (depth, in_string, escaped)
    quote, escaped = _unescaped_quotes(a, escaped) if escaped or b"\\" in data else (a == _QUOTE, False)
    inside = np.bitwise_xor.accumulate(quote.view(np.uint8)).view(bool) ^ in_string
    step = _STEP[a]
    step[inside] = 0
    depths = depth + np.cumsum(step, dtype=np.int64)
    if depths.max() > max_depth:
        raise too_deep(path, max_depth)
    return depths, inside, (int(depths[-1]), bool(inside[-1]), escaped)


def segment_depths(data: bytes) -> tuple[int, int, int, bool]:
    """``(deepest, shallowest before the last bracket, last, in a string at the end)``: the nesting depths after the
    brackets in ``data`` that lie outside strings, relative to its start, which lies outside any string. Exact, and
    cheaper than :func:`structure`: escapes are dropped (``\\\\`` pairs, then ``\\"``), then all
    but quotes and brackets, and a bracket is inside a string when an odd number of quotes precede it."""
    if b"\\" in data:  # a run of backslashes starts in a string at an escape: pairs first, then escaped quotes
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    a = np.frombuffer(data.translate(None, _NOT_SYNTAX), dtype=np.uint8)
    brackets = np.flatnonzero(a != _QUOTE)
    outside = ((brackets - np.arange(len(brackets))) & 1) == 0
    depths = np.cumsum(_STEP[a[brackets[outside]]], dtype=np.int32)
    in_string = bool((len(a) - len(brackets)) & 1)
    if len(depths) < 2:
        return (int(depths[0]),) * 3 + (in_string,) if len(depths) else (0, 0, 0, in_string)
    return int(depths.max()), int(depths[:-1].min()), int(depths[-1]), in_string


def too_large_trace(path, limit: int = MAX_TRACE_BYTES, compressed: bool = False) -> TraceRefused:
    what = "decompresses to more than" if compressed else "holds more than"
    return TraceRefused(
        f"{path}: the trace {what} {limit:,} bytes of JSON; allowed: at most {limit:,} (about 10,000,000 events): "
        f"profile fewer steps"
    )


# What each length limit measures, and why a real trace stays far below it (for the refusal's line).
LIMITS = {
    "a string": "a string (an event's name, category or argument)|the longest kernel names are a few KB",
    "a number or literal": "a number or literal|a trace's numbers have at most a few dozen digits",
    "whitespace": "whitespace between trace events|a pretty-printed trace has a few bytes there",
    "a trace event": "a trace event with the whitespace around it|a Kineto event takes at most a few KB",
}


def too_long(path, what: str, limit: int) -> TraceRefused:
    """``what`` (a key of :data:`LIMITS`) longer than ``limit`` bytes."""
    said, why = LIMITS[what].split("|")
    return TraceRefused(f"{path}: {said} of more than {limit:,} bytes; allowed: at most {limit:,} ({why})")


def check_runs(mask: np.ndarray, carry: int, limit: int, path, what: str) -> int:
    """The length of the run of True at the end of ``mask`` (plus ``carry``, the run's length before ``mask`` when
    it starts with True); :class:`TraceRefused` (``what`` longer than ``limit``) when a run passes ``limit``."""
    if not mask.any():
        return 0
    edges = np.diff(np.concatenate(([False], mask, [False])).view(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    lengths = ends - starts
    if mask[0]:
        lengths[0] += carry
    if lengths.max() > limit:
        raise too_long(path, what, limit)
    return int(lengths[-1]) if mask[-1] else 0


def too_many_events(path, limit: int) -> TraceRefused:
    return TraceRefused(
        f"{path}: traceEvents must hold at most {limit:,} events (max_events), got at least "
        f"{limit + 1:,}; profile fewer steps or load the trace with a larger max_events"
    )


_NUMBER = (int, float)  # ijson gives int or float; bool and str are not numbers here
_INF = math.inf


def _problem(value) -> str | None:
    if value is None:
        return "missing"
    if value.__class__ not in _NUMBER:
        return "not a number"
    try:
        x = float(value)
    except OverflowError:  # an integer beyond the float range
        return "not finite"
    if not math.isfinite(x):
        return "not finite"
    return "negative" if x < 0 else None


def event_times(ts, dur) -> tuple[float, float] | str:
    """``(ts, dur)`` as floats, or why the event is skipped: "ts missing", "dur negative", "ts + dur not finite", ...

    ``dur`` is the event's duration (pass 0.0 for an instant event, which has none).
    """
    if ts.__class__ in _NUMBER and dur.__class__ in _NUMBER:
        try:
            t, d = float(ts), float(dur)
        except OverflowError:
            pass
        else:
            if 0.0 <= t and 0.0 <= d and t + d < _INF:
                return t, d
    for name, value in (("ts", ts), ("dur", dur)):
        problem = _problem(value)
        if problem:
            return f"{name} {problem}"
    return "ts + dur not finite"


_SIZED = frozenset({"memory", "memcpy", "memset"})  # the kinds with a byte count


class _Skip(Exception):
    """An unusable integer arg; the message is the reason the event is counted under."""


_INTEGER_TEXT = re.compile(r"0[xX][0-9a-fA-F]{1,16}|-?[0-9]{1,19}")


def stream_from_text(value: str) -> int | None:
    """A stream written as a string (ROCm's runtime calls record ``"stream": "0x0"``): its integer, hexadecimal
    after ``0x``, when it fits int64; None for any other string."""
    if not _INTEGER_TEXT.fullmatch(value):
        return None
    number = int(value, 16 if value[1:2] in ("x", "X") else 10)
    return number if -_INT64 < number < _INT64 else None


def _integer(args: dict, key: str) -> int | None:
    value = args.get(key)
    if value is None or (value.__class__ is int and -_INT64 < value < _INT64):
        return value
    if value.__class__ is float and value.is_integer() and -_INT64 < value < _INT64:
        return int(value)
    if key == "stream" and isinstance(value, str) and (number := stream_from_text(value)) is not None:
        return number
    raise _Skip(f"args.{key} not an integer")


def event_integers(kind: str, args: dict) -> tuple[int | None, int | None, int | None, int | None, int | None] | str:
    """``(stream, correlation, bytes, total allocated, device type)`` of an event of ``kind`` (None where absent or
    not read for that kind), or why the event is skipped ("args.stream not an integer", ...)."""
    stream, correlation = args.get("stream"), args.get("correlation")
    if (
        kind not in _SIZED
        and (stream is None or (stream.__class__ is int and -_INT64 < stream < _INT64))
        and (correlation is None or (correlation.__class__ is int and -_INT64 < correlation < _INT64))
    ):
        return stream, correlation, None, None, None  # the common case, without a call per field
    try:
        stream, correlation = _integer(args, "stream"), _integer(args, "correlation")
        if kind == "memory":
            return (
                stream,
                correlation,
                _integer(args, "Bytes"),
                _integer(args, "Total Allocated"),
                _integer(args, "Device Type"),
            )
        return stream, correlation, _integer(args, "bytes") if kind in _SIZED else None, None, None
    except _Skip as reason:
        return str(reason)


def describe_skipped(skipped: dict) -> str:
    """``"3 events (dur missing: 1, dur negative: 2)"``."""
    return f"{sum(skipped.values())} events (" + ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) + ")"


def no_usable_events(path, skipped: dict) -> ValueError:
    return ValueError(f"{path}: no usable trace events: skipped {describe_skipped(skipped)}; allowed: {SKIP_RULES}")
