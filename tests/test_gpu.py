"""Checks that need CUDA; skipped on CPU-only machines (run them with benchmarks/gpu_check.sh)."""

import pytest
import torch

from gpucost_lab.contract import BenchmarkContract
from gpucost_lab.profile_to_cost import LinearWorkload, run
from gpucost_lab.timing import measure, measure_unsynchronized

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
