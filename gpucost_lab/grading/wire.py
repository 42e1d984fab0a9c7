"""What the learner's kernel sends, read by the grader within bounds stated before any of it is parsed.

The kernel runs the learner's code, which holds the connection's key: every message it sends may be forged, of any
shape the transport allows. The grader's process is outside the sandbox's control group, so nothing the kernel sends
may cost it memory or time in proportion to what the kernel chose. Three layers, each checked before the next:

- a message: at most :data:`MAX_FRAMES` frames and :data:`MAX_MESSAGE_BYTES` bytes in all, each frame capped by
  ZeroMQ as it arrives (:func:`read_frames`, for ``run.CappedChannel``; one over either is drained frame by frame
  and dropped unread). ZeroMQ holds all the frames of a message before the first is readable, so these bound what
  the grader keeps, not what ZeroMQ buffers for a message of many frames;
- each JSON part of it: at most :data:`MAX_MESSAGE_VALUES` values, counted before ``json`` parses it
  (:func:`unpack`, the session's unpacker; a part over it drops the message);
- an answer (:mod:`.answers`): base64 text inside the reply, read by :func:`answer_text` without evaluating
  anything, then parsed as JSON of at most :data:`MAX_ANSWER_CHARS` characters and :data:`MAX_ANSWER_VALUES` values
  (:func:`bounded_json`).

A JSON document holds at most 1 + the number of its ``[``, ``{``, ``,`` and ``:`` outside strings (each value but
the first follows one of them), so :func:`value_bound` is an upper bound found in one pass over bytes,
and ``json`` then builds at most that many objects, each of bounded size, whatever the text is. The standard library
alone: :mod:`.answers`, which the kernel imports, uses it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

#: Most characters one answer may take as JSON: four times a PhaseTimer of the lab's whole loop (~2 MB).
MAX_ANSWER_CHARS = 8_000_000
#: Most JSON values one answer may hold (the lab's timer holds ~130,000): ~100 MB of objects at most.
MAX_ANSWER_VALUES = 1_000_000
#: Largest answer sent as base64 text (:func:`answer_text`), in characters: 4/3 of the largest answer's JSON.
MAX_ANSWER_WIRE_CHARS = 4 * (MAX_ANSWER_CHARS // 3 + 1)
#: Largest message the grader reads from the kernel, all its frames together; ZeroMQ caps each frame at it too.
MAX_MESSAGE_BYTES = MAX_ANSWER_WIRE_CHARS + 2**20
#: Most frames one message may have (identities, delimiter, signature, four JSON parts, a few buffers).
MAX_FRAMES = 16
#: Most JSON values one part of a message may hold: an honest one holds dozens (an answer travels as one string).
MAX_MESSAGE_VALUES = 100_000

_STRUCTURE = (b"[", b"{", b",", b":")
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # one JSON string, escapes included
_BASE64_REPR = re.compile(r"'([A-Za-z0-9+/]*={0,2})'")


class WireError(ValueError):
    """What the kernel sent is over a stated bound, or not of the form allowed; the message says which."""


def value_bound(data: bytes | str) -> int:
    """An upper bound on the number of values in the JSON document ``data`` (module docstring): its ``[``, ``{``,
    ``,`` and ``:`` outside strings (an unterminated string's are counted: an over-count, never an under-count)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    outside = _JSON_STRING.sub(b'""', raw)
    return 1 + sum(outside.count(mark) for mark in _STRUCTURE)


def bounded_json(data: bytes | str, max_chars: int, max_values: int, what: str) -> Any:
    """``data`` parsed as JSON, refused with :class:`WireError` (naming ``what``, the bound and the value found)
    before parsing when it is longer than ``max_chars`` or may hold more than ``max_values`` values."""
    if len(data) > max_chars:
        raise WireError(f"{what} is {len(data):,} characters long; allowed: at most {max_chars:,}")
    values = value_bound(data)
    if values > max_values:
        raise WireError(f"{what} may hold {values:,} JSON values; allowed: at most {max_values:,}")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as err:
        raise WireError(f"{what} is not JSON ({type(err).__name__})") from None


def unpack(data: bytes) -> Any:
    """The session's unpacker for every message part the kernel sends (:data:`MAX_MESSAGE_VALUES`)."""
    return bounded_json(bytes(data), MAX_MESSAGE_BYTES, MAX_MESSAGE_VALUES, "a message part")


def answer_text(text_plain: Any) -> str:
    """The JSON text of an answer from the reply's ``text/plain``: the repr of a base64 string, nothing else."""
    if not isinstance(text_plain, str) or len(text_plain) > MAX_ANSWER_WIRE_CHARS + 2:
        raise WireError(f"the answer's text is over {MAX_ANSWER_WIRE_CHARS:,} characters, or not text")
    match = _BASE64_REPR.fullmatch(text_plain)
    if match is None:
        raise WireError("the answer is not the base64 text the answers module sends")
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as err:
        raise WireError(f"the answer's base64 text does not decode ({type(err).__name__})") from None


async def read_frames(socket) -> list[bytes] | None:
    """One whole message's frames, or None (every frame read and dropped) when it is over the bounds."""
    frames: list[bytes] | None = []
    total = 0
    while True:
        frame = await socket.recv(copy=True)
        total += len(frame)
        if frames is not None and (len(frames) >= MAX_FRAMES or total > MAX_MESSAGE_BYTES):
            frames = None
        if frames is not None:
            frames.append(frame)
        del frame
        if not socket.rcvmore:
            return frames
