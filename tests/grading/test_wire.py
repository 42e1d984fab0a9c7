"""gpucost_lab.grading.wire: the bound on a JSON document's values holds for any document (a property), each bound
refuses with a message naming what was found and what is allowed, an answer's text is base64 or nothing, and a
message of too many frames is drained and dropped, the next one read."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
import zmq
import zmq.asyncio
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.grading import wire

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=40,
)


def values(node) -> int:
    """Every value of a parsed JSON document, an object's keys included, counted by walking it."""
    if isinstance(node, list):
        return 1 + sum(values(v) for v in node)
    if isinstance(node, dict):
        return 1 + sum(1 + values(v) for v in node.values())
    return 1


@given(JSON, st.booleans())
def test_the_bound_is_never_below_the_values_a_document_holds(document, ascii_only):
    text = json.dumps(document, ensure_ascii=ascii_only)
    assert values(json.loads(text)) <= wire.value_bound(text)


def test_strings_count_as_one_value_whatever_they_hold():
    # by hand: [ "a,b:[c{", "\"," ] is a list and two strings: 3 values, 1 + one "[" + one "," outside strings
    assert wire.value_bound('["a,b:[c{", "\\","]') == 3


def test_each_bound_refuses_before_parsing_and_says_what_it_found():
    with pytest.raises(wire.WireError, match=r"an answer is 11 characters long; allowed: at most 10"):
        wire.bounded_json("[1,2,3,4,5]", 10, 100, "an answer")
    with pytest.raises(wire.WireError, match=r"an answer may hold 6 JSON values; allowed: at most 5"):
        wire.bounded_json("[1,2,3,4,5]", 100, 5, "an answer")
    assert wire.bounded_json("[1,2,3,4,5]", 11, 6, "an answer") == [1, 2, 3, 4, 5]


def test_an_answer_s_text_is_the_repr_of_base64_or_it_is_refused():
    sent = base64.b64encode('{"value": "\u00e9t\u00e9"}'.encode()).decode()
    assert wire.answer_text(repr(sent)) == '{"value": "\u00e9t\u00e9"}'
    for forged in (
        "[[], [], []]",
        "'not base64!'",
        "'QUJD'+'RA=='",
        42,
        None,
        "'" + "A" * (wire.MAX_ANSWER_WIRE_CHARS + 4) + "'",
    ):
        with pytest.raises(wire.WireError):
            wire.answer_text(forged)


def test_a_message_of_too_many_frames_is_dropped_and_the_next_read():
    async def exchange():
        context = zmq.asyncio.Context()
        sender, receiver = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
        try:
            sender.bind("inproc://wire-test")
            receiver.connect("inproc://wire-test")
            await sender.send_multipart([b"x"] * (wire.MAX_FRAMES + 1))
            await sender.send_multipart([b"a", b"b"])
            return await wire.read_frames(receiver), await wire.read_frames(receiver)
        finally:
            sender.close(0)
            receiver.close(0)
            context.term()

    assert asyncio.run(exchange()) == (None, [b"a", b"b"])
