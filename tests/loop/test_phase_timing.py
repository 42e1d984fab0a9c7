"""gpucost_lab.loop.phase_timing: what a phase timer's synchronizations cost a loop (chapter 05, section 1), on a fake
clock and a fake device.

The loop: per step, D seconds of host work (waiting for a batch), then one kernel of W seconds launched on the
device (the launch itself takes no time here). By hand:

- synchronized at every phase boundary, the device is idle while the host waits and the host waits while the
  device computes: wall = N x (D + W);
- timed with events and one synchronize at the end, the host loads batch k + 1 while the device runs kernel k:
  wall = D + W + (N - 1) x max(D, W).

Either way the kernel time each step is W: the events measure it on the device's own clock.
"""

from __future__ import annotations

import pytest

from gpucost_lab import InputError
from gpucost_lab.loop.phase_timing import sync_overhead, timed_loop


class Sim:
    """A host clock and one in-order device; a launched function runs at the device time it is reached, when
    the device clock is what ``clock()`` reads (an event's stamp)."""

    def __init__(self) -> None:
        self.now = self.free = 0.0
        self.device_time: float | None = None

    def clock(self) -> float:
        return self.now if self.device_time is None else self.device_time

    def launch(self, fn) -> None:
        start = max(self.now, self.free)
        self.free = start + getattr(fn, "work_s", 0.0)
        self.device_time = self.free
        fn()
        self.device_time = None

    def synchronize(self) -> None:
        self.now = max(self.now, self.free)


def _run(mode, steps, data_s, kernel_s):
    sim = Sim()

    def host():
        sim.now += data_s

    def kernel():
        pass

    kernel.work_s = kernel_s
    return timed_loop(sim, steps, host, kernel, mode=mode, clock=sim.clock)


@pytest.mark.parametrize(("steps", "data_s", "kernel_s"), [(10, 2.0, 3.0), (10, 3.0, 2.0), (1, 1.0, 1.0), (5, 2, 2)])
def test_wall_time_by_hand(steps, data_s, kernel_s):
    synced = _run("synchronized", steps, data_s, kernel_s)
    events = _run("events", steps, data_s, kernel_s)
    assert synced.wall_s == pytest.approx(steps * (data_s + kernel_s))
    assert events.wall_s == pytest.approx(data_s + kernel_s + (steps - 1) * max(data_s, kernel_s))
    for run in (synced, events):
        assert run.data_s == pytest.approx(steps * data_s)
        assert run.forward_backward_s == pytest.approx(steps * kernel_s)  # each way measures the kernels right


def test_the_timer_s_cost_is_the_overlap_it_removes():
    # D = W = 2: the synchronized loop takes 10 x 4 = 40 s, the overlapped one 2 + 2 + 9 x 2 = 22 s
    assert _run("synchronized", 10, 2.0, 2.0).wall_s / _run("events", 10, 2.0, 2.0).wall_s == pytest.approx(40 / 22)


def test_bad_mode_is_named():
    with pytest.raises(InputError) as err:
        _run("sometimes", 2, 1.0, 1.0)
    assert err.value.field == "mode"


def test_on_the_async_device_both_modes_see_the_kernel_and_only_one_keeps_the_overlap():
    overhead = sync_overhead(steps=8, storage_latency_s=0.002, kernel_s=0.002, rounds=1)
    assert [r.mode for r in overhead.runs].count("events") == 2
    for mode in ("synchronized", "events"):
        assert overhead.device_s_per_step(mode).geomean >= 0.002  # a sleep lasts at least its time
    # by hand: synchronized >= 8 x 4 ms = 32 ms; overlapped is at most ~8 x (2 ms + scheduling) and so shorter
    assert overhead.wall_s("synchronized").geomean >= 0.032
    assert overhead.slowdown > 1
