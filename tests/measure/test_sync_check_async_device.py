"""Unsynchronized timing is flagged (chapter 06) on a real asynchronous device: AsyncDevice queues 5 ms of sleep per
step on a worker thread, so 10 steps take at least 50 ms synchronized and a few microseconds unsynchronized, on the
real clock. (The same checks on a fake device, by hand: tests/measure/test_sync_check.py.)
"""

import time

import pytest

from gpucost_lab.measure.async_device import AsyncDevice
from gpucost_lab.measure.sync_check import compare_sync

pytestmark = pytest.mark.slow


def test_an_async_cpu_device_is_flagged(contract):
    # each step queues 5 ms on a real worker thread: 10 steps take >= 50 ms synchronized, a few us unsynchronized
    with AsyncDevice() as dev:
        check = compare_sync(
            lambda: dev.launch(lambda: time.sleep(0.005)),
            contract(warmup_steps=1, measured_steps=10, repeats=2),
            synchronize=dev.synchronize,
        )
        dev.synchronize()
    assert check.flagged and check.ratio > 5
    assert check.synchronized_units_per_s <= 2 * 10 * 256 / 0.05 / 2  # at most 10 x 256 samples per 50 ms
