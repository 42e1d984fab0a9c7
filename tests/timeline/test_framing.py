"""gpucost_lab.timeline.framing: segments of whole events cut at any block size, the document's shapes and malformed
JSON, each expected value derived by hand from the tiny trace written in the test (tests/timeline/helpers.py).
"""

from __future__ import annotations

import json

import pytest

from gpucost_lab.timeline import framing

from .helpers import BLOCKS, EXPECTED, TRICKY, as_dict, load_in_blocks, write_file

DTYPES = ["str"] * 6 + ["float64"] * 2 + ["Int64"] * 5 + ["str"]


@pytest.mark.parametrize("indent", [None, 1, "\t"])
@pytest.mark.parametrize("block", BLOCKS)
def test_every_block_size_gives_the_same_rows(tmp_path, monkeypatch, block, indent):
    doc = {"schemaVersion": 1, "traceEvents": TRICKY, "traceName": "x"}
    path = write_file(tmp_path / "t.json", json.dumps(doc, indent=indent, ensure_ascii=indent is None))
    trace = load_in_blocks(path, block, monkeypatch)
    assert as_dict(trace.events) == EXPECTED
    assert [str(t) for t in trace.events.dtypes] == DTYPES
    assert trace.device == "cuda" and trace.skipped == {}


@pytest.mark.parametrize("block", [1, 4, framing.BLOCK])
def test_document_shapes(tmp_path, monkeypatch, block):
    one = {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}
    two = {**one, "name": "b", "ts": 5}
    shapes = {  # text -> names read
        # traceEvents after keys holding arrays, one a nested "traceEvents" (not the document's), keys after it
        json.dumps(
            {
                "deviceProperties": [{"traceEvents": [two]}],
                "x": [[1], "[", {"traceEvents": []}],
                "traceEvents": [one],
                "z": [two],
            }
        ): ["a"],
        "\n  " + json.dumps([one, two]) + "\n": ["a", "b"],  # a bare array of events (Chrome's array format)
        '{"traceEvents": [' + json.dumps(one) + '], "traceEvents": [' + json.dumps(two) + "]}": ["a", "b"],
        '{"traceEvents"  :\n[ ' + json.dumps(one) + " ,\n " + json.dumps(two) + " ] }": ["a", "b"],
    }
    for text, names in shapes.items():
        trace = load_in_blocks(write_file(tmp_path / "t.json", text), block, monkeypatch)
        assert trace.events["name"].tolist() == names, text


MALFORMED = {
    "missing comma": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1} {"ph": "X", "ts": 2, "dur": 1}]}',
    "trailing comma": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1},]}',
    "leading comma": '{"traceEvents": [,{"ph": "X", "ts": 1, "dur": 1}]}',
    "array closed by }": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}}',
    "cut inside the events": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}, {"ph"',
    "cut after the events": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}]',
    "text after the document": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}]} x',
    "bad JSON in another key": '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}], "x": [1,]}',
    "control character in a string": '{"traceEvents": [{"ph": "X", "name": "a\x01", "ts": 1, "dur": 1}]}',
    "empty file": "",
}


@pytest.mark.parametrize("block", [1, 5, framing.BLOCK])
def test_malformed_json_is_one_error_naming_the_file(tmp_path, monkeypatch, block):
    cases = {
        **MALFORMED,
        "invalid UTF-8 in a field not read": b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "note": "\xff"}]}',
    }
    for label, text in cases.items():
        path = write_file(tmp_path / "bad.json", text)
        with pytest.raises(ValueError, match="not a readable trace: truncated or malformed JSON") as err:
            load_in_blocks(path, block, monkeypatch)
        assert str(path) in str(err.value) and "\n" not in str(err.value), label
