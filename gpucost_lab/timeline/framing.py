"""Cutting a trace file's ``traceEvents`` array into segments of whole events, in bounded memory: :func:`segments`.

The file is read in blocks of about 1 MB. A cut goes after the block's last ``}`` when
:func:`~gpucost_lab.timeline.limits.segment_depths` finds that ``}`` closing an event (depth back to the array's,
outside strings; escapes followed) and the segment is at most :data:`FAST_SEGMENT` bytes long. Otherwise (an event
longer than a block, braces inside strings) every byte after the last cut is scanned with numpy
(:func:`~gpucost_lab.timeline.limits.structure`), a block at a time and once each, for the last comma between events:
that scan also measures each string against :data:`~gpucost_lab.timeline.limits.MAX_STRING_BYTES`, the whitespace before
the next event against :data:`~gpucost_lab.timeline.limits.MAX_WHITESPACE_BYTES` and the pending event against
:data:`~gpucost_lab.timeline.limits.MAX_EVENT_BYTES`, so no input makes it hold more than one event and a block. A
segment cut the cheap way is no longer than those limits, so it needs no measuring. Both ways check the nesting depth
(:data:`~gpucost_lab.timeline.limits.MAX_DEPTH`) before anything is decoded. The few bytes outside the events (the
document's other keys) go through ijson's parser, which checks that they are well-formed and names the key before
each top-level array (their strings and numbers measured first): ``traceEvents`` may come anywhere in the document,
or the document may be a bare array of events (Chrome's "JSON array" format). On the way, :class:`Outline` keeps the
values of the few top-level keys that describe the job (:data:`OUTLINE_KEYS`: the devices, the rank, the clock's
origin).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import ijson
import numpy as np

from gpucost_lab.timeline.limits import (
    MAX_DEPTH,
    MAX_EVENT_BYTES,
    MAX_STRING_BYTES,
    MAX_WHITESPACE_BYTES,
    check_runs,
    segment_depths,
    structure,
    too_deep,
    too_long,
)

try:
    IJSON_BACKEND = ijson.get_backend("yajl2_c")
except ImportError:  # pragma: no cover - the pure-Python backend is slower but equivalent
    IJSON_BACKEND = ijson

BLOCK = 1 << 20  # bytes read at a time; a segment is about this long
# A segment cut after a "}" without scanning every byte holds no string or run of whitespace longer than itself.
FAST_SEGMENT = min(MAX_STRING_BYTES, MAX_WHITESPACE_BYTES)


class MalformedTrace(ValueError):
    """The JSON ends early or is not well-formed (load_trace words it with the file's name)."""


# Kineto's top-level keys: the devices, the rank and world, the clock's origin (the events' ts count from it)
OUTLINE_KEYS = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds")


class Outline(list):
    """The sink of ijson's parse of the document less its events (a list of its ``(event, value)`` pairs, of which
    :func:`segments` keeps the last) that also builds the value of each top-level key in :data:`OUTLINE_KEYS` into
    ``values``. Those bytes are few: :func:`segments` measures every string and number outside the events."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, Any] = {}
        self._depth, self._key, self._builder = 0, None, None

    def send(self, item: tuple[str, Any]) -> None:
        self.append(item)
        event, value = item
        opens, closes = event in ("start_map", "start_array"), event in ("end_map", "end_array")
        if self._builder is None and self._depth == 1 and self._key in OUTLINE_KEYS and event != "map_key":
            self._builder = ijson.ObjectBuilder()
        if self._builder is not None:
            self._builder.event(event, value)
        self._depth += opens - closes
        if event == "map_key" and self._depth == 1:
            self._key = value
        elif self._builder is not None and self._depth == 1:
            self.values[str(self._key)], self._builder, self._key = self._builder.value, None, None


_SPACE = re.compile(rb"[ \t\n\r]*")
State = tuple[int, bool, bool]  # the scan's state between blocks: nesting depth, inside a string, escaped


def _space_end(buf: bytes, pos: int = 0, endpos: int | None = None) -> int:
    """Where the run of JSON whitespace that starts at ``pos`` ends (before ``endpos``)."""
    match = _SPACE.match(buf, pos, len(buf) if endpos is None else endpos)
    return pos if match is None else match.end()  # the pattern matches the empty run too: never None


_TOKEN = np.ones(256, dtype=bool)  # bytes of a number or a literal (true, null, ...): all but these
_TOKEN[list(b' \t\n\r,:[]{}"')] = False
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b" \t\n\r")] = True


class _Scan:
    """The exact scan of the bytes after the last cut (which lies between events, at depth ``at``), a block at a
    time and each byte once: how far it got and the state there, the last comma between events, where the array
    closes, and the limits' runs so far (the open string, the whitespace between events, the bytes since the last
    comma between events: the pending event with the whitespace around it)."""

    def __init__(self, at: int):
        self.at, self.done = at, 0
        self.state: State = (at, False, False)
        self.string = self.space = self.since = 0
        self.comma = self.close = -1

    def run(self, buf: bytes, path, max_depth: int) -> None:
        while self.done < len(buf) and self.close < 0:
            piece = buf[self.done : self.done + BLOCK]
            depths, inside, after = structure(piece, path, *self.state, max_depth)
            closes = np.flatnonzero(depths < self.at)
            if len(closes):  # the array ends here: nothing after it belongs to the events
                end = int(closes[0])
                piece, depths, inside = piece[:end], depths[:end], inside[:end]
                self.close = self.done + end
            a = np.frombuffer(piece, np.uint8)
            between = (depths == self.at) & ~inside
            self.string = check_runs(inside, self.string, MAX_STRING_BYTES, path, "a string")
            self.space = check_runs(between & _WHITESPACE[a], self.space, MAX_WHITESPACE_BYTES, path, "whitespace")
            commas = np.flatnonzero((a == 44) & between)
            if len(commas):
                longest = max(self.since + int(commas[0]), int(np.diff(commas).max(initial=0)))
                self.comma, self.since = self.done + int(commas[-1]), len(piece) - int(commas[-1])
            else:
                longest = self.since = self.since + len(piece)
            if max(longest, self.since) > MAX_EVENT_BYTES:
                raise too_long(path, "a trace event", MAX_EVENT_BYTES)
            self.done += len(piece)
            self.state = after


class _Outside:
    """Strings and numbers outside the events, measured before ijson (which would hold them whole) reads them."""

    def __init__(self):
        self.string = self.token = 0

    def check(self, buf: bytes, inside: np.ndarray, path) -> None:
        self.string = check_runs(inside, self.string, MAX_STRING_BYTES, path, "a string")
        token = _TOKEN[np.frombuffer(buf, np.uint8)] & ~inside
        self.token = check_runs(token, self.token, MAX_STRING_BYTES, path, "a number or literal")


def segments(raw, path, max_depth: int = MAX_DEPTH, outline: Outline | None = None) -> Iterator[bytes]:
    """Yield the elements of the top-level ``traceEvents`` array(s), or of the document when it is an array, as
    JSON arrays of whole elements (``b"[...]"``), each depth-checked first; ijson checks the rest of the document
    (into ``outline`` when given: the values of :data:`OUTLINE_KEYS` are there once the generator ends)."""
    parsed = Outline() if outline is None else outline
    # the document less the events: ijson checks it is well-formed and names the keys
    rest = IJSON_BACKEND.basic_parse_coro(parsed, use_float=True)
    buf, size, first, outside = b"", BLOCK, True, _Outside()
    state: State = (0, False, False)
    top: bytes | None = None  # the document's first byte: b"[" for a bare array of events
    at: int | None = None  # the depth of the events inside the events array; None outside it
    scan: _Scan | None = None
    while True:
        data = raw.read(size)
        buf = buf + data if buf else data
        if at is None:  # outside the events: scan every byte for the "[" that opens them
            if top is None and buf.strip():
                top = buf.lstrip()[:1]
            start, state = (
                _events_start(buf, path, state, max_depth, top, rest, parsed, outside) if buf else (None, state)
            )
            if start is None:
                buf = b""
                if not data:
                    rest.close()  # raises on a truncated or empty document
                    return
                continue
            if top == b"[":
                top = b"[done"  # an array document holds one events array
            at, first, buf, scan, outside = start[1], True, buf[start[0] + 1 :], None, _Outside()
        if scan is None:
            cut = _fast_cut(buf, at, first, path, max_depth)  # cheap: after the last "}" that ends an event
            if cut is not None:
                yield cut[1]
                buf, first, size = buf[cut[0] :], False, BLOCK
                continue
            scan = _Scan(at)
        scan.run(buf, path, max_depth)  # exact, every byte not scanned yet
        if scan.close >= 0:  # the array ends in the buffer
            end = scan.close
            if buf[end] != 93:
                raise MalformedTrace("the traceEvents array is closed by '}'")
            body = _body(buf, first, end)
            if body is not None:
                yield body
            state = (at - 1, False, False)  # back outside the events array
            buf, at, size, scan = buf[end + 1 :], None, BLOCK, None
            continue
        if scan.comma > _space_end(buf):
            comma = scan.comma
            body = _body(buf, first, comma)
            if body is not None:  # always: the comma follows an element
                yield body
            buf, first, size, scan = buf[comma:], False, BLOCK, None
        elif not data:
            raise MalformedTrace("the file ends inside the traceEvents array (truncated?)")
        else:  # an element longer than the buffer: read more at a time (the scan holds it to the limits)
            size = min(2 * size, MAX_EVENT_BYTES)


def _events_start(
    buf: bytes, path, state: State, max_depth: int, top: bytes | None, rest, parsed: list, outside: _Outside
) -> tuple[tuple[int, int] | None, State]:
    """``((where, depth), state after buf)``: where in ``buf`` (outside the events, from ``state``) the events
    array opens and its depth, or None; what comes before it goes to ijson (``rest``), which names the key
    before it. Strings and numbers are measured first (``outside``)."""
    depths, inside, after = structure(buf, path, *state, max_depth)
    fed = 0
    for i in np.flatnonzero((np.frombuffer(buf, np.uint8) == 91) & ~inside).tolist():  # "[" outside strings
        level = int(depths[i])
        if (level, top) in ((1, b"["), (2, b"{")):
            outside.check(buf[fed:i], inside[fed:i], path)
            _feed(rest, parsed, buf[fed:i])
            fed = i
            if level == 1 or parsed[-1:] == [("map_key", "traceEvents")]:
                _feed(rest, parsed, b"[]")
                return (i, level), after
    outside.check(buf[fed:], inside[fed:], path)
    _feed(rest, parsed, buf[fed:])
    return None, after


def _feed(rest, parsed: list, data: bytes) -> None:
    """Send ``data`` to ijson (an empty send would end its input); keep its last event only (the key before a
    "[" may have come in an earlier block)."""
    if data:
        rest.send(data)
        del parsed[:-1]


def _fast_cut(buf: bytes, at: int, first: bool, path, max_depth: int) -> tuple[int, bytes] | None:
    """``(end, segment)`` for the last ``}`` in ``buf`` (which starts between events) found to end an event by
    the cheap check (three tries), the segment at most :data:`FAST_SEGMENT` long; None when it finds none."""
    end = min(len(buf), FAST_SEGMENT)
    for _ in range(3):
        p = buf.rfind(b"}", 0, end)
        if p < 0:
            return None
        segment = _body(buf, first, p + 1, strict=False)
        if segment is None:
            return None
        deepest, shallowest, last, in_string = segment_depths(segment)
        if at - 1 + deepest > max_depth:
            raise too_deep(path, max_depth)
        if shallowest < 1:
            return None  # the array ends in there
        if last == 0 and not in_string:
            return p + 1, segment
        end = p
    return None


def _body(buf: bytes, first: bool, end: int, strict: bool = True) -> bytes | None:
    """The elements in ``buf[:end]`` as a JSON array (after the first segment, led by the comma after the last
    element before); None when there are none, or (``strict=False``) when the comma is missing."""
    i = _space_end(buf, 0, end)
    if i == end:
        return None
    if not first:
        if buf[i] != 44:
            if strict:
                raise MalformedTrace("expected ',' between trace events")
            return None
        i = _space_end(buf, i + 1, end)
        if i == end:
            if strict:
                raise MalformedTrace("a ',' after the last trace event")
            return None
    return b"".join((b"[", memoryview(buf)[i:end], b"]"))
