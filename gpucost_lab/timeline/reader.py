"""Reading a trace's events fast, in memory bounded by the columns kept: :func:`read_events`.

:func:`~gpucost_lab.timeline.framing.segments` cuts the ``traceEvents`` array into segments of whole events (about
1 MB each, depth-checked). msgspec decodes each segment into a list of typed :class:`_Event` structs holding only
the fields a :class:`~gpucost_lab.timeline.load.Trace` keeps (other fields are skipped without building
objects), and :func:`_fast_columns` turns them into numpy columns: an event's ``(ph, name, cat, pid, tid,
stream)`` is one of few *sorts* (names times threads), each worked out once (kept or not, kind, text codes, lane),
so per event only a lookup and its numbers remain. A segment msgspec refuses (an event that is not an object, a ts
written as a string, an integer arg written 7.0, a phase outside the Trace Event Format's, ...) or whose integers
do not fit int64 is read again by ijson an event at a time (:func:`_exact_columns`), with the rules of
:mod:`gpucost_lab.timeline.limits`: both paths give the same rows and the same skip counts.

Why msgspec: typed structs of only the needed fields skip the others without building objects, where the other
decoders build a dict of every field, and orjson and the stdlib decode only a whole document (no streaming), so
they hold every event at once (figures: benchmarks/RESULTS.md, "Trace loading at scale"). One difference from
ijson: a number beyond the float range, or an integer beyond 64 bits, in a field that is not read no longer makes
the file unreadable (msgspec skips it unread; JSON allows it). Invalid UTF-8 anywhere still does.
"""

from __future__ import annotations

import json
import math
from array import array
from collections import Counter
from collections.abc import Callable
from io import BytesIO
from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec
import numpy as np

from gpucost_lab.timeline.framing import IJSON_BACKEND, Outline, segments
from gpucost_lab.timeline.limits import event_integers, event_times, stream_from_text, too_many_events

KINDS = ("kernel", "memcpy", "memset", "sync", "runtime", "cpu_op", "annotation", "step", "python", "memory", "other")
_KIND_BY_CAT = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_sync": "sync",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "runtime": "runtime",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "annotation",
    "gpu_user_annotation": "annotation",
    "python_function": "python",
    "mtia_ccp_events": "kernel",  # a Meta MTIA's device events (HTA counts the category as its GPU kernels)
    "mtia_runtime": "runtime",
}
_WAITS = frozenset({"event_wait"})  # device events, by name, that mark a stream waiting (as cuda_sync events do)
_K = {k: i for i, k in enumerate(KINDS)}
_GPU_KINDS = frozenset({"kernel", "memcpy", "memset", "sync"})
MISSING = -(2**63)  # int64 sentinel for "argument absent"; becomes <NA>
INTS = ("stream", "correlation", "bytes", "total_allocated_bytes", "device_type")
TEXTS = ("name", "cat", "pid", "tid", "lane")
# per event, not per sort: an operator's input shapes (``args["Input Dims"]``, recorded with record_shapes=True) as
# compact JSON, "" without them; at most MAX_DIMS_CHARS characters, longer ones cut and ended with "..."
INPUT_DIMS = "input_dims"
MAX_DIMS_CHARS = 2000
COLUMNS = ("ts", "dur", "kind", *INTS, *TEXTS, INPUT_DIMS)


# ----------------------------------------------------------------------------------------------- fast path
_Int = Annotated[int, msgspec.Meta(ge=MISSING + 1, le=-MISSING - 1)]  # int64 but the sentinel (the default)


class _Args(msgspec.Struct, gc=False, frozen=True):
    stream: _Int | str | None = MISSING  # a string: ROCm's runtime calls write "0x0" (limits.stream_from_text)
    correlation: _Int | None = MISSING
    bytes: _Int | None = MISSING
    Bytes: _Int | None = MISSING
    total: _Int | None = msgspec.field(default=MISSING, name="Total Allocated")
    device: _Int | None = msgspec.field(default=MISSING, name="Device Type")
    dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input Dims")


_NO_ARGS = _Args()
# Every phase of the Trace Event Format: decoded as shared objects, which is cheaper than a new str per event.
_Phase = Literal[
    "B",
    "E",
    "X",
    "i",
    "I",
    "C",
    "b",
    "n",
    "e",
    "S",
    "T",
    "p",
    "F",
    "s",
    "t",
    "f",
    "P",
    "N",
    "O",
    "D",
    "M",
    "V",
    "v",
    "R",
    "c",
    "(",
    ")",
]


class _Event(msgspec.Struct, gc=False):
    ph: _Phase | None = None
    name: str | None = None
    cat: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = math.nan  # NaN: absent (JSON has no NaN)
    dur: float | None = math.nan
    args: _Args = _NO_ARGS  # shared: events without args (flows, ...) make no object of their own


_DECODE = msgspec.json.Decoder(list[_Event]).decode
_SORT = attrgetter("ph", "name", "cat", "pid", "tid", "args.stream")
_TS, _DUR, _CORRELATION = attrgetter("ts"), attrgetter("dur"), attrgetter("args.correlation")


class _Codes(dict):
    """Raw value -> code, each code's text in ``texts`` (``text(raw)``), grown as values come."""

    def __init__(self, text: Callable[[Any], str] = str):
        super().__init__()
        self.texts: list[str] = []
        self._text = text

    def __missing__(self, raw):
        code = self[raw] = len(self.texts)
        self.texts.append(self._text(raw))
        return code


def _text(raw) -> str:
    return str(raw or "")


def _dims_key(value):
    """A decoded ``Input Dims`` as a key for its code (lists are not hashable): its compact JSON, None as ""."""
    return "" if value is None else json.dumps(value, separators=(",", ":"), default=str)


def _dims_text(value) -> str:
    """An operator's ``Input Dims`` as compact JSON ("" when absent or null): the same text from the raw bytes of
    the fast path and the decoded value of the exact one."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        if not value or bytes(value) == b"null":
            return ""
        try:
            value = msgspec.json.decode(value)
        except msgspec.MsgspecError:
            return ""
    if value is None or value == "":
        return ""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= MAX_DIMS_CHARS else text[: MAX_DIMS_CHARS - 3] + "..."


def event_kind(cat: str, name: str) -> str:
    """The kind (:data:`KINDS`) of a complete event of category ``cat`` named ``name``."""
    kind = _KIND_BY_CAT.get(cat.lower(), "other")
    if kind == "annotation" and name.startswith("ProfilerStep#"):
        return "step"
    return "sync" if kind == "kernel" and cat.lower().startswith("mtia") and name in _WAITS else kind


def _lane(kind: str, cat: str, stream: int | None, tid: str) -> str:
    on_gpu = stream is not None and (kind in _GPU_KINDS or cat == "gpu_user_annotation")
    return f"stream {stream}" if on_gpu else f"thread {tid}"


class _Unusual(Exception):
    """A segment the fast path leaves to the exact one."""


class _Sorts(dict):
    """``(ph, name, cat, pid, tid, stream)`` -> code; per code a row of :meth:`table`: ``(keep, kind, stream, name,
    cat, pid, tid, lane)``, keep 1 for a complete event, 2 for a ``[memory]`` instant, 0 for one left out; the texts
    as codes of ``codes``."""

    def __init__(self, codes: dict):
        super().__init__()
        self.codes = codes
        self._new: list[tuple[int, ...]] = []  # rows of the sorts met since the last table()
        self._table, self._rows = np.zeros((64, 8), np.int64), 0

    def __missing__(self, key):
        ph, name, cat, pid, tid, stream = key
        keep = 1 if ph == "X" else 2 if ph == "i" and name == "[memory]" else 0
        row = (0,) * 8
        if keep:
            stream = None if stream is None or stream == MISSING else stream
            if isinstance(stream, str) and (stream := stream_from_text(stream)) is None:
                raise _Unusual  # the exact path counts the event as skipped, with its reason
            cat_text, name_text = _text(cat), _text(name)
            kind = "memory" if keep == 2 else event_kind(cat_text, name_text)
            codes = self.codes
            row = (
                keep,
                _K[kind],
                MISSING if stream is None else stream,
                codes["name"][name],
                codes["cat"][cat],
                codes["pid"][pid],
                codes["tid"][tid],
                codes["lane"][_lane(kind, cat_text, stream, str(tid))],
            )
        code = self[key] = self._rows + len(self._new)
        self._new.append(row)
        return code

    def table(self) -> np.ndarray:
        if self._new:  # the table grows by doubling: a trace of ever new names costs no quadratic copying
            rows = self._rows + len(self._new)
            if rows > len(self._table):
                self._table = np.concatenate(
                    [self._table, np.zeros((max(rows, 2 * len(self._table)) - len(self._table), 8), np.int64)]
                )
            self._table[self._rows : rows], self._rows, self._new = self._new, rows, []
        return self._table[: self._rows]


def _ints(events, get, n: int) -> np.ndarray:
    """``get(event)`` as int64 (None, JSON null, as the sentinel)."""
    try:
        return np.fromiter(map(get, events), np.int64, count=n)
    except TypeError:  # a null
        return np.fromiter((MISSING if v is None else v for v in map(get, events)), np.int64, count=n)


def _floats(events, get, n: int) -> np.ndarray:
    """``get(event)`` as float64 (None, JSON null, as NaN: absent)."""
    try:
        return np.fromiter(map(get, events), np.float64, count=n)
    except TypeError:
        return np.fromiter((math.nan if v is None else v for v in map(get, events)), np.float64, count=n)


def _absent(x):
    return None if x is None or x != x else x  # NaN: the field was absent


Span = tuple[float, float]  # (first start, last end) of the usable events
Columns = dict[str, np.ndarray]
# (elements read, columns of the rows kept or None, skipped events by reason, span of the usable events or None)
SegmentColumns = tuple[int, Columns | None, Counter[str], Span | None]


def _fast_columns(segment: bytes, lo: float, hi: float, sorts: _Sorts) -> SegmentColumns:
    """``(elements, columns of the rows kept, skipped, span of the usable events)`` of a segment, by msgspec;
    _Unusual when it cannot tell."""
    if not segment.isascii():
        segment.decode()  # invalid UTF-8, even in a field not read, is malformed JSON (msgspec skips it unread)
    try:
        events = _DECODE(segment)
    except msgspec.MsgspecError:
        raise _Unusual from None
    n, skipped = len(events), Counter[str]()
    sort = np.fromiter(map(sorts.__getitem__, map(_SORT, events)), np.intp, count=n)
    keep = sorts.table()[:, 0][sort]
    ts, dur = _floats(events, _TS, n), _floats(events, _DUR, n)
    memory = keep == 2
    dur[memory] = 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        end = ts + dur
        ok = (ts >= 0) & (dur >= 0) & (end < math.inf)
    for j in np.flatnonzero((keep != 0) & ~ok).tolist():
        e = events[j]
        reason = event_times(_absent(e.ts), 0.0 if memory[j] else _absent(e.dur))
        if isinstance(reason, str):  # always: these times failed the same rules
            skipped[reason] += 1
    ok &= keep != 0
    span = (float(ts[ok].min()), float(end[ok].max())) if ok.any() else None
    rows = np.flatnonzero(ok & (ts <= hi) & (end >= lo))
    if not len(rows):
        return n, None, skipped, span
    table = sorts.table()[sort[rows]]
    cols = {
        "ts": ts[rows],
        "dur": dur[rows],
        "kind": table[:, 1].astype(np.int8),
        "stream": table[:, 2].copy(),
        "correlation": _ints(events, _CORRELATION, n)[rows],
    }
    for i, key in enumerate(TEXTS, 3):
        cols[key] = table[:, i].astype(np.int32)
    _fast_args(events, rows, cols, sorts.codes)
    return n, cols, skipped, span


def _fast_args(events: list[_Event], rows: np.ndarray, cols: Columns, codes: dict) -> None:
    """Fill ``cols`` with the args of the ``rows`` kept that only some kinds carry: the input shapes of cpu_ops,
    the bytes of copies and fills, the allocator's figures of ``[memory]`` instants (absent ones as MISSING)."""
    for key in ("bytes", "total_allocated_bytes", "device_type"):
        cols[key] = np.full(len(rows), MISSING, np.int64)
    kind = cols["kind"]
    dims, ops = codes.setdefault(INPUT_DIMS, _Codes(_dims_text)), np.flatnonzero(kind == _K["cpu_op"])
    cols[INPUT_DIMS] = np.full(len(rows), dims[b""], np.int32)
    if len(ops):
        cols[INPUT_DIMS][ops] = [dims[bytes(events[j].args.dims)] for j in rows[ops].tolist()]
    for where, fields in (
        ((kind == _K["memcpy"]) | (kind == _K["memset"]), (("bytes", "bytes"),)),
        (kind == _K["memory"], (("bytes", "Bytes"), ("total_allocated_bytes", "total"), ("device_type", "device"))),
    ):
        at = np.flatnonzero(where)
        if len(at):
            args = [events[j].args for j in rows[at].tolist()]
            for key, arg in fields:
                cols[key][at] = _ints(args, attrgetter(arg), len(at))


# ----------------------------------------------------------------------------------------------- exact path
def _exact_times(ev: object) -> tuple[str, Span | str] | None:
    """``(kind so far, (ts, dur) or why the event is skipped)`` of a complete event ("other" until its category is
    read) or a ``[memory]`` instant; None for any other element (left out, not counted)."""
    if not isinstance(ev, dict):
        return None
    ph = ev.get("ph")
    if ph == "X":
        return "other", event_times(ev.get("ts"), ev.get("dur"))
    if ph == "i" and ev.get("name") == "[memory]":
        return "memory", event_times(ev.get("ts"), 0.0)
    return None


def _exact_row(ev: dict, kind: str, t: float, d: float) -> tuple | str:
    """The row of a usable event inside the window, in :data:`COLUMNS` order (texts and ``Input Dims`` as read),
    or why it is skipped (an unusable integer arg)."""
    args, cat, name = ev.get("args"), str(ev.get("cat") or ""), str(ev.get("name") or "")
    args = args if isinstance(args, dict) else {}
    if kind == "other":
        kind = event_kind(cat, name)
    integers = event_integers(kind, args)
    if isinstance(integers, str):
        return integers
    tid = str(ev.get("tid"))
    return (
        t,
        d,
        _K[kind],
        *(MISSING if v is None else v for v in integers),
        name,
        cat,
        str(ev.get("pid")),
        tid,
        _lane(kind, cat, integers[0], tid),
        args.get("Input Dims") if kind == "cpu_op" else None,
    )


def _exact_columns(segment: bytes, lo: float, hi: float, codes: dict) -> SegmentColumns:
    """The same as :func:`_fast_columns`, by ijson an event at a time (any JSON values, the rules of
    :mod:`gpucost_lab.timeline.limits`)."""
    rows: list[tuple] = []
    n, skipped, seen_lo, seen_hi = 0, Counter[str](), math.inf, -math.inf
    for ev in IJSON_BACKEND.items(BytesIO(segment), "item", use_float=True):
        n += 1
        found = _exact_times(ev)
        if found is None:
            continue
        kind, times = found
        if isinstance(times, str):
            skipped[times] += 1
            continue
        t, d = times
        seen_lo, seen_hi = min(t, seen_lo), max(t + d, seen_hi)
        if t > hi or t + d < lo:
            continue
        row = _exact_row(ev, kind, t, d)
        if isinstance(row, str):
            skipped[row] += 1
            continue
        rows.append(row)
    span = (seen_lo, seen_hi) if seen_lo <= seen_hi else None
    return n, _row_columns(rows, codes) if rows else None, skipped, span


def _row_columns(rows: list[tuple], codes: dict) -> Columns:
    """:func:`_exact_row`'s rows as numpy columns, the texts as codes of ``codes``."""
    columns = list(zip(*rows))
    cols: Columns = {
        "ts": np.array(columns[0], np.float64),
        "dur": np.array(columns[1], np.float64),
        "kind": np.array(columns[2], np.int8),
    }
    for key, values in zip(INTS, columns[3:8]):
        cols[key] = np.array(values, np.int64)
    for key, values in zip(TEXTS, columns[8:13]):
        cols[key] = np.fromiter(map(codes[key].__getitem__, values), np.int32, count=len(rows))
    dims = codes.setdefault(INPUT_DIMS, _Codes(_dims_text))
    cols[INPUT_DIMS] = np.fromiter((dims[_dims_key(v)] for v in columns[13]), np.int32, count=len(rows))
    return cols


_DTYPES = {
    "ts": np.float64,
    "dur": np.float64,
    "kind": np.int8,
    **dict.fromkeys(INTS, np.int64),
    **dict.fromkeys(TEXTS, np.int32),
    INPUT_DIMS: np.int32,
}


def read_events(
    raw, path, lo: float, hi: float, max_events: int, bar
) -> tuple[Columns, dict[str, list[str]], Span, Counter[str], dict[str, Any]]:
    """``(columns, texts, (first start, last end) of the usable events, skipped, outline)``: the events of the open
    binary file ``raw`` overlapping ``[lo, hi]`` as numpy columns in file order (:data:`COLUMNS`; ``kind`` indexes
    :data:`KINDS`, the text columns index ``texts[column]``, absent integers hold ``-2**63``; ``outline``: the values
    of :data:`~gpucost_lab.timeline.framing.OUTLINE_KEYS` found).

    Each column grows in one ``array.array`` (realloc: no copy per segment, and no heap of small arrays left
    behind once they are joined; benchmarks/RESULTS.md, "Trace loading at scale")."""
    codes = {"name": _Codes(_text), "cat": _Codes(_text), "pid": _Codes(), "tid": _Codes(), "lane": _Codes()}
    codes[INPUT_DIMS] = _Codes(_dims_text)
    store, sorts = {key: array(np.dtype(_DTYPES[key]).char) for key in COLUMNS}, _Sorts(codes)
    read, seen, skipped, outline = 0, [math.inf, -math.inf], Counter[str](), Outline()
    for segment in segments(raw, path, outline=outline):
        try:
            n, cols, skips, span = _fast_columns(segment, lo, hi, sorts)
        except _Unusual:
            n, cols, skips, span = _exact_columns(segment, lo, hi, codes)
        read += n
        if read > max_events:
            raise too_many_events(path, max_events)
        bar.update(n)
        skipped.update(skips)
        if span:
            seen[0], seen[1] = min(seen[0], span[0]), max(seen[1], span[1])
        if cols:
            for key in COLUMNS:
                data = np.ascontiguousarray(cols[key], _DTYPES[key]).view(np.uint8)
                store[key].frombytes(data)  # type: ignore[arg-type]  # numpy declares ndarray's buffer on 3.12+ only
    columns = {key: np.frombuffer(store.pop(key), _DTYPES[key]) for key in COLUMNS}
    texts = {key: table.texts for key, table in codes.items()}
    return columns, texts, (seen[0], seen[1]), skipped, outline.values
