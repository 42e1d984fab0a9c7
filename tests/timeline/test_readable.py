"""How ``load_trace`` reads a file: segments of whole events cut from any block size, the fast (msgspec) and exact
(ijson) paths giving the same rows, the document's shapes, malformed JSON, and the depth check on both scans.

Every expected value is derived by hand from the tiny trace written in the test.
"""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab import timeline as tl
from gpucost_lab.timeline import framing, reader
from gpucost_lab.timeline.limits import MAX_DEPTH, segment_depths, structure

BLOCKS = [1, 2, 3, 5, 8, 64, framing.BLOCK]  # bytes read at a time: cuts fall inside strings, escapes, numbers
NA = pd.NA

TRICKY = [  # strings that hold brackets, quotes, "},{" and backslashes; nested args; a non-ASCII name
    {
        "ph": "X",
        "cat": "kernel",
        "name": 'k[0]{"}},{"',
        "pid": 0,
        "tid": 7,
        "ts": 10,
        "dur": 5,
        "args": {"stream": 7, "correlation": 1, "grid": [1, {"a": [2]}], "note": '\\"}],{\\\\'},
    },
    {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 2,
        "ts": 8,
        "dur": 1,
        "args": {"correlation": 1},
    },
    {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 10, "cat": "ac2g", "name": "ac2g", "bp": "e"},  # left out
    {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 2,
        "ts": 9,
        "args": {"Bytes": 256, "Total Allocated": 1024, "Device Type": 1},
    },
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 2, "ts": 0, "dur": 20, "args": {}},
    {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": "Memcpy HtoD (Pageable -> Device)",
        "pid": 0,
        "tid": 7,
        "ts": 16,
        "dur": 2,
        "args": {"stream": 7, "correlation": 2, "bytes": 4096},
    },
    {"ph": "X", "cat": "cpu_op", "name": "aten::\u00fcn\u00efcode\\", "pid": "1", "tid": "2", "ts": 1, "dur": 3},
]
EXPECTED = {  # by start: the step, the op, the launch, the memory instant, the kernel, the copy
    "name": [
        "ProfilerStep#3",
        "aten::\u00fcn\u00efcode\\",
        "cudaLaunchKernel",
        "[memory]",
        'k[0]{"}},{"',
        "Memcpy HtoD (Pageable -> Device)",
    ],
    "kind": ["step", "cpu_op", "runtime", "memory", "kernel", "memcpy"],
    "cat": ["user_annotation", "cpu_op", "cuda_runtime", "", "kernel", "gpu_memcpy"],
    "pid": ["1", "1", "1", "1", "0", "0"],
    "tid": ["2", "2", "2", "2", "7", "7"],
    "lane": ["thread 2", "thread 2", "thread 2", "thread 2", "stream 7", "stream 7"],
    "ts_us": [0.0, 1.0, 8.0, 9.0, 10.0, 16.0],
    "dur_us": [20.0, 3.0, 1.0, 0.0, 5.0, 2.0],
    "stream": [NA, NA, NA, NA, 7, 7],
    "correlation": [NA, NA, 1, NA, 1, 2],
    "bytes": [NA, NA, NA, 256, NA, 4096],
    "total_allocated_bytes": [NA, NA, NA, 1024, NA, NA],
    "device_type": [NA, NA, NA, 1, NA, NA],
    "input_dims": [""] * 6,  # none recorded (record_shapes=False)
}
DTYPES = ["str"] * 6 + ["float64"] * 2 + ["Int64"] * 5 + ["str"]


def write(path, text: str | bytes, gz: bool = False):
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def load(path, block, monkeypatch, **kwargs):
    monkeypatch.setattr(framing, "BLOCK", block)
    return tl.load_trace(path, **kwargs)


def as_dict(events: pd.DataFrame) -> dict:
    return {k: [NA if v is pd.NA else v for v in events[k].tolist()] for k in events.columns}


@pytest.mark.parametrize("indent", [None, 1, "\t"])
@pytest.mark.parametrize("block", BLOCKS)
def test_every_block_size_gives_the_same_rows(tmp_path, monkeypatch, block, indent):
    doc = {"schemaVersion": 1, "traceEvents": TRICKY, "traceName": "x"}
    path = write(tmp_path / "t.json", json.dumps(doc, indent=indent, ensure_ascii=indent is None))
    trace = load(path, block, monkeypatch)
    assert as_dict(trace.events) == EXPECTED
    assert [str(t) for t in trace.events.dtypes] == DTYPES
    assert trace.device == "cuda" and trace.skipped == {}


def test_gzip_and_plain_read_alike(tmp_path, monkeypatch):
    text = json.dumps({"traceEvents": TRICKY})
    for block in (7, framing.BLOCK):
        plain = load(write(tmp_path / "t.json", text), block, monkeypatch)
        packed = load(write(tmp_path / "t.json.gz", text, gz=True), block, monkeypatch)
        assert as_dict(plain.events) == as_dict(packed.events) == EXPECTED


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
        trace = load(write(tmp_path / "t.json", text), block, monkeypatch)
        assert trace.events["name"].tolist() == names, text


UNUSUAL = [  # each sends its segment down the exact path; the rows are the same as the fast path's would be
    {
        "ph": "X",
        "cat": "kernel",
        "name": "float stream",
        "pid": 0,
        "tid": 7,
        "ts": 30,
        "dur": 1,
        "args": {"stream": 7.0},
    },  # an integer written as a float: 7
    {"ph": "X", "cat": "cpu_op", "name": "text ts", "pid": 1, "tid": 2, "ts": "31", "dur": 1},  # skipped
    {"ph": "X", "cat": "cpu_op", "name": "null args", "pid": 1, "tid": 2, "ts": 32, "dur": 1, "args": None},
    {"ph": "Q", "name": "unknown phase", "ts": 33, "dur": 1},  # left out, as any phase but X and [memory] i
    1,
    None,
    [],
    "text",  # not events: left out
    {"ph": "X", "cat": "cpu_op", "name": 7, "pid": 1.5, "tid": True, "ts": 34, "dur": 1},  # names as text
]


@pytest.mark.parametrize("block", [3, framing.BLOCK])
def test_unusual_events_are_read_by_the_exact_path_with_the_same_rules(tmp_path, monkeypatch, block):
    path = write(tmp_path / "t.json", json.dumps({"traceEvents": TRICKY + UNUSUAL}))
    trace = load(path, block, monkeypatch)
    ev = trace.events
    assert ev["name"].tolist() == EXPECTED["name"] + ["float stream", "null args", "7"]
    assert as_dict(ev.iloc[:6].reset_index(drop=True)) == EXPECTED
    assert ev["stream"].tolist()[6:] == [7, NA, NA] and ev["lane"].tolist()[6:] == [
        "stream 7",
        "thread 2",
        "thread True",
    ]
    assert ev["pid"].tolist()[8] == "1.5" and trace.skipped == {"ts not a number": 1}


def _codes_to_text(cols: dict, texts: dict) -> dict:
    out = {k: v.tolist() for k, v in cols.items() if k not in texts}
    out.update({k: [texts[k][c] for c in cols[k].tolist()] for k in texts})
    return out


@pytest.mark.parametrize("window", [(-math.inf, math.inf), (9.0, 12.0), (100.0, 200.0)])
def test_fast_and_exact_paths_give_the_same_columns(window):
    bad = [
        {"ph": "X", "name": "neg", "ts": 3, "dur": -1},
        {"ph": "X", "name": "nodur", "ts": 3},
        {"ph": "i", "name": "[memory]", "ts": None},
        {"ph": "X", "name": "inf", "ts": 1.7e308, "dur": 1e308},
    ]
    segment = json.dumps(TRICKY + bad).encode()
    results = []
    for path in ("fast", "exact"):
        codes = {
            "name": reader._Codes(reader._text),
            "cat": reader._Codes(reader._text),
            "pid": reader._Codes(),
            "tid": reader._Codes(),
            "lane": reader._Codes(),
        }
        if path == "fast":
            n, cols, skipped, span = reader._fast_columns(segment, *window, reader._Sorts(codes))
        else:
            n, cols, skipped, span = reader._exact_columns(segment, *window, codes)
        texts = {k: t.texts for k, t in codes.items()}
        results.append((n, cols and _codes_to_text(cols, texts), dict(skipped), span))
    assert results[0] == results[1]
    assert results[0][0] == 11 and results[0][3] == (0.0, 20.0)
    assert results[0][2] == {"dur negative": 1, "dur missing": 1, "ts missing": 1, "ts + dur not finite": 1}


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
        path = write(tmp_path / "bad.json", text)
        with pytest.raises(ValueError, match="not a readable trace: truncated or malformed JSON") as err:
            load(path, block, monkeypatch)
        assert str(path) in str(err.value) and "\n" not in str(err.value), label


def test_a_number_beyond_64_bits_in_a_field_not_read_is_no_error(tmp_path):
    event = '{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"External id": 100000000000000000000}, "x": 1e999}'
    trace = tl.load_trace(write(tmp_path / "t.json", '{"traceEvents": [' + event + "]}"))
    assert trace.events["name"].tolist() == ["a"]


def nested(levels: int) -> str:
    """An event whose args hold lists nested so that the document is ``levels`` deep."""
    inner = "[" * (levels - 4) + "]" * (levels - 4)
    return '{"traceEvents": [{"ph": "X", "name": "k", "ts": 0, "dur": 1, "args": {"shape": ' + inner + "}}]}"


@pytest.mark.parametrize("block", [1, 7, 64, framing.BLOCK])
def test_the_depth_limit_holds_at_every_block_size(tmp_path, monkeypatch, block):
    assert len(load(write(tmp_path / "ok.json", nested(MAX_DEPTH)), block, monkeypatch).events) == 1
    for text in (nested(MAX_DEPTH + 1), '{"x": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + ', "traceEvents": []}'):
        with pytest.raises(ValueError, match=f"JSON nested more than {MAX_DEPTH} levels deep"):
            load(write(tmp_path / "deep.json", text), block, monkeypatch)


@pytest.mark.parametrize("block", [2, framing.BLOCK])
def test_max_events_counts_across_segments(tmp_path, monkeypatch, block):
    events = [{"ph": "X", "name": f"k{i}", "ts": i, "dur": 1} for i in range(6)] + [{"ph": "M", "name": "m"}]
    path = write(tmp_path / "t.json", json.dumps({"traceEvents": events}))
    assert len(load(path, block, monkeypatch, max_events=7).events) == 6  # every element counts, kept or not
    with pytest.raises(ValueError, match="traceEvents must hold at most 6 events"):
        load(path, block, monkeypatch, max_events=6)


STRINGS = st.text(alphabet='[]{}",\\ax\u00e9', max_size=6)
VALUES = st.recursive(
    st.none() | st.integers(-5, 5) | STRINGS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
    max_leaves=12,
)


@given(st.lists(VALUES, max_size=5), st.data())
def test_segment_depths_agrees_with_the_byte_by_byte_scan(values, data):
    text = json.dumps(values, ensure_ascii=data.draw(st.booleans())).encode()
    cut = data.draw(st.integers(0, len(text)))
    prefix = text[:cut]
    depths, inside, (_, in_string, _) = structure(prefix, "x", max_depth=10**6)
    bracket = np.isin(np.frombuffer(prefix, np.uint8), list(b"[]{}")) & ~inside
    expected = depths[bracket].tolist()
    got = segment_depths(prefix)
    assert got[3] == in_string
    if len(expected) >= 2:
        assert got[:3] == (max(expected), min(expected[:-1]), expected[-1])
    elif expected:
        assert got[:3] == (expected[0],) * 3
