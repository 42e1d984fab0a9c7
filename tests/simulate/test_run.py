"""gpucost_lab.simulate.run: the simulated training process, well formed and each knob moving what it should.

Structure is checked by plain scans of the events written; busy time, gaps, sync points and phases are measured on
the written file by ``gpucost_lab.timeline``; kernel times against the roofline by hand.
"""

import dataclasses
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab import timeline
from gpucost_lab.simulate.config import KERNEL_LATENCY_US, ROOFLINE_EFFICIENCY, SCENARIOS, SimConfig
from gpucost_lab.simulate.write import phase_totals_us, simulate

from .helpers import SMALL, events, load, ns


def span_per_step_us(trace: timeline.Trace, steps: int) -> float:
    return timeline.busy_idle(trace, include_last_step=True).span_us / steps


def busy_fraction(trace: timeline.Trace) -> float:
    b = timeline.busy_idle(trace)
    return b.busy_us / b.span_us


# ----------------------------------------------------------------------------------------------- structure
def check_structure(trace: dict, config: SimConfig) -> None:
    launches = {e["args"]["correlation"]: e for e in events(trace, "cuda_runtime", "cudaLaunchKernel")}
    kernels = events(trace, "kernel")
    # every kernel pairs with exactly one launch, and every launch with one kernel
    corr = Counter(k["args"]["correlation"] for k in kernels)
    assert set(corr) == set(launches) and set(corr.values()) == {1}
    for k in kernels:
        launch = launches[k["args"]["correlation"]]
        assert ns(k["ts"]) >= ns(launch["ts"]) + ns(launch["dur"])
        assert (k["args"]["stream"], k["args"]["device"], k["tid"]) == (7, 0, 7)
    # on the stream, nothing starts before the previous operation ends
    gpu = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events(trace)
        if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")
    )
    assert all(start >= prev_end for (_, prev_end), (start, _) in zip(gpu, gpu[1:]))
    # one ProfilerStep#k per step, k = 0 .. steps - 1, back to back on one thread
    marks = sorted(events(trace, "user_annotation"), key=lambda e: e["ts"])
    marks = [e for e in marks if e["name"].startswith("ProfilerStep#")]
    assert [e["name"] for e in marks] == [f"ProfilerStep#{k}" for k in range(config.steps)]
    assert all(ns(a["ts"]) + ns(a["dur"]) == ns(b["ts"]) for a, b in zip(marks, marks[1:]))
    # events (after the metadata) in time order
    timed = [e for e in trace["traceEvents"] if e["ph"] != "M"]
    assert all(a["ts"] <= b["ts"] for a, b in zip(timed, timed[1:]))
    # memory: each event's total is the previous total plus its bytes; every step gives back what it took
    mem = [e["args"] for e in trace["traceEvents"] if e.get("name") == "[memory]"]
    params = config.layers * (config.hidden**2 + config.hidden)
    static_bytes = params * (4 + 4 + 8)  # weight + grad + Adam's two moments, fp32 (or bf16 x2 + fp32 master)
    totals = [static_bytes] + [m["Total Allocated"] for m in mem]
    assert all(t1 == t0 + m["Bytes"] for t0, t1, m in zip(totals, totals[1:], mem))
    assert totals[-1] == static_bytes and {m["Device Type"] for m in mem} == {1}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_is_well_formed(name):
    check_structure(simulate(SCENARIOS[name]), SCENARIOS[name])


@given(
    seed=st.integers(0, 2**32),
    steps=st.integers(1, 4),
    workers=st.integers(0, 3),
    pin=st.booleans(),
    item=st.booleans(),
    every=st.integers(0, 3),
    mixed=st.booleans(),
    layers=st.integers(1, 3),
)
def test_any_small_config_is_well_formed(seed, steps, workers, pin, item, every, mixed, layers):
    config = SimConfig(
        seed=seed,
        steps=steps,
        num_workers=workers,
        pin_memory=pin,
        item_sync=item,
        eval_every=every,
        eval_batches=2,
        checkpoint_every=every,
        mixed_precision=mixed,
        layers=layers,
        hidden=128,
        batch_size=16,
    )
    check_structure(simulate(config), config)


def test_item_sync_reads_the_loss_once_per_step_inside_each_step():
    config = SCENARIOS["item_sync"]
    trace = simulate(config)
    items = events(trace, "cpu_op", "aten::item")
    assert len(items) == config.steps
    marks = [e for e in events(trace, "user_annotation") if e["name"].startswith("ProfilerStep#")]
    for step in marks:
        inside = [i for i in items if ns(step["ts"]) <= ns(i["ts"]) < ns(step["ts"]) + ns(step["dur"])]
        assert len(inside) == 1
    # the sync lasts until the stream has drained: it ends after the 4-byte copy back ends
    copies = [e for e in events(trace, "gpu_memcpy") if e["name"] == "Memcpy DtoH (Device -> Pageable)"]
    syncs = events(trace, "cuda_runtime", "cudaStreamSynchronize")
    assert len(copies) == len(syncs) == config.steps
    assert all(c["args"]["bytes"] == 4 for c in copies)
    assert all(ns(s["ts"]) + ns(s["dur"]) >= ns(c["ts"]) + ns(c["dur"]) for s, c in zip(syncs, copies))


def test_trace_header_names_the_gpu_and_its_memory():
    trace = simulate(SMALL)
    assert trace["schemaVersion"] == 1
    assert trace["deviceProperties"] == [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 80 * 10**9}]
    decodes = events(simulate(dataclasses.replace(SMALL, steps=8)), "cpu_op", "decode_batch")
    assert Counter(e["pid"] for e in decodes) == {4300: 2, 4301: 2, 4302: 2, 4303: 2}  # round-robin, own processes


def test_no_workers_means_the_main_thread_decodes_every_batch():
    trace = simulate(dataclasses.replace(SMALL, num_workers=0))
    decodes = events(trace, "cpu_op", "decode_batch")
    assert len(decodes) == SMALL.steps and {e["pid"] for e in decodes} == {4242}
    nexts = [e for e in events(trace, "user_annotation") if e["name"].startswith("enumerate(DataLoader)#")]
    assert {e["name"] for e in nexts} == {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"}


# ----------------------------------------------------------------------------------------------- kernel times
def test_forward_matmul_time_is_the_roofline_bound_by_hand():
    # A100 80GB, fp32, Linear(2048, 2048) on 64 rows: 2*64*2048*2048 FLOPs; input, weight and output once each
    flops = 2 * 64 * 2048 * 2048
    bytes_moved = (64 * 2048 + 2048 * 2048 + 64 * 2048) * 4
    compute_s, memory_s = flops / 19.5e12, bytes_moved / 2039e9  # datasheet: 19.5 TFLOP/s fp32, 2039 GB/s
    assert compute_s > memory_s  # compute-bound: 27.5 us against 8.7 us
    expected_us = compute_s * 1e6 / ROOFLINE_EFFICIENCY + KERNEL_LATENCY_US
    assert expected_us == pytest.approx(27.532 / 0.7 + 2.0, abs=1e-3)  # 41.331 us
    forward = [k for k in events(simulate(SimConfig()), "kernel") if k["name"] == "ampere_sgemm_128x64_tn"]
    assert len(forward) == 12 * 8
    assert all(abs(k["dur"] - expected_us) <= 0.0011 for k in forward)


def test_bf16_matmul_is_memory_bound_and_adam_streams_its_bytes():
    bytes_moved = (64 * 2048 + 2048 * 2048 + 64 * 2048) * 2  # bf16: half the bytes
    assert 2 * 64 * 2048 * 2048 / 312e12 < bytes_moved / 2039e9  # 1.7 us of math against 4.4 us of traffic
    expected_us = bytes_moved / 2039e9 * 1e6 / ROOFLINE_EFFICIENCY + KERNEL_LATENCY_US
    trace = simulate(SimConfig(mixed_precision=True, steps=2))
    gemms = [k for k in events(trace, "kernel") if "bf16" in k["name"]]
    assert gemms and all(abs(k["dur"] - expected_us) <= 0.0011 for k in gemms)
    # Adam per layer: (2048*2048 + 2048) parameters x 28 bytes (read 4 fp32 tensors, write 3)
    adam_us = (2048 * 2048 + 2048) * 28 / 2039e9 * 1e6 / 0.7 + 2.0
    adams = [k for k in events(trace, "kernel") if "FusedAdam" in k["name"]]
    assert len(adams) == 2 * 8 and all(abs(k["dur"] - adam_us) <= 0.0011 for k in adams)


def test_pinned_and_pageable_copies_run_at_the_stated_bandwidths():
    batch_bytes = 64 * 150_528
    for pinned, bandwidth, label in ((True, 25e9, "Pinned"), (False, 8e9, "Pageable")):
        trace = simulate(SimConfig(pin_memory=pinned, steps=2))
        copies = [e for e in events(trace, "gpu_memcpy") if e["name"] == f"Memcpy HtoD ({label} -> Device)"]
        assert len(copies) == 2
        assert all(abs(c["dur"] - (batch_bytes / bandwidth * 1e6 + 1.5)) <= 0.0011 for c in copies)


# ----------------------------------------------------------------------------------------------- knobs
def test_healthy_keeps_the_gpu_busy_and_no_workers_starves_it(tmp_path):
    healthy, stall = load(SCENARIOS["healthy"], tmp_path, "h.json"), load(SCENARIOS["dataloader_stall"], tmp_path)
    assert busy_fraction(healthy) > 0.8
    assert busy_fraction(stall) < 0.45
    widest = timeline.gaps(stall, top=1)["duration_us"].iloc[0]
    healthy_gaps = timeline.gaps(healthy, top=1)["duration_us"]
    assert widest > 1000 and widest > (healthy_gaps.iloc[0] if len(healthy_gaps) else 0)
    # a batch takes 64 x 80 us = 5.1 ms to decode: on the main thread every step waits about that long
    assert phase_totals_us(SCENARIOS["dataloader_stall"])["data"] / 12 == pytest.approx(64 * 80 + 120, rel=0.06)


def test_pageable_copies_are_slower_and_lengthen_the_step(tmp_path):
    pinned, pageable = load(SCENARIOS["healthy"], tmp_path, "a.json.gz"), load(SCENARIOS["pageable_copies"], tmp_path)
    copies = {
        name: timeline.memcpy_summary(t).set_index("direction").loc["HtoD"]
        for name, t in (("pinned", pinned), ("pageable", pageable))
    }
    assert copies["pageable"]["total_us"] > 2.5 * copies["pinned"]["total_us"]  # 25 / 8 GB/s
    assert span_per_step_us(pageable, 12) > span_per_step_us(pinned, 12) + 500


def test_item_sync_exposes_gaps_and_syncs_once_per_step(tmp_path):
    healthy, synced = load(SCENARIOS["healthy"], tmp_path, "a.json.gz"), load(SCENARIOS["item_sync"], tmp_path)
    assert busy_fraction(synced) < busy_fraction(healthy)
    assert len(timeline.gaps(synced, min_us=10)) > len(timeline.gaps(healthy, min_us=10))
    assert len(timeline.sync_points(healthy)) == 0
    points = timeline.sync_points(synced)
    assert len(points) == 12 and set(points["name"]) == {"aten::item"}


def test_mixed_precision_shortens_kernels_and_steps(tmp_path):
    fp32, bf16 = load(SCENARIOS["healthy"], tmp_path, "a.json.gz"), load(SCENARIOS["mixed_precision"], tmp_path)

    def kernel_us(trace):
        return timeline.top_ops(trace, 100)["total_us"].sum()

    assert kernel_us(bf16) < 0.7 * kernel_us(fp32)
    assert span_per_step_us(bf16, 12) < span_per_step_us(fp32, 12)


def test_a_bigger_batch_trains_more_samples_per_second(tmp_path):
    per_s = {}
    for batch in (64, 128):
        trace = load(SimConfig(batch_size=batch), tmp_path, f"b{batch}.json.gz")
        per_s[batch] = 12 * batch / span_per_step_us(trace, 1) * 1e6
    assert per_s[128] > per_s[64]
