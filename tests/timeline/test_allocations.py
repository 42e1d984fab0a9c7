"""gpucost_lab.timeline.allocations: ``allocations_by_phase`` against the allocator's running total worked out by
hand on a small trace written here.
"""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.timeline.allocations import allocations_by_phase

from .helpers import X, write_trace


def test_allocations_by_phase_by_hand(tmp_path):
    def mem(ts, total):
        return {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": ts,
            "args": {"Total Allocated": total, "Total Reserved": 0, "Bytes": 0, "Device Type": 0},
        }

    # forward [100, 200]: +40 then +60; backward [200, 400]: peak 150 then down to 30; optimizer [400, 450]: none
    events = [
        X("user_annotation", "forward", 100, 100),
        X("user_annotation", "backward", 200, 200),
        X("user_annotation", "inner", 210, 10),
        X("user_annotation", "optimizer", 400, 50),
        mem(120, 40),
        mem(150, 100),
        mem(250, 150),
        mem(300, 30),
    ]
    table = allocations_by_phase(tl.load_trace(write_trace(tmp_path / "t.json", events)))
    assert table["phase"].tolist() == ["forward", "backward", "optimizer"]  # "inner" is nested: not a phase
    assert table[["at_start_bytes", "peak_bytes", "at_end_bytes", "change_bytes"]].values.tolist() == [
        [0, 100, 100, 100],
        [100, 150, 30, -70],
        [30, 30, 30, 0],
    ]
    assert table["start_us"].tolist() == [0.0, 100.0, 300.0]  # from the first event, the forward label at 100


def test_a_trace_without_memory_events_is_refused_naming_the_file_and_the_fix(tmp_path):
    trace = tl.load_trace(write_trace(tmp_path / "t.json", [X("user_annotation", "forward", 0, 10)]))
    with pytest.raises(
        ValueError, match=r"no \[memory\] events on device type 0; profile with profile_memory=True"
    ) as err:
        allocations_by_phase(trace)
    assert str(trace.path) in str(err.value)
