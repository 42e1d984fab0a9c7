"""gpucost_lab.timeline.views (busy and idle time, gaps, sync points, copies, top ops, memory, phases, steps and
annotations) against HolisticTraceAnalysis's temporal breakdown and independently derived figures.

Sources of truth: HTA's figures (tests/timeline/hta_figures.py), direct scans of the real traces' JSON (plain loops,
not the module's vectorized code), hand computations on small traces written here, torch.profiler traces with a
known injected structure, hypothesis properties, and the hand count of AlexNet's parameters (tests/timeline/helpers.py).
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
import time
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from gpucost_lab import timeline as tl
from gpucost_lab.timeline import example_trace, memcpy_summary, sync_points

from .helpers import ALEXNET, ALEXNET_TENSORS, CPU_SMALL, EVENT_SYNC, SAMPLED, X, complete, kernel, write_trace
from .hta_figures import HTA_TEMPORAL

HOST_SYNC = {
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "aten::item",
    "aten::_local_scalar_dense",
}


def union_length(intervals):
    """Covered length of a set of (start, end) intervals: a plain sweep over sorted starts."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    return total + (cur_end - cur_start if cur_end is not None else 0.0)


# ----------------------------------------------------------------------------------------------- against HTA
@pytest.mark.parametrize("path", [SAMPLED, ALEXNET], ids=["sampled_rank0_gpu", "a100_alexnet_train"])
def test_busy_and_idle_agree_with_hta_temporal_breakdown_within_1_percent(path):
    b = tl.busy_idle(tl.load_trace(path))
    assert b.basis == "gpu"
    for key, reference in HTA_TEMPORAL[path].items():
        assert getattr(b, key) == pytest.approx(reference, rel=0.01), key


def test_include_last_step_is_the_union_of_every_gpu_interval():
    events = complete(SAMPLED)
    gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    b = tl.busy_idle(tl.load_trace(SAMPLED), include_last_step=True)
    assert b.busy_us == pytest.approx(union_length(gpu))
    assert b.start_us == min(s for s, _ in gpu) and b.end_us == max(e for _, e in gpu)


def test_last_step_rule_by_hand(tmp_path):
    # step 1 [0, 100): launches k1 (runs 10..30) and k2 (launched at 90, runs 95..120, past the step's end)
    # step 2 [100, 200): launches k3 (runs 150..160). Default: k1 + k2 -> busy 20 + 25 = 45, span 10..120 = 110.
    events = [
        X("user_annotation", "ProfilerStep#1", 0, 100),
        X("user_annotation", "ProfilerStep#2", 100, 100),
        X("cuda_runtime", "cudaLaunchKernel", 5, 2, correlation=1),
        kernel("k1", 10, 20, correlation=1),
        X("cuda_runtime", "cudaLaunchKernel", 90, 2, correlation=2),
        kernel("k2", 95, 25, correlation=2),
        X("cuda_runtime", "cudaLaunchKernel", 140, 2, correlation=3),
        kernel("k3", 150, 10, correlation=3),
    ]
    trace = tl.load_trace(write_trace(tmp_path / "t.json", events))
    assert tl.busy_idle(trace) == tl.BusyIdle(span_us=110, busy_us=45, idle_us=65, start_us=10, end_us=120, basis="gpu")
    every = tl.busy_idle(trace, include_last_step=True)  # + k3: busy 55, span 10..160 = 150
    assert (every.busy_us, every.span_us, every.idle_us) == (55, 150, 95)


# ----------------------------------------------------------------------------------------------- the real traces
def scan_sync_points(path):
    """Outermost host sync events (not inside another on the same thread) + device syncs overlapping none."""
    events = complete(path)
    host = [e for e in events if e["cat"] in ("cpu_op", "cuda_runtime") and e["name"] in HOST_SYNC]

    def inside(i, j):  # host[i] lies within host[j] (of two identical intervals, the later one in the file)
        a, b = host[i], host[j]
        same = (a["ts"], a["dur"]) == (b["ts"], b["dur"])
        return (
            i != j
            and a["tid"] == b["tid"]
            and b["ts"] <= a["ts"]
            and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
            and (j < i or not same)
        )

    outer = [h for i, h in enumerate(host) if not any(inside(i, j) for j in range(len(host)))]
    device = [e for e in events if e["cat"] == "cuda_sync" or (e["cat"] == "gpu_memcpy" and "DtoH" in e["name"])]
    alone = [
        d for d in device if not any(h["ts"] <= d["ts"] + d["dur"] and d["ts"] <= h["ts"] + h["dur"] for h in host)
    ]
    return sorted([(h["ts"], h["name"]) for h in outer] + [(d["ts"], d["name"]) for d in alone])


@pytest.mark.parametrize("path", [ALEXNET, EVENT_SYNC, SAMPLED], ids=lambda p: p.name.split(".")[0])
def test_sync_points_match_a_direct_scan(path):
    points = tl.sync_points(tl.load_trace(path))
    assert list(points.columns) == ["name", "ts_us", "duration_us", "lane"]
    assert list(zip(points["ts_us"], points["name"])) == scan_sync_points(path)


def test_cuda_event_sync_fixture_sync_points_by_hand():
    # Read off the fixture's 33 complete events: aten::is_nonzero > aten::item > aten::_local_scalar_dense
    # (cudaMemcpyAsync, its DtoH memcpy and a cudaStreamSynchronize + "Stream Sync" inside) is one point;
    # cudaEventSynchronize with its "Event Sync"; a lone "Event Sync" under cudaEventQuery (not a blocking call);
    # cudaDeviceSynchronize with its "Context Sync".
    points = tl.sync_points(tl.load_trace(EVENT_SYNC))
    assert list(points["name"]) == ["aten::item", "cudaEventSynchronize", "Event Sync", "cudaDeviceSynchronize"]
    assert list(points["duration_us"]) == [45, 34, 2, 8]


def test_alexnet_sync_point_counts_by_name():
    # 16 cudaStreamSynchronize (each holding a "Stream Sync"), 5 cudaDeviceSynchronize (each holding a
    # "Context Sync"), and the 20 "Stream Wait Event" cuda_sync events, which no host sync overlaps.
    names = tl.sync_points(tl.load_trace(ALEXNET))["name"].value_counts().to_dict()
    assert names == {"cudaStreamSynchronize": 16, "cudaDeviceSynchronize": 5, "Stream Wait Event": 20}


def test_memcpy_summary_matches_a_direct_scan():
    expected = {}
    for e in complete(ALEXNET) + complete(SAMPLED):
        if e["cat"] in ("gpu_memcpy", "gpu_memset"):
            key = "memset" if e["cat"] == "gpu_memset" else e["name"].split()[1]
            row = expected.setdefault(key, [0, 0.0, 0])
            row[0], row[1], row[2] = row[0] + 1, row[1] + e["dur"], row[2] + e["args"]["bytes"]
    got = {}
    for path in (ALEXNET, SAMPLED):
        for r in tl.memcpy_summary(tl.load_trace(path)).to_dict("records"):
            row = got.setdefault(r["direction"], [0, 0.0, 0])
            row[0], row[1], row[2] = row[0] + r["count"], row[1] + r["total_us"], row[2] + r["total_bytes"]
    assert got == expected
    alexnet = tl.memcpy_summary(tl.load_trace(ALEXNET))
    assert list(alexnet["direction"]) == ["HtoD", "memset"]  # 16 pageable HtoD copies, 3 memsets
    assert list(alexnet["count"]) == [16, 3]


def test_top_ops_are_kernels_ranked_by_total_time():
    totals, counts = {}, {}
    for e in complete(ALEXNET):
        if e["cat"] == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0) + e["dur"]
            counts[e["name"]] = counts.get(e["name"], 0) + 1
    ranked = sorted(totals, key=lambda n: (-totals[n], n))[:3]
    table = tl.top_ops(tl.load_trace(ALEXNET), n=3)
    assert list(table.columns) == ["name", "kind", "count", "total_us", "share"]
    assert list(table["name"]) == ranked and set(table["kind"]) == {"kernel"}
    assert list(table["count"]) == [counts[n] for n in ranked]
    assert list(table["share"]) == pytest.approx([totals[n] / sum(totals.values()) for n in ranked])


def test_steps_and_phases_of_the_gpu_fixtures():
    # event_sync: one ProfilerStep#100 of 3,154 us; sampled: ProfilerStep#551 and #552
    assert tl.steps(tl.load_trace(EVENT_SYNC)).to_dict("records") == [
        {"step": 100, "start_us": 1707417525509335.0, "duration_us": 3154.0}
    ]
    sampled = tl.load_trace(SAMPLED)
    assert list(tl.steps(sampled)["step"]) == [551, 552]
    assert not tl.phases(sampled)["name"].str.startswith("ProfilerStep").any()
    assert tl.phases(tl.load_trace(EVENT_SYNC)).empty  # its only user annotation is the step


def test_cpu_only_fixture_phases_from_its_user_annotations():
    trace = tl.load_trace(CPU_SMALL)
    assert trace.device == "cpu"
    # ten gloo:all_reduce annotations on two threads; durations read from the file and added by hand:
    # 173209.713 + 180293.695 + 380183.168 + 162768.957 + 178343.122
    # + 170471.258 + 175412.585 + 380583.378 + 156666.049 + 177523.993 = 2,135,455.918 us
    table = tl.phases(trace)
    assert table["name"].tolist() == ["gloo:all_reduce"] and table["count"].tolist() == [10]
    assert table["total_us"].iloc[0] == pytest.approx(2_135_455.918)
    assert tl.steps(trace)["step"].tolist() == [551]
    assert tl.top_ops(trace)["name"].tolist() == ["aten::empty"]  # its only four cpu_ops
    assert tl.peak_memory_bytes(trace) is None


# ----------------------------------------------------------------------------------------------- fresh CPU traces
def profiled(tmp_path, body, steps=3, **kw):
    with profile(
        activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=steps, repeat=1), **kw
    ) as prof:
        for _ in range(2 + steps):
            body()
            prof.step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return tl.load_trace(path)


def test_injected_data_sleeps_are_gaps_and_a_phase_and_steps_are_not_phases(tmp_path):
    x = torch.randn(64, 64)

    def body():
        with record_function("data"):
            time.sleep(0.02)  # 20 ms with no operator running on the main thread
        (x @ x).relu().sum()

    trace = profiled(tmp_path, body)
    widest = tl.gaps(trace)
    assert list(widest.columns) == ["start_us", "duration_us", "before", "after"]
    assert widest["duration_us"].is_monotonic_decreasing
    # each sleep ends where the next matmul starts; a sleep never returns early, so every such gap is >= 20 ms.
    # Only lower bounds on real time here: a busy machine stretches the gaps, it cannot shrink them.
    data_gaps = widest[widest["after"] == "aten::matmul"]
    assert len(data_gaps) == 3 and (data_gaps["duration_us"] >= 20_000 - 1).all()
    phase = tl.phases(trace).set_index("name")
    assert phase.loc["data", "count"] == 3
    assert phase.loc["data", "total_us"] >= 60_000  # 3 x sleep(0.02)
    # each "data" range lies inside the gap that ends at its matmul, so the ranges add up to no more than the gaps
    assert phase.loc["data", "total_us"] <= data_gaps["duration_us"].sum() + 1
    assert not phase.index.str.startswith("ProfilerStep").any()
    assert len(tl.steps(trace)) == 3
    b = tl.busy_idle(trace)
    assert b.basis == "main thread" and b.idle_us >= 60_000 - 1
    assert tl.analyze(trace)["steps"] == 3


@pytest.mark.parametrize("n_items", [1, 7])
def test_n_item_calls_are_n_sync_points(tmp_path, n_items):
    t = torch.arange(10.0)

    def body():
        for _ in range(n_items):
            t.sum().item()  # aten::item wrapping aten::_local_scalar_dense: one sync point each

    trace = profiled(tmp_path, body, steps=1)
    points = tl.sync_points(trace)
    assert len(points) == n_items
    assert set(points["name"]) == {"aten::item"}
    assert len(tl.analyze(trace)["sync_points"]) == n_items


def test_peak_memory_covers_a_known_allocation(tmp_path):
    def body():
        big = torch.ones(1_000_000)  # 4,000,000 bytes of float32, freed at the end of the step
        big.sum()

    trace = profiled(tmp_path, body, steps=2, profile_memory=True)
    peak = tl.peak_memory_bytes(trace)
    assert 4_000_000 <= peak < 4_100_000  # the tensor plus a few scalars
    curve = tl.memory_over_time(trace, device_type=0)
    assert list(curve.columns) == ["ts_us", "total_allocated_bytes"]
    assert curve["ts_us"].is_monotonic_increasing and int(curve["total_allocated_bytes"].max()) == peak
    assert tl.memory_over_time(trace, device_type=1).empty


# ----------------------------------------------------------------------------------------------- small hand traces
def test_nested_host_syncs_and_their_device_events_are_one_point(tmp_path):
    events = [
        X("cpu_op", "aten::item", 100, 50),
        X("cpu_op", "aten::_local_scalar_dense", 102, 45),
        X("cuda_runtime", "cudaMemcpyAsync", 104, 20, correlation=5),
        X("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 110, 4, tid=7, pid=0, stream=7, bytes=4),
        X("cuda_runtime", "cudaStreamSynchronize", 126, 20, correlation=6),
        X("cuda_sync", "Stream Sync", 127, 18, tid=7, pid=0, stream=7),
        kernel("k", 0, 90),
        # a DtoH copy no host sync overlaps: a point of its own, on its stream
        X("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 300, 5, tid=7, pid=0, stream=7, bytes=8),
    ]
    points = tl.sync_points(tl.load_trace(write_trace(tmp_path / "t.json", events)))
    assert points.to_dict("records") == [
        {"name": "aten::item", "ts_us": 100, "duration_us": 50, "lane": "thread 1"},
        {"name": "Memcpy DtoH (Device -> Pinned)", "ts_us": 300, "duration_us": 5, "lane": "stream 7"},
    ]


def test_gaps_name_the_operations_around_them(tmp_path):
    # streams 7 and 20: a [0, 10) and b [5, 30) overlap -> busy [0, 30); c [50, 60); d [100, 101)
    events = [
        kernel("a", 0, 10),
        kernel("b", 5, 25, stream=20),
        kernel("c", 50, 10),
        kernel("d", 100, 1),
        X("cpu_op", "aten::mm", 0, 200),
    ]
    trace = tl.load_trace(write_trace(tmp_path / "t.json.gz", events, gz=True))
    assert tl.gaps(trace).to_dict("records") == [
        {"start_us": 60, "duration_us": 40, "before": "c", "after": "d"},
        {"start_us": 30, "duration_us": 20, "before": "b", "after": "c"},
    ]
    assert tl.gaps(trace, top=1)["duration_us"].tolist() == [40]
    assert tl.gaps(trace, min_us=25)["duration_us"].tolist() == [40]
    assert tl.busy_idle(trace) == tl.BusyIdle(span_us=101, busy_us=41, idle_us=60, start_us=0, end_us=101, basis="gpu")
    # window [20, 55]: busy [20, 30) + [50, 55) = 15 of a 35 us span
    w = tl.busy_idle(trace, start_us=20, end_us=55)
    assert (w.span_us, w.busy_us, w.idle_us, w.start_us, w.end_us) == (35, 15, 20, 20, 55)
    assert tl.load_trace(trace.path, start_us=20, end_us=55).events["name"].tolist() == ["aten::mm", "b", "c"]


def test_main_thread_is_the_one_with_most_step_and_op_time(tmp_path):
    # thread 2 holds 100 us of ops, thread 1 holds 30 us: busy on thread 2 is [0, 40) + [70, 130) = 100 of 130
    events = [
        X("cpu_op", "aten::a", 0, 30, tid=1),
        X("cpu_op", "aten::b", 0, 40, tid=2),
        X("cpu_op", "aten::c", 70, 60, tid=2),
        X("cpu_op", "aten::c_inner", 80, 10, tid=2),
    ]
    trace = tl.load_trace(write_trace(tmp_path / "t.json", events, array_format=True))
    b = tl.busy_idle(trace)
    assert (b.basis, b.span_us, b.busy_us, b.idle_us) == ("main thread", 130, 100, 30)
    assert tl.gaps(trace).to_dict("records") == [
        {"start_us": 40, "duration_us": 30, "before": "aten::b", "after": "aten::c"}
    ]


def test_a_gap_is_named_by_the_outermost_ops_around_it(tmp_path):
    # item [0, 10) wraps _local_scalar_dense [2, 10) (same end); matmul [30, 50) wraps mm [30, 45)
    events = [
        X("cpu_op", "aten::item", 0, 10),
        X("cpu_op", "aten::_local_scalar_dense", 2, 8),
        X("cpu_op", "aten::mm", 30, 15),
        X("cpu_op", "aten::matmul", 30, 20),
    ]
    trace = tl.load_trace(write_trace(tmp_path / "t.json", events))
    assert tl.gaps(trace).to_dict("records") == [
        {"start_us": 10, "duration_us": 20, "before": "aten::item", "after": "aten::matmul"}
    ]


def memory(ts, total, device_type):
    return {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "args": {"Total Allocated": total, "Bytes": 1, "Device Type": device_type},
    }


def test_gpu_side_annotations_count_once_and_peak_memory_prefers_cuda(tmp_path):
    # a CUDA export mirrors each record_function range and each ProfilerStep on the GPU (gpu_user_annotation)
    events = [
        X("user_annotation", "ProfilerStep#4", 0, 100),
        X("user_annotation", "fwd", 10, 30),
        X("gpu_user_annotation", "ProfilerStep#4", 5, 100, tid=7, pid=0, stream=7),
        X("gpu_user_annotation", "fwd", 15, 30, tid=7, pid=0, stream=7),
        kernel("k", 15, 30),
        memory(20, 300, 0),
        memory(30, 120, 1),
        memory(40, 80, 1),
        memory(50, 10, 0),
    ]
    trace = tl.load_trace(write_trace(tmp_path / "t.json", events))
    assert tl.steps(trace).to_dict("records") == [{"step": 4, "start_us": 0, "duration_us": 100}]
    assert tl.phases(trace).to_dict("records") == [{"name": "fwd", "count": 1, "total_us": 30}]
    assert tl.peak_memory_bytes(trace) == 120 and tl.peak_memory_bytes(trace, device_type=0) == 300
    assert tl.memory_over_time(trace, device_type=1)["total_allocated_bytes"].tolist() == [120, 80]
    assert len(tl.memory_over_time(trace)) == 4
    rows = trace.events.set_index("ts_us")
    assert rows.loc[20.0, "kind"] == "memory" and rows.loc[20.0, "bytes"] == 1 and rows.loc[20.0, "dur_us"] == 0
    assert rows.loc[20.0, "device_type"] == 0 and rows.loc[30.0, "total_allocated_bytes"] == 120


# ----------------------------------------------------------------------------------------------- bad input
def test_an_empty_window_raises_naming_the_file():
    trace = tl.load_trace(EVENT_SYNC)
    for call in (
        lambda: tl.load_trace(EVENT_SYNC, start_us=0, end_us=1),
        lambda: tl.busy_idle(trace, end_us=1),
        lambda: tl.gaps(trace, start_us=1e18),
        lambda: tl.analyze(trace, end_us=1),
    ):
        with pytest.raises(ValueError, match="no events in the window") as err:
            call()
        assert str(EVENT_SYNC) in str(err.value)


def test_bad_arguments_name_field_value_and_what_is_allowed():
    trace = tl.load_trace(EVENT_SYNC)
    for call, field in [
        (lambda: tl.busy_idle(trace, start_us=10, end_us=5), "end_us"),
        (lambda: tl.load_trace(EVENT_SYNC, start_us=math.nan), "start_us"),
        (lambda: tl.gaps(trace, top=0), "top"),
        (lambda: tl.gaps(trace, min_us=-1), "min_us"),
        (lambda: tl.top_ops(trace, n=0), "n"),
        (lambda: tl.analyze(trace, top=0), "top"),
        (lambda: tl.memory_over_time(trace, device_type=-1), "device_type"),
    ]:
        with pytest.raises(ValueError, match=field):
            call()


def test_a_cpu_trace_without_cpu_ops_has_no_busy_basis(tmp_path):
    trace = tl.load_trace(write_trace(tmp_path / "t.json", [X("user_annotation", "ProfilerStep#3", 0, 35)]))
    with pytest.raises(ValueError, match="no main-thread cpu_op events") as err:
        tl.busy_idle(trace)
    assert str(trace.path) in str(err.value)
    result = tl.analyze(trace)
    assert (result["span_ms"], result["busy_ms"], result["gaps"], result["steps"]) == (None, None, [], 1)


# ----------------------------------------------------------------------------------------------- properties
intervals = st.lists(
    st.tuples(st.integers(0, 500), st.integers(0, 60), st.sampled_from([7, 13, 20])), min_size=1, max_size=40
)


@given(intervals, st.booleans())
def test_busy_plus_idle_is_the_span_and_busy_is_the_covered_length(spans, on_gpu):
    if on_gpu:
        events = [kernel(f"k{i}", ts, dur, stream=s) for i, (ts, dur, s) in enumerate(spans)]
    else:
        events = [X("cpu_op", f"op{i}", ts, dur) for i, (ts, dur, _) in enumerate(spans)]
    with tempfile.TemporaryDirectory() as tmp:
        trace = tl.load_trace(write_trace(Path(tmp) / "t.json", events))
        b, widest = tl.busy_idle(trace), tl.gaps(trace)
    covered = {t for ts, dur, _ in spans for t in range(ts, ts + dur)}  # integer microsecond cells
    assert b.busy_us == len(covered)
    assert b.busy_us + b.idle_us == b.span_us and 0 <= b.busy_us <= b.span_us
    assert b.span_us == max(ts + dur for ts, dur, _ in spans) - min(ts for ts, _, _ in spans)
    assert widest["duration_us"].sum() == b.idle_us


# ----------------------------------------------------------------------------------------------- annotations
def test_annotations_by_hand_nesting_and_times_from_the_first_event(tmp_path):
    # A holds B on thread 1; C on thread 2 overlaps A without nesting in it (another thread); D follows A.
    events = [
        X("cpu_op", "aten::mm", 1000, 5),
        X("user_annotation", "A", 1010, 100),
        X("user_annotation", "B", 1020, 50),
        X("user_annotation", "C", 1050, 100, tid=2),
        X("user_annotation", "D", 1200, 10),
        X("user_annotation", "ProfilerStep#1", 1000, 300),
    ]
    trace = tl.load_trace(write_trace(tmp_path / "t.json", events))
    table = tl.annotations(trace)
    assert table.to_dict("list") == {
        "name": ["A", "B", "C", "D"],
        "start_us": [10.0, 20.0, 50.0, 200.0],
        "duration_us": [100.0, 50.0, 100.0, 10.0],
        "depth": [0, 1, 0, 0],
    }


def test_the_alexnet_trace_s_warm_up_forward_against_its_measured_one():
    # the file's own annotations: the outer warm-up forward lasts 12,757.093 ms, the inner measured one 36.356 ms
    table = tl.annotations(tl.load_trace(tl.example_trace("a100_alexnet_train")))
    forwards = table[table["name"].str.endswith("forward]")]
    outer = forwards.groupby(forwards["name"].str.contains("warmup"))["duration_us"].max()
    inner = forwards.groupby(forwards["name"].str.contains("warmup"))["duration_us"].min()
    assert (outer[True], inner[False]) == (12_757_093.0, 36_356.0)


# ----------------------------------------------------------------------------------------------- weight upload
# The a100_alexnet_train trace's 16 pageable copies are the one-time upload of the weights (chapter 02, section 5;
# the hand count of the parameters: ALEXNET_TENSORS). The same trace's 20 "Stream Wait Event"s are device-side:
# the host's cudaStreamWaitEvent calls return at once.


def test_the_pageable_bytes_are_the_parameter_bytes(real_traces):
    trace = real_traces["a100_alexnet_train"]
    summary = memcpy_summary(trace)
    htod = summary[summary["direction"] == "HtoD"]
    assert int(htod["total_bytes"].sum()) == 61_100_840 * 4 == 244_403_360
    assert int(htod["count"].sum()) == len(ALEXNET_TENSORS)


def test_the_16_stream_syncs_are_the_16_blocking_uploads(real_traces):
    trace = real_traces["a100_alexnet_train"]
    # each upload is aten::to -> cudaMemcpyAsync -> cudaStreamSynchronize: a blocking copy from pageable memory
    ev = trace.events
    memcpy_calls = ev[(ev["kind"] == "runtime") & (ev["name"] == "cudaMemcpyAsync")].sort_values("ts_us")
    syncs = ev[(ev["kind"] == "runtime") & (ev["name"] == "cudaStreamSynchronize")].sort_values("ts_us")
    assert len(memcpy_calls) == len(syncs) == 16
    ends = (memcpy_calls["ts_us"] + memcpy_calls["dur_us"]).to_numpy()
    starts = syncs["ts_us"].to_numpy()
    assert (starts >= ends).all() and (starts[:-1] < memcpy_calls["ts_us"].to_numpy()[1:]).all()  # interleaved
    assert (sync_points(trace)["name"] == "cudaStreamSynchronize").sum() == 16


def test_a_stream_wait_event_orders_streams_on_the_device_and_the_host_does_not_wait(real_traces):
    trace = real_traces["a100_alexnet_train"]
    # each device-side "Stream Wait Event" is the work of one cudaStreamWaitEvent call (same correlation id); the
    # host's call returns within a few microseconds (it queues the wait: CUDA Runtime API, cudaStreamWaitEvent),
    # while the stream it names waits on another stream's event
    with gzip.open(example_trace("a100_alexnet_train"), "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in raw if e["name"] == "cudaStreamWaitEvent"}
    waits = [e for e in raw if e["name"] == "Stream Wait Event"]
    assert len(waits) == 20 and all(w["args"]["correlation"] in calls for w in waits)
    assert max(c["dur"] for c in calls.values()) <= 5  # microseconds: the host is not held
    on_device = sync_points(trace)
    assert (on_device["name"] == "Stream Wait Event").sum() == 20
    assert set(on_device.loc[on_device["name"] == "Stream Wait Event", "lane"]) <= {"stream 7", "stream 20"}
