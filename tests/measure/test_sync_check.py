"""Unsynchronized timing is flagged before it is priced (chapter 06).

Hand-derived figures, as in tests/measure/test_timing.py: the fake device queues 10 ms of work per step and
returns from a launch after 1 us of host time. The contract fixture asks 3 repeats of 10 steps of a
256-sample batch; compare_sync runs them as 3 rounds of unsynchronized, synchronized, synchronized,
unsynchronized blocks. Synchronized: the queue is drained first, then 10 x 10 ms = 0.1 s per block,
2,560 / 0.1 = 25,600 samples/s. Unsynchronized: 10 x 1 us = 10 us per block (the clock stops before
the queue drains), 2,560 / 1e-5 = 2.56e8 samples/s; ratio 10,000.
"""

import pytest

from gpucost_lab.measure.sync_check import SyncCheck, check_measurement, compare_sync
from gpucost_lab.measure.timing import measure, measure_unsynchronized
from gpucost_lab.roofline.bound import Roofline, lookup

# one SGD step of Linear(1024, 1024) whose input needs no grad: forward matmul and weight-gradient
# matmul, 2 x (2 x 1024 x 1024) FLOPs per sample
FLOPS_PER_SAMPLE = 2 * 2 * 1024 * 1024
A10_FP32_FLOPS_PER_S = 31.2e12  # catalog, dense FP32


def test_an_asynchronous_step_is_flagged_with_the_hand_derived_ratio(contract, fake_device):
    dev = fake_device(work_s=0.01, launch_s=1e-6)
    check = compare_sync(dev.launch, contract(), synchronize=dev.synchronize, clock=dev.clock)
    assert check.flagged
    assert check.unsynchronized_units_per_s == pytest.approx(2.56e8)
    assert check.synchronized_units_per_s == pytest.approx(25_600)
    assert check.ratio == pytest.approx(10_000)
    assert check.threshold == 1.5
    assert len(check.reasons) == 1 and "10,000x the synchronized" in check.reasons[0]
    # the two ways alternate: U S S U per round, a synchronization around every synchronized block only
    ends = [i for i, event in enumerate(dev.log) if event == "clock"][1::2]
    assert "".join("S" if dev.log[i - 1] == "sync" else "U" for i in ends) == "USSU" * 3


def test_a_device_that_finishes_before_returning_is_not_flagged(contract, fake_device):
    # launch takes as long as the work: the host clock already includes it, with or without synchronizing
    dev = fake_device(work_s=0.01, launch_s=0.01)
    check = compare_sync(dev.launch, contract(), synchronize=dev.synchronize, clock=dev.clock)
    assert not check.flagged and check.reasons == ()
    assert check.ratio == pytest.approx(1.0)


def test_stalls_on_most_blocks_do_not_raise_a_false_alarm(contract):
    # a busy 2-core machine: a 1-ms step, and a 4 ms scheduler slice lands in 4 of the 6 blocks of each way
    # (blocks 0, 1, 2, 3, 5, 6, 8, 11 of U S S U x 3); the fastest block of each way is still 10 ms
    now, reads, stalled = [0.0], [0], {0, 1, 2, 3, 5, 6, 8, 11}

    def clock():
        reads[0] += 1
        block = (reads[0] - 1) // 2
        if reads[0] % 2 == 0 and block in stalled:
            now[0] += 0.004
        return now[0]

    check = compare_sync(lambda: now.__setitem__(0, now[0] + 0.001), contract(warmup_steps=0), clock=clock)
    assert check.ratio == pytest.approx(1.0) and not check.flagged


def test_a_timing_that_rises_with_synchronization_is_flagged_as_unstable(contract):
    # scripted clock, 3 rounds of U S S U blocks: unsynchronized blocks of 0.3 s, synchronized of 0.1 s: ratio 1/3
    durations = [0.3, 0.1, 0.1, 0.3] * 3
    ticks = iter([x for i, d in enumerate(durations) for x in (float(i), i + d)])
    check = compare_sync(lambda: None, contract(), clock=lambda: next(ticks))
    assert check.ratio == pytest.approx(1 / 3)
    assert check.flagged and "unstable" in check.reasons[0]


def test_an_impossible_throughput_is_flagged_naming_the_bound(contract, fake_device):
    dev = fake_device(0.01)
    fast = measure_unsynchronized(dev.launch, contract(), clock=dev.clock)
    check = check_measurement(fast, flops_per_unit=FLOPS_PER_SAMPLE, roofline=lookup("A10").roofline("float32"))
    assert check.flagged and check.bound_check.impossible
    # 2.56e8 samples/s x 4,194,304 FLOP = 1.07e15 FLOP/s, 34.4x the 31.2 TFLOP/s bound
    assert check.bound_check.fraction_of_bound == pytest.approx(2.56e8 * FLOPS_PER_SAMPLE / A10_FP32_FLOPS_PER_S)
    assert check.unsynchronized_units_per_s == pytest.approx(2.56e8) and check.synchronized_units_per_s is None
    bound_reason = [r for r in check.reasons if "bound" in r]
    assert len(bound_reason) == 1 and "31.2 TFLOP/s" in bound_reason[0] and "impossible" in bound_reason[0]
    assert any("without synchronizing" in r for r in check.reasons)  # and the contract says so


def test_an_honest_measurement_passes_the_bound(contract, fake_device):
    dev = fake_device(0.01)
    honest = measure(dev.launch, contract(), clock=dev.clock, synchronize=dev.synchronize)
    check = check_measurement(honest, FLOPS_PER_SAMPLE, "A10")  # a catalog name, read at the contract's float32
    # 25,600 x 4,194,304 = 1.07e11 FLOP/s: 0.34% of the bound
    assert not check.flagged and check.reasons == ()
    assert check.bound_check.fraction_of_bound == pytest.approx(25_600 * FLOPS_PER_SAMPLE / A10_FP32_FLOPS_PER_S)
    assert check.synchronized_units_per_s == pytest.approx(25_600)


def test_a_synchronized_measurement_with_an_impossible_rate_is_still_flagged(contract, fake_device):
    # a tiny made-up roof: 1 GFLOP/s; 25,600 x 4.19e6 FLOP/s is 107x over it
    dev = fake_device(0.01)
    honest = measure(dev.launch, contract(), clock=dev.clock, synchronize=dev.synchronize)
    check = compare_sync(
        dev.launch,
        contract(),
        synchronize=dev.synchronize,
        clock=dev.clock,
        flops_per_unit=FLOPS_PER_SAMPLE,
        roofline=Roofline(1e9, 1e9),
    )
    assert check.bound_check.fraction_of_bound == pytest.approx(25_600 * FLOPS_PER_SAMPLE / 1e9)
    assert any("roofline bound of 0.001 TFLOP/s" in r for r in check.reasons)
    assert honest.units_per_s_geomean == pytest.approx(check.synchronized_units_per_s)


def test_a_synchronous_step_is_not_flagged_when_one_block_is_stalled(contract):
    # a synchronous step of 1 ms, so 10 ms per 10-step block either way; another program stalls the first
    # synchronized block (block 1 of U S S U) 10x. The fastest blocks ignore the stall: ratio exactly 1.
    now, reads = [0.0], [0]

    def clock():
        reads[0] += 1
        return now[0]

    def step():
        block = (reads[0] - 1) // 2  # two clock reads per block
        now[0] += 0.001 * (10 if block == 1 else 1)

    check = compare_sync(step, contract(warmup_steps=0), clock=clock)
    assert not check.flagged, check.reasons
    assert check.ratio == pytest.approx(1.0)
    assert check.synchronized_units_per_s == pytest.approx(2560 / 0.01)


def test_to_dict_is_plain_data(contract, fake_device):
    dev = fake_device(0.01)
    d = compare_sync(
        dev.launch,
        contract(),
        synchronize=dev.synchronize,
        clock=dev.clock,
        flops_per_unit=FLOPS_PER_SAMPLE,
        roofline="A10",
    ).to_dict()
    assert d["flagged"] is True and d["counted_unit"] == "samples" and d["ratio"] == pytest.approx(10_000)
    assert d["bound_check"]["impossible"] is False and isinstance(d["reasons"], list)
    assert isinstance(SyncCheck(False, (), None, None, None, None).to_dict(), dict)


def test_bad_arguments_name_the_field(contract, fake_device):
    dev = fake_device(0.01)
    m = measure(dev.launch, contract(), clock=dev.clock, synchronize=dev.synchronize)
    with pytest.raises(ValueError, match="flops_per_unit and roofline"):
        check_measurement(m, flops_per_unit=FLOPS_PER_SAMPLE)
    with pytest.raises(ValueError, match="accelerator must be one of"):
        check_measurement(m, FLOPS_PER_SAMPLE, "a toaster")
    with pytest.raises(ValueError, match="threshold"):
        compare_sync(dev.launch, contract(), synchronize=dev.synchronize, clock=dev.clock, threshold=1.0)
    with pytest.raises(ValueError, match="measurement"):
        check_measurement("fast")
