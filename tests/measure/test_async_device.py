"""The CPU stand-in for an asynchronous accelerator: launches return before the work is done."""

import threading
import time

import pytest

from gpucost_lab.measure.async_device import AsyncDevice
from gpucost_lab.measure.timing import measure, measure_unsynchronized


class Finished:
    """Counts the launched functions that have finished running: ``launch(finished.after(fn))``."""

    def __init__(self) -> None:
        self.count = 0

    def after(self, fn=lambda: None):
        def run():
            fn()
            self.count += 1

        return run


def test_launch_returns_before_the_work_runs_and_synchronize_waits():
    gate, finished = threading.Event(), Finished()
    with AsyncDevice() as dev:
        dev.launch(finished.after(gate.wait))
        dev.launch(finished.after())
        assert finished.count == 0  # both still queued behind the gate
        gate.set()
        dev.synchronize()
        assert finished.count == 2


def test_work_runs_in_launch_order():
    seen = []
    with AsyncDevice() as dev:
        for i in range(50):
            dev.launch(lambda i=i: seen.append(i))
        dev.synchronize()
    assert seen == list(range(50))


def test_an_error_surfaces_at_synchronize():
    with AsyncDevice() as dev:
        dev.launch(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            dev.synchronize()
        dev.launch(lambda: None)
        dev.synchronize()  # the error is reported once


def test_unsynchronized_timing_stops_the_clock_before_the_work(contract):
    # The real device thread, on a clock that reads the work done, not this machine's speed: each finished device
    # step is 5 ms of device time and each launch 1 us of host time (as FakeAsyncDevice in tests/conftest.py).
    finished = Finished()
    with AsyncDevice() as dev:
        launches = 0

        def step():
            nonlocal launches
            launches += 1
            dev.launch(finished.after())

        def clock():
            return finished.count * 0.005 + launches * 1e-6

        c = contract(warmup_steps=1, measured_steps=10, repeats=2)
        synced = measure(step, c, synchronize=dev.synchronize, clock=clock)
        gate = threading.Event()
        dev.launch(finished.after(gate.wait))  # holds every later launch in the queue until it opens
        done_before = finished.count
        unsynced = measure_unsynchronized(step, c, clock=clock)
        ran_while_timed = finished.count - done_before
        gate.set()
        dev.synchronize()
        assert finished.count == done_before + 1 + 1 + 2 * 10  # the gate, the warm-up step, both repeats
    # synchronized: each repeat waits for its 10 steps, 10 x 5 ms of work + 10 x 1 us of launches
    assert synced.repeat_times_s == pytest.approx((10 * 0.005 + 10 * 1e-6,) * 2)
    # unsynchronized: the clock stopped with no step run, so only the 10 launches (10 us) were timed
    assert ran_while_timed == 0
    assert unsynced.repeat_times_s == pytest.approx((10 * 1e-6,) * 2)


def test_synchronized_timing_covers_the_work_on_the_real_clock(contract):
    # each step sleeps 5 ms on the device, and a sleep never returns early: a lower bound only, so a slow or busy
    # machine cannot fail it (how much faster unsynchronized timing looks is a benchmark: benchmarks/)
    with AsyncDevice() as dev:

        def step():
            dev.launch(lambda: time.sleep(0.005))

        synced = measure(step, contract(warmup_steps=1, measured_steps=10, repeats=2), synchronize=dev.synchronize)
    assert min(synced.repeat_times_s) >= 10 * 0.005
