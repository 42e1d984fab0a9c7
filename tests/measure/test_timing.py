"""Synchronized timing on a fake asynchronous device with a fake clock (chapter 01).

The device queues 10 ms of work per step and returns from each launch after 1 us of host time, like
a CUDA launch. Hand-derived: a synchronized repeat of 10 steps lasts 10 x 10 ms = 0.1 s, so a batch
of 256 runs at 256 / 0.01 s = 25,600 samples/s. Without synchronization the clock stops as soon as
the 10 launches are queued: 10 x 1 us = 10 us per repeat, i.e. 2,560 / 1e-5 = 2.56e8 samples/s,
10,000 times too fast.
"""

import dataclasses
import itertools

import pytest
import torch

from gpucost_lab.measure.contract import ContractMismatch
from gpucost_lab.measure.timing import Measurement, measure, measure_unsynchronized
from gpucost_lab.roofline.bound import check_throughput, lookup


def test_synchronized_timing_counts_the_device_work(contract, fake_device):
    dev = fake_device(work_s=0.01)
    m = measure(dev.launch, contract(), clock=dev.clock, synchronize=dev.synchronize)
    assert m.repeat_times_s == pytest.approx((0.1, 0.1, 0.1))
    assert m.step_time_s.geomean == pytest.approx(0.01)
    assert m.units_per_s_geomean == pytest.approx(25_600)
    assert m.units_per_s.log_std == pytest.approx(0.0, abs=1e-9)
    assert m.synchronized


def test_every_clock_read_follows_a_synchronize(contract, fake_device):
    dev = fake_device(work_s=0.01)
    measure(
        dev.launch, contract(warmup_steps=2, measured_steps=10, repeats=3), clock=dev.clock, synchronize=dev.synchronize
    )
    reads = [i for i, e in enumerate(dev.log) if e == "clock"]
    assert len(reads) == 2 * 3
    assert all(dev.log[i - 1] == "sync" for i in reads)
    assert dev.log.count("step") == 2 + 3 * 10  # warm-up, then the timed steps


def test_unsynchronized_timing_reports_the_launch_rate(contract, fake_device):
    dev = fake_device(work_s=0.01, launch_s=1e-6)
    m = measure_unsynchronized(dev.launch, contract(), clock=dev.clock)
    assert "sync" not in dev.log
    assert m.repeat_times_s == pytest.approx((1e-5,) * 3)
    assert m.units_per_s_geomean == pytest.approx(2.56e8)
    assert not m.synchronized


def test_roofline_flags_the_unsynchronized_number_as_impossible(contract, fake_device):
    # one SGD step of Linear(1024, 1024) with an input that needs no grad: forward matmul plus the
    # weight-gradient matmul, 2 x (2 x 1024 x 1024) FLOPs per sample
    flops_per_sample = 2 * 2 * 1024 * 1024
    a10 = lookup("A10").roofline("float32")  # 31.2 TFLOP/s
    fast_dev = fake_device(0.01)
    fast = measure_unsynchronized(fast_dev.launch, contract(), clock=fast_dev.clock)
    honest_dev = fake_device(0.01)
    honest = measure(honest_dev.launch, contract(), clock=honest_dev.clock, synchronize=honest_dev.synchronize)
    # 25,600 x 4.19e6 = 1.07e11 FLOP/s: 0.34% of the peak
    assert not check_throughput(honest.units_per_s_geomean, flops_per_sample, a10).impossible
    # the unsynchronized clock implies 2.56e8 x 4.19e6 = 1.07e15 FLOP/s, 34x the peak
    flagged = check_throughput(fast.units_per_s_geomean, flops_per_sample, a10)
    assert flagged.impossible
    assert flagged.fraction_of_bound == pytest.approx(2.56e8 * flops_per_sample / 31.2e12)
    assert "synchroniz" in flagged.message


def test_unsynchronized_result_cannot_be_compared_with_a_synchronized_one(contract, fake_device):
    dev = fake_device(0.01)
    honest = measure(dev.launch, contract(), clock=dev.clock, synchronize=dev.synchronize)
    fast = measure_unsynchronized(dev.launch, contract(), clock=dev.clock)
    with pytest.raises(ContractMismatch, match="sync_method"):
        fast.speedup_over(honest)


def test_statistics_from_a_scripted_clock(contract):
    # three repeats of 10 steps of 256 samples taking 0.5, 0.4 and 0.625 s:
    # 2,560 samples / t = 5,120, 6,400 and 4,096 samples/s; 0.5 x 0.4 x 0.625 = 0.125 = 0.5^3, so the geometric
    # mean repeat is 0.5 s and the throughput 2,560 / 0.5 = 5,120 samples/s (the geometric mean of the rates)
    ticks = iter([0.0, 0.5, 10.0, 10.4, 20.0, 20.625])
    m = measure(lambda: None, contract(), clock=lambda: next(ticks))
    assert m.units_per_s.values == pytest.approx((5120, 6400, 4096))
    assert m.units_per_s_geomean == pytest.approx(5120)
    low, high = m.units_per_s.ci95_low, m.units_per_s.ci95_high
    assert low < 4096 < 6400 < high  # three spread values: a wide interval


def test_real_cpu_step(contract):
    model, x = torch.nn.Linear(32, 32), torch.randn(8, 32)
    calls = itertools.count()

    def step():
        next(calls)
        model(x).sum().backward()

    m = measure(step, contract(inputs=[x], warmup_steps=1, measured_steps=3, repeats=2))
    assert next(calls) == 1 + 2 * 3
    assert all(t > 0 for t in m.repeat_times_s)
    assert m.contract.units_per_step == 8


def test_a_contract_from_another_machine_is_refused(contract):
    foreign = dataclasses.replace(contract(), threads=torch.get_num_threads() + 7, cpu_model="Other CPU")
    with pytest.raises(ContractMismatch) as err:
        measure(lambda: None, foreign)
    assert {c.field for c in err.value.changes} == {"threads", "cpu_model"}


def test_zero_duration_repeat_is_a_clear_error(contract):
    with pytest.raises(ValueError, match="repeat_times_s"):
        Measurement(contract(), (0.1, 0.0, 0.1))


def test_step_times_from_a_cold_start(fake_device):
    # the first step pays a one-off 50 ms (think: allocator growth, kernel selection), the rest 10 ms each
    dev = fake_device(work_s=0.01)
    calls = []

    def step():
        if not calls:
            dev.device_free_at_s = max(dev.now_s, dev.device_free_at_s) + 0.05
        calls.append(1)
        dev.launch()

    from gpucost_lab.measure.timing import step_times_s

    times = step_times_s(step, 4, synchronize=dev.synchronize, clock=dev.clock)
    assert times == pytest.approx((0.06, 0.01, 0.01, 0.01))
    with pytest.raises(ValueError, match="steps"):
        step_times_s(step, 0)
