"""The CPU stand-in for an asynchronous accelerator: launches return before the work is done."""
import threading
import time

import pytest

from gpucost_lab.async_device import AsyncDevice
from gpucost_lab.timing import measure, measure_unsynchronized


def test_launch_returns_before_the_work_runs_and_synchronize_waits():
    gate = threading.Event()
    with AsyncDevice() as dev:
        dev.launch(gate.wait)
        dev.launch(lambda: None)
        assert dev.completed == 0  # both still queued behind the gate
        gate.set()
        dev.synchronize()
        assert dev.completed == 2


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
    # each step sleeps 5 ms on the device: 10 steps take at least 50 ms of device time
    with AsyncDevice() as dev:
        def step():
            dev.launch(lambda: time.sleep(0.005))

        c = contract(warmup_steps=1, measured_steps=10, repeats=2)
        synced = measure(step, c, synchronize=dev.synchronize)
        unsynced = measure_unsynchronized(step, c)
        dev.synchronize()
    assert min(synced.repeat_times_s) >= 0.05
    assert max(unsynced.repeat_times_s) < 0.05 / 5  # only the queueing was timed
    assert unsynced.units_per_s_mean > 5 * synced.units_per_s_mean
