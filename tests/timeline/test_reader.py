"""gpucost_lab.timeline.reader: the fast (msgspec) and exact (ijson) paths give the same rows, skip counts and input
shapes, against rows derived by hand from the tiny traces written in the tests.
"""

from __future__ import annotations

import gzip
import json
import math
from io import BytesIO

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.timeline import framing, reader
from gpucost_lab.timeline.framing import segments
from gpucost_lab.timeline.text import detail_line

from .helpers import EXPECTED, NA, SAMPLED, TRICKY, as_dict, load_in_blocks, write_file

# ----------------------------------------------------------------------------------------------- the two paths
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
    path = write_file(tmp_path / "t.json", json.dumps({"traceEvents": TRICKY + UNUSUAL}))
    trace = load_in_blocks(path, block, monkeypatch)
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


def test_a_number_beyond_64_bits_in_a_field_not_read_is_no_error(tmp_path):
    event = '{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"External id": 100000000000000000000}, "x": 1e999}'
    trace = tl.load_trace(write_file(tmp_path / "t.json", '{"traceEvents": [' + event + "]}"))
    assert trace.events["name"].tolist() == ["a"]


# ----------------------------------------------------------------------------------------------- input shapes
def test_fast_and_exact_paths_read_the_same_input_dims():
    ops = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
         "args": {"Input Dims": [[2, 3], [3, 4]]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 4, "dur": 1,
         "args": {"Input Dims": [[[1, 2], [1, 2]], []]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 7, "dur": 1,
         "args": {"stream": 7, "Input Dims": [[9]]}},
    ]  # fmt: skip
    segment = json.dumps(ops, indent=2).encode()
    texts = []
    for path in ("fast", "exact"):
        codes = {k: reader._Codes(reader._text) for k in ("name", "cat")}
        codes.update({k: reader._Codes() for k in ("pid", "tid", "lane")})
        if path == "fast":
            _, cols, _, _ = reader._fast_columns(segment, -1e18, 1e18, reader._Sorts(codes))
        else:
            _, cols, _, _ = reader._exact_columns(segment, -1e18, 1e18, codes)
        texts.append([codes["input_dims"].texts[c] for c in cols["input_dims"].tolist()])
    assert texts[0] == texts[1] == ["[[2,3],[3,4]]", "[[[1,2],[1,2]],[]]", "", ""]  # a kernel has no shapes


def test_a_huge_signature_is_cut(tmp_path):
    dims = [[i, i] for i in range(2000)]
    path = tmp_path / "t.json"
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
    path.write_text(json.dumps({"traceEvents": [{**event, "args": {"Input Dims": dims}}]}))
    text = tl.load_trace(path).events["input_dims"].iloc[0]
    assert len(text) == reader.MAX_DIMS_CHARS and text.endswith("...")
    out = tl.analyze(path)
    assert isinstance(out["top_ops"][0]["input_shapes"][0]["input_shapes"], str)
    assert detail_line(out["top_ops"][0])  # still shown, as text


def test_segments_of_a_real_trace_read_shapes_without_errors():
    raw = gzip.open(SAMPLED).read()
    assert sum(1 for _ in segments(BytesIO(raw), "x")) >= 1
    trace = tl.load_trace(SAMPLED)
    assert (trace.events.loc[trace.events["kind"] == "cpu_op", "input_dims"] != "").any()
