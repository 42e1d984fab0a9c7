"""gpucost_lab.timeline.copies, where a non_blocking copy runs: copy_queueing against hand-built traces, and the
simulator against what CUDA documents (chapter 07, "What changes on a GPU host").

A stream runs its work in order (PyTorch, CUDA semantics, "CUDA streams"), so a pinned, non_blocking copy issued
on the stream the model computes on frees the host but starts only when the kernels queued before it have ended;
only a copy on a second stream overlaps kernels. From pageable memory the copy call holds the host (CUDA Runtime
API, "API synchronization behavior": a stream sync before the copy, then staging through pinned memory).
"""

from __future__ import annotations

import pytest

from gpucost_lab import InputError
from gpucost_lab.simulate.config import MEMCPY_CALL_US, SCENARIOS
from gpucost_lab.simulate.write import simulate, write_trace
from gpucost_lab.timeline import copy_queueing, load_trace

from .helpers import X, load_events


def test_a_copy_on_the_compute_stream_waits_and_one_on_a_second_stream_overlaps(tmp_path):
    # stream 7: kernel A [0, 100), then copy 1 issued by a 6 us call at 10, run [100, 150): queued behind A.
    # stream 20: copy 2 issued at 160 (call 160-166), run [170, 230); stream 7 kernel B [180, 200) and C [190, 260).
    events = [
        X("cuda_runtime", "cudaLaunchKernel", 0, 5, correlation=1),
        X("kernel", "A", 0, 100, stream=7, correlation=1),
        X("cuda_runtime", "cudaMemcpyAsync", 10, 6, correlation=2),
        X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 100, 50, stream=7, correlation=2, bytes=4096),
        X("cuda_runtime", "cudaMemcpyAsync", 160, 6, correlation=3),
        X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 170, 60, stream=20, correlation=3, bytes=8192),
        X("kernel", "B", 180, 20, stream=7, correlation=4),
        X("kernel", "C", 190, 70, stream=7, correlation=5),
    ]
    table = copy_queueing(load_events(tmp_path, events))
    assert list(table["stream"]) == [7, 20] and list(table["bytes"]) == [4096, 8192]
    assert list(table["host_call_us"]) == [6.0, 6.0]
    assert list(table["waited_us"]) == [90.0, 10.0]  # 100 - 10; 170 - 160
    # copy 1 shares its stream with A: nothing overlaps it. copy 2 [170, 230) vs B [180, 200) and C [190, 260):
    # their union inside the copy is [180, 230) = 50 us.
    assert list(table["overlapped_kernel_us"]) == [0.0, 50.0]


def test_a_copy_without_its_host_call_has_no_host_figures(tmp_path):
    events = [X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 10, stream=7, correlation=9, bytes=1)]
    table = copy_queueing(load_events(tmp_path, events))
    assert table["host_call_us"].isna().all() and table["waited_us"].isna().all()


def test_the_direction_is_checked(tmp_path):
    events = [X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 10, stream=7, bytes=1)]
    with pytest.raises(InputError) as err:
        copy_queueing(load_events(tmp_path, events), direction="up")
    assert err.value.field == "direction"


def _gpu_ops(config):
    ev = [e for e in simulate(config)["traceEvents"] if e.get("ph") == "X"]
    return sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy")), key=lambda e: e["ts"])


def test_the_simulator_queues_a_pinned_non_blocking_copy_behind_the_previous_step_s_kernels(tmp_path):
    ops = _gpu_ops(SCENARIOS["healthy"])
    copies = [i for i, e in enumerate(ops) if e["name"].startswith("Memcpy HtoD")]
    assert len(copies) == SCENARIOS["healthy"].steps
    for i in copies[1:]:
        before = ops[i - 1]
        assert before["cat"] == "kernel" and before["args"]["stream"] == ops[i]["args"]["stream"] == 7
        assert ops[i]["ts"] == pytest.approx(before["ts"] + before["dur"], abs=1e-3)  # starts as the kernel ends
    table = copy_queueing(load_trace(write_trace(SCENARIOS["healthy"], tmp_path / "healthy.json")))
    assert (table["overlapped_kernel_us"] == 0).all()  # one stream: no kernel runs during a copy
    # the host call takes about a non-blocking cudaMemcpyAsync (6 us, jittered 5%), far less than the copy ...
    assert table["host_call_us"].between(0.95 * MEMCPY_CALL_US, 1.05 * MEMCPY_CALL_US).all()
    assert (table["host_call_us"] < table["copy_us"] / 10).all()
    # ... and every copy after the first waits behind a queue of earlier work, a millisecond or more here
    assert (table["waited_us"].iloc[1:] > 1000).all()


def test_the_simulator_s_pageable_copy_holds_the_host_for_the_whole_copy(tmp_path):
    table = copy_queueing(load_trace(write_trace(SCENARIOS["pageable_copies"], tmp_path / "pageable.json")))
    assert (table["host_call_us"] >= table["copy_us"]).all()
    assert (table["overlapped_kernel_us"] == 0).all()
