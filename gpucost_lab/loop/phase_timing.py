"""What timing phases with synchronizations costs, measured on the CPU stand-in for a GPU (chapter 05, section 1).

:class:`gpucost_lab.loop.phases.PhaseTimer` synchronizes the device before every clock read, so each phase is charged
the device work it queued. Those synchronizations are sync points (chapter 02): at every phase boundary the host
waits for the device to drain, so the host cannot load the next batch while the device computes the last one.
The timer removes the overlap it is meant to measure, and the loop it times runs slower than the loop without it.

The honest alternative times each side on its own clock and synchronizes once: host phases (waiting for a batch)
with the host clock, device work with events that the device itself stamps when it reaches them, as a CUDA event
does (``torch.cuda.Event(enable_timing=True)``, ``record()`` on the stream, ``elapsed_time`` after one
``torch.cuda.synchronize()``: PyTorch, "CUDA semantics", section "Asynchronous execution"; CUDA Runtime API,
"Event Management", ``cudaEventRecord`` and ``cudaEventElapsedTime``). Profiler annotations (``record_function``)
add no synchronization either; they show the host ranges and, on a GPU, the kernels launched inside them.

:func:`timed_loop` runs one loop either way on any device with ``launch(fn)`` and ``synchronize()`` (the course's
:class:`gpucost_lab.measure.async_device.AsyncDevice`, or a test's fake); :func:`sync_overhead` runs both,
interleaved, on an ``AsyncDevice`` with real work, so the chapter states the cost measured on the learner's machine.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from gpucost_lab._validate import InputError, integer_at_least, non_negative
from gpucost_lab.loop.phases import PhaseTimer
from gpucost_lab.measure.async_device import AsyncDevice
from gpucost_lab.stats import Estimate

MODES = ("synchronized", "events")


@dataclass(frozen=True)
class LoopTiming:
    """One run of the loop: its wall time and what each phase was measured to take (seconds, all steps)."""

    mode: str  # "synchronized" (PhaseTimer, a sync at every boundary) or "events" (one sync at the end)
    steps: int
    wall_s: float  # from the first phase's start to the device's end, on the host clock
    data_s: float  # host phase: waiting for the next batch
    forward_backward_s: float  # device work: synchronized phase time, or the device's own event stamps


def timed_loop(
    device,
    steps: int,
    host_work: Callable[[], None],
    device_work: Callable[[], None],
    *,
    mode: str,
    clock: Callable[[], float] = time.perf_counter,
) -> LoopTiming:
    """``steps`` iterations of: ``host_work()`` (phase "data", on the host), then ``device.launch(device_work)``
    (phase "forward_backward"). ``mode="synchronized"`` times both with a :class:`PhaseTimer` that synchronizes
    ``device`` at every boundary; ``mode="events"`` times ``data`` with the host clock and the device work with
    event stamps the device takes when it reaches them, and synchronizes once, at the end."""
    if mode not in MODES:
        raise InputError("mode", f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    n = integer_at_least("steps", steps, 1)
    start = clock()
    if mode == "synchronized":
        timer = PhaseTimer(clock=clock, synchronize=device.synchronize)
        for _ in range(n):
            with timer.phase("data"):
                host_work()
            with timer.phase("forward_backward"):
                device.launch(device_work)
        device.synchronize()
        seconds = timer.seconds
        return LoopTiming(mode, n, clock() - start, seconds["data"], seconds["forward_backward"])
    stamps: list[float] = []
    data_s = 0.0
    for _ in range(n):
        t0 = clock()
        host_work()
        data_s += clock() - t0
        device.launch(lambda: stamps.append(clock()))  # an event: stamped when the device reaches it
        device.launch(device_work)
        device.launch(lambda: stamps.append(clock()))
    device.synchronize()
    wall_s = clock() - start
    device_s = sum(stamps[2 * i + 1] - stamps[2 * i] for i in range(n))
    return LoopTiming(mode, n, wall_s, data_s, device_s)


@dataclass(frozen=True)
class SyncOverhead:
    """The same loop timed both ways, interleaved: every run of each mode kept, and their wall times' ratio."""

    steps: int
    storage_latency_s: float
    runs: tuple[LoopTiming, ...]

    def wall_s(self, mode: str) -> Estimate:
        return Estimate.of([r.wall_s for r in self.runs if r.mode == mode])

    def device_s_per_step(self, mode: str) -> Estimate:
        return Estimate.of([r.forward_backward_s / r.steps for r in self.runs if r.mode == mode])

    @property
    def slowdown(self) -> float:
        """Synchronized wall time over the events' (geometric means): what the timer's syncs cost the loop."""
        return self.wall_s("synchronized").geomean / self.wall_s("events").geomean


def sync_overhead(
    steps: int = 20, storage_latency_s: float = 0.002, kernel_s: float = 0.002, rounds: int = 2, seed: int = 0
) -> SyncOverhead:
    """Time a loop on an :class:`AsyncDevice` both ways, in ``rounds`` ABBA or BAAB blocks in a seeded random
    order. Per step the host waits ``storage_latency_s`` for its batch (a disk or a network) and the device runs
    one ``kernel_s`` kernel; both are sleeps, since neither a storage wait nor a GPU kernel uses a host core, so
    the measurement holds on a busy 2-core machine."""
    n = integer_at_least("steps", steps, 1)
    latency = non_negative("storage_latency_s", storage_latency_s)
    kernel = non_negative("kernel_s", kernel_s)
    integer_at_least("rounds", rounds, 1)
    runs: list[LoopTiming] = []
    with AsyncDevice() as device:
        host, work = (lambda: time.sleep(latency)), (lambda: time.sleep(kernel))
        timed_loop(device, 2, host, work, mode="events")  # warm-up, not kept
        order = random.Random(seed)
        for _ in range(rounds):
            block = ["synchronized", "events", "events", "synchronized"]
            if order.random() < 0.5:
                block.reverse()
            runs.extend(timed_loop(device, n, host, work, mode=mode) for mode in block)
    return SyncOverhead(n, latency, tuple(runs))


__all__ = ["LoopTiming", "MODES", "SyncOverhead", "sync_overhead", "timed_loop"]
