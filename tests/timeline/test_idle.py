"""gpucost_lab.timeline.idle: each stream's idle time by cause against HolisticTraceAnalysis's
``get_idle_time_breakdown`` on the real traces (tests/timeline/hta_figures.py) and hand computations on small traces.
"""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl

from .helpers import gpu, launch, load_events
from .hta_figures import HTA_IDLE, within_1_percent


# ----------------------------------------------------------------------------------------------- against HTA
@pytest.mark.parametrize("name", list(HTA_IDLE))
def test_idle_breakdown_matches_hta(real_traces, name):
    table = tl.idle_breakdown(real_traces[name])
    ours = {(r.stream, r.idle_category): r for r in table.itertuples()}
    assert {s for s, _ in ours} == {s for s, _ in HTA_IDLE[name]}
    for key, hta_us in HTA_IDLE[name].items():
        assert within_1_percent(ours[key].idle_us, hta_us), key
    for key, row in ours.items():  # HTA lists only categories with a gap: the others hold none
        if key not in HTA_IDLE[name]:
            assert row.idle_us == 0 and row.count == 0, key


# ----------------------------------------------------------------------------------------------- synthetic traces
# Stream 7: k1 runs [10, 20]. k2 launched at 5, before k1 ends, starts at 25: gap 5 < 30 us -> kernel wait 5.
# k3 launched at 8, starts at 100 after k2 ends at 40: gap 60 >= 30 and launched in time -> other 60.
# k4 launched at 150, after k3 ended at 110, starts at 160: gap 50 -> host wait 50.
# k5 has no launch in the trace, starts at 175 after k4 ends at 170: gap 5 -> kernel wait 5.
# A "Stream Sync" on stream 7 over [40, 100] is not an operation and changes nothing.
# Stream 9: a copy over [2, 4], then one launched at 50 running [60, 61]: gap 56 -> host wait 56.
# Stream 7 idle: 50 + 10 + 60 = 120 us; stream 9: 56 us.
SYNTHETIC = [
    launch(1, 0),
    gpu("k1", 7, 10, 10, 1),
    launch(2, 5),
    gpu("k2", 7, 25, 15, 2),
    launch(3, 8),
    gpu("k3", 7, 100, 10, 3),
    launch(4, 150),
    gpu("k4", 7, 160, 10, 4),
    gpu("k5", 7, 175, 5),
    gpu("Stream Sync", 7, 40, 60, 99, cat="cuda_sync"),
    launch(5, 1),
    gpu("Memcpy HtoD (Pinned -> Device)", 9, 2, 2, 5, cat="gpu_memcpy"),
    launch(6, 50),
    gpu("Memcpy HtoD (Pinned -> Device)", 9, 60, 1, 6, cat="gpu_memcpy"),
]


def test_idle_breakdown_by_hand(tmp_path):
    table = tl.idle_breakdown(load_events(tmp_path, SYNTHETIC))
    assert list(table.columns) == ["stream", "idle_category", "idle_us", "share", "count"]
    rows = {(r.stream, r.idle_category): (r.idle_us, r.count, r.share) for r in table.itertuples()}
    assert rows == {
        (7, "host_wait"): (50, 1, pytest.approx(50 / 120)),
        (7, "kernel_wait"): (10, 2, pytest.approx(10 / 120)),
        (7, "other"): (60, 1, pytest.approx(60 / 120)),
        (9, "host_wait"): (56, 1, 1.0),
        (9, "kernel_wait"): (0, 0, 0.0),
        (9, "other"): (0, 0, 0.0),
    }


def test_the_kernel_wait_threshold_moves_gaps_between_categories(tmp_path):
    trace = load_events(tmp_path, SYNTHETIC)
    wide = tl.idle_breakdown(trace, consecutive_kernel_delay_us=100).set_index(["stream", "idle_category"])
    assert wide.loc[(7, "kernel_wait"), "idle_us"] == 70 and wide.loc[(7, "other"), "idle_us"] == 0  # k3's 60 too
    narrow = tl.idle_breakdown(trace, consecutive_kernel_delay_us=5).set_index(["stream", "idle_category"])
    assert narrow.loc[(7, "kernel_wait"), "idle_us"] == 0 and narrow.loc[(7, "other"), "idle_us"] == 70  # 5 is not < 5


def test_idle_gaps_name_the_operations_either_side(tmp_path):
    gaps = tl.idle_gaps(load_events(tmp_path, SYNTHETIC))
    stream7 = gaps[gaps["stream"] == 7]
    assert list(stream7["before"]) == ["k1", "k2", "k3", "k4"] and list(stream7["after"]) == ["k2", "k3", "k4", "k5"]
    assert list(stream7["start_us"]) == [20, 40, 110, 170] and list(stream7["duration_us"]) == [5, 60, 50, 5]
    assert list(stream7["idle_category"]) == ["kernel_wait", "other", "host_wait", "kernel_wait"]


def test_work_launched_in_the_last_profiler_step_is_left_out(tmp_path):
    # steps [0, 100) and [100, 200); a runs [20, 30]; b launched at 40 runs [60, 70]: host wait 30;
    # c launched at 120, inside the last step, runs [130, 140]: with it, a further host wait of 60
    step = {"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "dur": 100, "args": {}}
    events = [
        {**step, "name": "ProfilerStep#1", "ts": 0},
        {**step, "name": "ProfilerStep#2", "ts": 100},
        launch(1, 10),
        gpu("a", 7, 20, 10, 1),
        launch(2, 40),
        gpu("b", 7, 60, 10, 2),
        launch(3, 120),
        gpu("c", 7, 130, 10, 3),
    ]
    trace = load_events(tmp_path, events)
    host = lambda t: t.set_index(["stream", "idle_category"]).loc[(7, "host_wait"), "idle_us"]  # noqa: E731
    assert host(tl.idle_breakdown(trace)) == 30
    assert host(tl.idle_breakdown(trace, include_last_step=True)) == 90
    assert list(tl.kernels_by_name(trace)["name"]) == ["a", "b"]
    assert tl.kernel_breakdown(trace, include_last_step=True)["total_us"].sum() == 30


def test_bad_threshold_and_top_are_refused(real_traces):
    trace = real_traces["a100_cuda_event_sync"]
    with pytest.raises(ValueError, match="consecutive_kernel_delay_us"):
        tl.idle_breakdown(trace, consecutive_kernel_delay_us=-1)
    with pytest.raises(ValueError, match="n"):
        tl.kernels_by_name(trace, 0)
