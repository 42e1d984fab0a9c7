"""Synchronized timing with uncertainty across repeats (chapters 01 and 03).

:func:`measure` runs the contract's warm-up, then ``repeats`` timed blocks of ``measured_steps``
steps, synchronizing the device before every clock read. :func:`measure_unsynchronized` skips the
synchronization; it is kept to show why such numbers lie (on a GPU it times the kernel queue).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.measure import device as _device
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.stats import Estimate

Clock = Callable[[], float]
UNSYNCHRONIZED = "none (unsynchronized)"


@dataclass(frozen=True)
class Measurement:
    """Raw per-repeat times under a contract; every statistic is derived from them."""

    contract: BenchmarkContract
    repeat_times_s: tuple[float, ...]  # wall time of each repeat's ``measured_steps`` steps

    def __post_init__(self) -> None:
        if len(self.repeat_times_s) != self.contract.repeats:
            raise InputError(
                "repeat_times_s",
                f"repeat_times_s must hold contract.repeats={self.contract.repeats} values, "
                f"got {len(self.repeat_times_s)}",
            )
        for i, t in enumerate(self.repeat_times_s):
            if not t > 0:
                raise ValueError(
                    f"repeat_times_s[{i}] must be > 0 s, got {t!r}: the clock is coarser than the "
                    "timed block; raise measured_steps"
                )

    @property
    def synchronized(self) -> bool:
        return self.contract.sync_method != UNSYNCHRONIZED

    @property
    def units_per_repeat(self) -> int:
        return self.contract.units_per_step * self.contract.measured_steps

    @property
    def step_time_s(self) -> Estimate:
        """Seconds per step, one value per repeat."""
        return Estimate.of(t / self.contract.measured_steps for t in self.repeat_times_s)

    @property
    def units_per_s(self) -> Estimate:
        """Counted units (samples or tokens) per second, one value per repeat."""
        return Estimate.of(self.units_per_repeat / t for t in self.repeat_times_s)

    @property
    def units_per_s_geomean(self) -> float:
        """The throughput the course reports: units per repeat / geometric mean repeat time."""
        return self.units_per_s.geomean

    def speedup_over(self, baseline: Measurement, allow: Iterable[str] = ()) -> float:
        """Throughput ratio candidate / baseline (geometric means); both must share a contract except ``allow``.

        The two were measured one after the other, so drift between them is not in any interval:
        compare two steps with :func:`gpucost_lab.measure.compare.compare_steps`, which interleaves them.
        """
        baseline.contract.require_same(self.contract, allow=allow)
        return self.units_per_s_geomean / baseline.units_per_s_geomean

    def to_dict(self) -> dict:
        return {
            "contract": self.contract.to_dict(),
            "repeat_times_s": list(self.repeat_times_s),
            f"{self.contract.counted_unit}_per_second": self.units_per_s.to_dict(),
            "step_time_s": self.step_time_s.to_dict(),
        }


def _timed_repeats(
    step: Callable[[], object], contract: BenchmarkContract, clock: Clock, sync: Callable[[], None], progress: bool
) -> tuple[float, ...]:
    contract.check_environment()  # a contract frozen elsewhere does not describe this machine
    for _ in range(contract.warmup_steps):
        step()
    sync()
    repeats = range(contract.repeats)
    if progress:
        from tqdm.auto import tqdm

        repeats = tqdm(repeats, desc="repeats", unit="repeat")
    times = []
    for _ in repeats:
        sync()
        start_s = clock()
        for _ in range(contract.measured_steps):
            step()
        sync()
        times.append(clock() - start_s)
    return tuple(times)


def measure(
    step: Callable[[], object],
    contract: BenchmarkContract,
    *,
    clock: Clock = time.perf_counter,
    synchronize: Callable[[], None] | None = None,
    progress: bool = False,
) -> Measurement:
    """Time ``step`` under ``contract``: warm-up, then synchronized repeats.

    ``synchronize`` defaults to the contract device's (``torch.cuda.synchronize`` on CUDA, a no-op on
    the CPU); pass another to time work queued elsewhere. ``clock`` is injectable for tests.
    """
    sync = synchronize if synchronize is not None else _device.synchronizer(contract.device)
    return Measurement(contract, _timed_repeats(step, contract, clock, sync, progress))


def step_times_s(
    step: Callable[[], object],
    steps: int,
    *,
    device: str = "cpu",
    synchronize: Callable[[], None] | None = None,
    clock: Clock = time.perf_counter,
) -> tuple[float, ...]:
    """Seconds of each of ``steps`` consecutive steps, synchronized, with no warm-up: shows why warm-up exists."""
    integer_at_least("steps", steps, 1)
    sync = synchronize if synchronize is not None else _device.synchronizer(device)
    times = []
    for _ in range(steps):
        sync()
        start_s = clock()
        step()
        sync()
        times.append(clock() - start_s)
    return tuple(times)


def measure_unsynchronized(
    step: Callable[[], object], contract: BenchmarkContract, *, clock: Clock = time.perf_counter, progress: bool = False
) -> Measurement:
    """The naive timing: no synchronization before the clock reads. For teaching only.

    The result's contract records ``sync_method="none (unsynchronized)"``, so comparing it with a
    synchronized measurement raises :class:`~gpucost_lab.measure.contract.ContractMismatch`.
    """
    unsynced = replace(contract, sync_method=UNSYNCHRONIZED)
    return Measurement(unsynced, _timed_repeats(step, unsynced, clock, lambda: None, progress))
