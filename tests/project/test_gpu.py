"""Checks that need CUDA; skipped on CPU-only machines (run them with benchmarks/gpu_check.sh)."""

import pytest
import torch

from gpucost_lab.course.profile_to_cost import LinearWorkload, run
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.timing import measure, measure_unsynchronized

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_contract_records_the_gpu_and_its_synchronization():
    c = BenchmarkContract.capture(inputs=[(256, 1024)], device="cuda")
    assert c.gpu_name == torch.cuda.get_device_name()
    assert c.gpu_memory_bytes == torch.cuda.get_device_properties(0).total_memory
    assert c.sync_method == "torch.cuda.synchronize"
    assert c.cuda_version == torch.version.cuda


def test_unsynchronized_timing_overstates_gpu_throughput():
    # 64 chained 4096^2 matmuls per step keep the GPU busy far longer than the launches take
    a = torch.randn(4096, 4096, device="cuda")

    def step():
        x = a
        for _ in range(64):
            x = x @ a
        return x

    c = BenchmarkContract.capture(inputs=[(4096, 4096)], device="cuda", warmup_steps=2, measured_steps=3, repeats=3)
    synced = measure(step, c)
    unsynced = measure_unsynchronized(step, c)
    assert unsynced.units_per_s_geomean > 2 * synced.units_per_s_geomean


def test_profile_to_cost_on_cuda_uses_the_device_allocator_peak():
    result = run(device="cuda", repeats=2)
    work = LinearWorkload.build("cuda")
    assert result.measurement.contract.sync_method == "torch.cuda.synchronize"
    assert result.peak_memory_bytes >= work.resident_bytes()
    assert result.plausibility is None or not result.plausibility.impossible


def _copy_beside_kernels(tmp_path, side_stream: bool):
    """Profile a 64 MiB pinned, non_blocking host-to-device copy issued right after a long chain of matmuls, on
    the current stream or on a second one; return copy_queueing's row for it."""
    from torch.profiler import ProfilerActivity, profile

    from gpucost_lab.timeline import copy_queueing, load_trace

    a = torch.randn(4096, 4096, device="cuda")
    host = torch.empty(16 * 2**20, dtype=torch.float32).pin_memory()
    copy_stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        x = a
        for _ in range(32):
            x = x @ a
        with torch.cuda.stream(copy_stream) if side_stream else torch.cuda.stream(torch.cuda.current_stream()):
            dev = host.to("cuda", non_blocking=True)
        torch.cuda.synchronize()
    path = tmp_path / f"copy_{side_stream}.json"
    prof.export_chrome_trace(str(path))
    rows = copy_queueing(load_trace(path))
    return rows[rows["bytes"] == host.numel() * 4].iloc[0], dev


def test_a_non_blocking_copy_on_the_current_stream_waits_for_its_kernels(tmp_path):
    # chapter 07 and the simulator: the host call returns at once, the copy runs after the kernels queued before it
    row, _ = _copy_beside_kernels(tmp_path, side_stream=False)
    assert row["overlapped_kernel_us"] == 0
    assert row["host_call_us"] < row["waited_us"]


def test_a_non_blocking_copy_on_a_second_stream_overlaps_the_kernels(tmp_path):
    row, _ = _copy_beside_kernels(tmp_path, side_stream=True)
    assert row["overlapped_kernel_us"] > 0.5 * row["copy_us"]
