"""gpucost_lab.timeline.limits: the nesting depth and event count limits at every block size, and ``segment_depths``
against the byte-by-byte ``structure`` scan (hypothesis), on documents written in the tests.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.timeline import framing
from gpucost_lab.timeline.limits import MAX_DEPTH, segment_depths, structure

from .helpers import load_in_blocks, write_file


def nested(levels: int) -> str:
    """An event whose args hold lists nested so that the document is ``levels`` deep."""
    inner = "[" * (levels - 4) + "]" * (levels - 4)
    return '{"traceEvents": [{"ph": "X", "name": "k", "ts": 0, "dur": 1, "args": {"shape": ' + inner + "}}]}"


@pytest.mark.parametrize("block", [1, 7, 64, framing.BLOCK])
def test_the_depth_limit_holds_at_every_block_size(tmp_path, monkeypatch, block):
    assert len(load_in_blocks(write_file(tmp_path / "ok.json", nested(MAX_DEPTH)), block, monkeypatch).events) == 1
    for text in (nested(MAX_DEPTH + 1), '{"x": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + ', "traceEvents": []}'):
        with pytest.raises(ValueError, match=f"JSON nested more than {MAX_DEPTH} levels deep"):
            load_in_blocks(write_file(tmp_path / "deep.json", text), block, monkeypatch)


@pytest.mark.parametrize("block", [2, framing.BLOCK])
def test_max_events_counts_across_segments(tmp_path, monkeypatch, block):
    events = [{"ph": "X", "name": f"k{i}", "ts": i, "dur": 1} for i in range(6)] + [{"ph": "M", "name": "m"}]
    path = write_file(tmp_path / "t.json", json.dumps({"traceEvents": events}))
    assert len(load_in_blocks(path, block, monkeypatch, max_events=7).events) == 6  # every element counts, kept or not
    with pytest.raises(ValueError, match="traceEvents must hold at most 6 events"):
        load_in_blocks(path, block, monkeypatch, max_events=6)


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
