"""Catch unsynchronized timing before it is priced (chapter 06, "release the result"; chapter 01 shows the mistake).

On an asynchronous device a clock read without synchronizing first stops when the work is *queued*,
not done, so the throughput it implies can be far above what the hardware can do. Two checks flag
such a number before it reaches a price:

- :func:`check_measurement`: one measurement, flagged when it was taken without synchronization or
  when its throughput implies more FLOP/s than the roofline bound allows
  (:func:`gpucost_lab.roofline.bound.check_throughput`);
- :func:`compare_sync`: the same step measured without and with synchronization, the two ways
  interleaved and each summarised by its fastest block, flagged when the two throughputs differ by
  more than ``threshold`` times. On a synchronous CPU step they agree, on a busy machine too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpucost_lab._validate import InputError, greater_than, positive
from gpucost_lab.measure import device as _device
from gpucost_lab.measure.compare import interleaved_blocks
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.timing import UNSYNCHRONIZED, Clock, Measurement
from gpucost_lab.roofline.bound import PlausibilityCheck, Roofline, bounding_peak, check_throughput, lookup


@dataclass(frozen=True)
class SyncCheck:
    """Whether a measurement may be priced, and why not."""

    flagged: bool  # True: a number here depends on synchronization or breaks the bound; price no unsynchronized one
    reasons: tuple[str, ...]  # one sentence per problem found; empty when not flagged
    # throughput timed without / with synchronization (compare_sync: its fastest block; check_measurement: the
    # measurement's geometric mean); None if not measured that way
    unsynchronized_units_per_s: float | None
    synchronized_units_per_s: float | None
    ratio: float | None  # unsynchronized / synchronized; None unless both were measured
    bound_check: PlausibilityCheck | None  # the priced throughput against the roofline; None without one
    counted_unit: str = "samples"  # the unit of the throughputs: "samples" or "tokens"
    threshold: float | None = None  # the ratio above which compare_sync flags; None for check_measurement

    def to_dict(self) -> dict:
        return {
            "flagged": self.flagged,
            "reasons": list(self.reasons),
            "unsynchronized_units_per_s": self.unsynchronized_units_per_s,
            "synchronized_units_per_s": self.synchronized_units_per_s,
            "ratio": self.ratio,
            "bound_check": None if self.bound_check is None else self.bound_check.to_dict(),
            "counted_unit": self.counted_unit,
            "threshold": self.threshold,
        }


def _roofline(roofline: Roofline | str, contract: BenchmarkContract) -> Roofline:
    if isinstance(roofline, Roofline):
        return roofline
    if isinstance(roofline, str):
        return lookup(roofline).roofline(bounding_peak(contract).precision)
    raise InputError("roofline", f"roofline must be a Roofline or a catalog accelerator name, got {roofline!r}")


def _bound(
    units_per_s: float,
    measurement: Measurement,
    flops_per_unit: float | None,
    roofline: Roofline | str | None,
    intensity_flops_per_byte: float | None,
) -> PlausibilityCheck | None:
    if (flops_per_unit is None) != (roofline is None):
        raise InputError(
            "flops_per_unit",
            f"flops_per_unit and roofline must be given together, got flops_per_unit={flops_per_unit!r} "
            f"and roofline={roofline!r}",
        )
    if roofline is None:
        return None
    flops = positive("flops_per_unit", flops_per_unit)
    peak = bounding_peak(measurement.contract) if isinstance(roofline, str) else None
    bound = _roofline(roofline, measurement.contract)
    return check_throughput(units_per_s, flops, bound, intensity_flops_per_byte, peak)


def _times(ratio: float) -> str:
    """10000.0 -> "10,000"; 2.345 -> "2.35"."""
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2f}"


def _rate(units_per_s: float) -> str:
    """256000000.0 -> "256,000,000"; 0.5 -> "0.5"."""
    return f"{units_per_s:,.0f}" if units_per_s >= 10 else f"{units_per_s:.3g}"


def _bound_reason(check: PlausibilityCheck, units_per_s: float, unit: str) -> str:
    return (
        f"{_rate(units_per_s)} {unit}/s implies {check.measured_flops_per_s / 1e12:.3g} TFLOP/s, "
        f"{check.fraction_of_bound:.3g}x the roofline bound of {check.bound_flops_per_s / 1e12:.3g} TFLOP/s: "
        "impossible; the usual cause is timing without synchronizing the device"
    )


def check_measurement(
    measurement: Measurement,
    flops_per_unit: float | None = None,
    roofline: Roofline | str | None = None,
    intensity_flops_per_byte: float | None = None,
) -> SyncCheck:
    """Flag ``measurement`` if it was not synchronized or its throughput is above the roofline bound.

    ``flops_per_unit`` (FLOPs per sample or token) and ``roofline`` (a :class:`Roofline`, or a
    catalog name such as ``"A10"`` read at the peak :func:`~gpucost_lab.roofline.bound.bounding_peak` picks for the
    contract: its dtype's, or TF32 for float32 on CUDA with TF32 allowed) go together; without them only the
    synchronization is checked. ``intensity_flops_per_byte`` tightens the bound below the compute peak.
    """
    if not isinstance(measurement, Measurement):
        raise InputError("measurement", f"measurement must be a Measurement, got {type(measurement).__name__}")
    units_per_s = measurement.units_per_s_geomean
    unit = measurement.contract.counted_unit
    bound = _bound(units_per_s, measurement, flops_per_unit, roofline, intensity_flops_per_byte)
    reasons = []
    if not measurement.synchronized:
        reasons.append(
            f"timed without synchronizing the device (sync_method={measurement.contract.sync_method!r}): "
            "the clock may have stopped before the work was done; measure with timing.measure"
        )
    if bound is not None and bound.impossible:
        reasons.append(_bound_reason(bound, units_per_s, unit))
    synced = measurement.synchronized
    return SyncCheck(
        bool(reasons),
        tuple(reasons),
        None if synced else units_per_s,
        units_per_s if synced else None,
        None,
        bound,
        unit,
        None,
    )


def compare_sync(
    step: Callable[[], object],
    contract: BenchmarkContract,
    synchronize: Callable[[], None] | None = None,
    threshold: float = 1.5,
    *,
    clock: Clock = time.perf_counter,
    flops_per_unit: float | None = None,
    roofline: Roofline | str | None = None,
    intensity_flops_per_byte: float | None = None,
) -> SyncCheck:
    """Time ``step`` without and with synchronization, interleaved; flag a ratio beyond ``threshold``.

    The two ways alternate in ``contract.repeats`` ABBA rounds (unsynchronized, synchronized,
    synchronized, unsynchronized; :func:`gpucost_lab.measure.compare.interleaved_blocks`), so a machine that
    slows down or speeds up part-way hits both alike, and each way's throughput is taken from its
    **fastest** block: another program can only ever add time to a block (on a busy machine one scheduler
    time slice can stretch a short block several times over, so even a median is not safe),
    and the fastest block is the closest to the work itself, the rule ``timeit`` follows. ``synchronize``
    defaults to the contract device's (as in :func:`~gpucost_lab.measure.timing.measure`). The ratio is
    unsynchronized / synchronized throughput: far above 1 when the clock stopped before queued work
    finished; below ``1 / threshold`` the timing itself is unstable. With ``flops_per_unit`` and
    ``roofline`` the synchronized throughput is also held against the bound.
    """
    threshold = greater_than("threshold", threshold, 1.0)
    sync = synchronize if synchronize is not None else _device.synchronizer(contract.device)
    unsynced_contract = replace(contract, sync_method=UNSYNCHRONIZED)
    unsynced_times, synced_times = interleaved_blocks(
        ((step, unsynced_contract, lambda: None), (step, contract, sync)), contract.repeats, clock
    )
    synced = Measurement(replace(contract, repeats=len(synced_times)), synced_times)
    for i, t in enumerate(unsynced_times):
        if not t > 0:
            raise InputError(
                "unsynchronized",
                f"unsynchronized block {i} took {t!r} s: the clock is coarser than the timed block; "
                "raise measured_steps",
            )
    units = contract.units_per_step * contract.measured_steps
    fast, honest = units / min(unsynced_times), units / min(synced_times)
    ratio = fast / honest
    unit = contract.counted_unit
    bound = _bound(honest, synced, flops_per_unit, roofline, intensity_flops_per_byte)
    reasons = []
    if ratio > threshold:
        reasons.append(
            f"without synchronization the clock reads {_rate(fast)} {unit}/s, {_times(ratio)}x the "
            f"synchronized {_rate(honest)} {unit}/s (threshold {threshold:g}x): the clock stopped before "
            "the queued work finished; price only the synchronized measurement"
        )
    elif ratio < 1 / threshold:
        reasons.append(
            f"with synchronization the throughput rose {_times(1 / ratio)}x (threshold {threshold:g}x): the "
            "timing is unstable; measure more steps per repeat, or quiet the machine"
        )
    if bound is not None and bound.impossible:
        reasons.append(_bound_reason(bound, honest, unit))
    return SyncCheck(bool(reasons), tuple(reasons), fast, honest, ratio, bound, unit, threshold)
