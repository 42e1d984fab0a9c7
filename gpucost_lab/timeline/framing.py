"""Cutting a trace file's ``traceEvents`` array into segments of whole events, in bounded memory: :func:`segments`.

The file is read in blocks of about 1 MB. A cut goes after the block's last ``}`` when
:func:`~gpucost_lab.trace_input.segment_depths` finds that ``}`` closing an event (depth back to the array's,
outside strings; escapes followed), else where the numpy scan of every byte
(:func:`~gpucost_lab.trace_input.structure`) finds the last comma between events. Both check the nesting depth
(:data:`~gpucost_lab.trace_input.MAX_DEPTH`) before anything is decoded. The few bytes outside the events (the
document's other keys) go through ijson's parser, which checks that they are well-formed and names the key before
each top-level array: ``traceEvents`` may come anywhere in the document, or the document may be a bare array of
events (Chrome's "JSON array" format).
"""

from __future__ import annotations

import re

import ijson
import numpy as np

from ..trace_input import MAX_DEPTH, segment_depths, structure, too_deep

try:
    _IJSON = ijson.get_backend("yajl2_c")
except ImportError:  # pragma: no cover - the pure-Python backend is slower but equivalent
    _IJSON = ijson

BLOCK = 1 << 20  # bytes read at a time; a segment is about this long


class MalformedTrace(ValueError):
    """The JSON ends early or is not well-formed (load_trace words it with the file's name)."""


_SPACE = re.compile(rb"[ \t\n\r]*")


def segments(raw, path, max_depth: int = MAX_DEPTH):
    """Yield the elements of the top-level ``traceEvents`` array(s), or of the document when it is an array, as
    JSON arrays of whole elements (``b"[...]"``), each depth-checked first; ijson checks the rest of the document."""
    parsed = ijson.sendable_list()
    rest = _IJSON.basic_parse_coro(parsed, use_float=True)  # the document less the events: well-formed, key names
    buf, state, size, top, at, first = b"", (0, False, False), BLOCK, None, None, True
    while True:
        data = raw.read(size)
        buf = buf + data if buf else data
        if at is None:  # outside the events: scan every byte for the "[" that opens them
            if top is None and buf.strip():
                top = buf.lstrip()[:1]
            start, state = _events_start(buf, path, state, max_depth, top, rest, parsed) if buf else (None, state)
            if start is None:
                buf = b""
                if not data:
                    rest.close()  # raises on a truncated or empty document
                    return
                continue
            if top == b"[":
                top = b"[done"  # an array document holds one events array
            at, first, buf = start[1], True, buf[start[0] + 1 :]
        cut = _fast_cut(buf, at, first, path, max_depth)  # cheap: after the last "}" that ends an event
        if cut is not None:
            yield cut[1]
            buf, first, size = buf[cut[0] :], False, BLOCK
            continue
        depths, inside, _ = structure(buf, path, at, False, False, max_depth)  # exact, every byte
        closes = np.flatnonzero(depths < at)
        if len(closes):  # the array ends in the buffer
            end = int(closes[0])
            if buf[end] != 93:
                raise MalformedTrace("the traceEvents array is closed by '}'")
            body = _body(buf, first, end)
            if body is not None:
                yield body
            buf, at, state, size = buf[end + 1 :], None, (at - 1, False, False), BLOCK
            continue
        commas = np.flatnonzero((np.frombuffer(buf, np.uint8) == 44) & (depths == at) & ~inside)
        if len(commas) and int(commas[-1]) > _SPACE.match(buf).end():
            cut = int(commas[-1])
            yield _body(buf, first, cut)
            buf, first, size = buf[cut:], False, BLOCK
        elif not data:
            raise MalformedTrace("the file ends inside the traceEvents array (truncated?)")
        else:  # an element longer than the buffer: read more at a time
            size *= 2


def _events_start(buf: bytes, path, state, max_depth: int, top, rest, parsed) -> tuple[tuple | None, tuple]:
    """``((where, depth), state after buf)``: where in ``buf`` (outside the events, from ``state``) the events
    array opens and its depth, or None; what comes before it goes to ijson (``rest``), which names the key
    before it."""
    depths, inside, after = structure(buf, path, *state, max_depth)
    fed = 0
    for i in np.flatnonzero((np.frombuffer(buf, np.uint8) == 91) & ~inside).tolist():  # "[" outside strings
        level = int(depths[i])
        if (level, top) in ((1, b"["), (2, b"{")):
            _feed(rest, parsed, buf[fed:i])
            fed = i
            if level == 1 or parsed[-1:] == [("map_key", "traceEvents")]:
                _feed(rest, parsed, b"[]")
                return (i, level), after
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
    the cheap check (three tries); None when it finds none."""
    end = len(buf)
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
    i = _SPACE.match(buf, 0, end).end()
    if i == end:
        return None
    if not first:
        if buf[i] != 44:
            if strict:
                raise MalformedTrace("expected ',' between trace events")
            return None
        i = _SPACE.match(buf, i + 1, end).end()
        if i == end:
            if strict:
                raise MalformedTrace("a ',' after the last trace event")
            return None
    return b"".join((b"[", memoryview(buf)[i:end], b"]"))
