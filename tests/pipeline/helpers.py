"""Helpers shared by the pipeline's tests: a clock that counts its reads, and a contract for hand-built comparisons."""

import itertools

from gpucost_lab.measure.contract import BenchmarkContract


def counting_clock(tick_s: float = 0.5):
    """A clock that advances ``tick_s`` at every read: a block's time is its number of reads x tick."""
    ticks = itertools.count(1)
    return lambda: next(ticks) * tick_s


def hand_contract(units_per_step: int = 192, measured_steps: int = 1) -> BenchmarkContract:
    return BenchmarkContract.capture(
        inputs=[(32, 3, 16, 16)],
        device="cpu",
        warmup_steps=1,
        measured_steps=measured_steps,
        repeats=2,
        units_per_step=units_per_step,
        model_name="hand-built",
    )
