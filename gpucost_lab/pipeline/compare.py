"""Loader settings profiled and compared one change at a time (chapter 07), each priced per sample; what a sample's
decode and a training step cost on their own.

A change to the loader is judged like any other change in the course: interleaved against the setting it replaces
(:func:`gpucost_lab.measure.compare.compare_steps`, ABBA/BAAB rounds in a seeded random order), with a verdict that may
be "inconclusive". The unit timed is one **epoch** of the pipeline (:func:`gpucost_lab.pipeline.loader.run_epoch`: a
fresh iterator, then every batch fetched and trained on). An epoch, not a step, because a loader works ahead: timed
step by step, the side waiting for its turn would have its next batches decoded in the background and start its block
with them ready. A new epoch starts from an empty queue whichever side ran before it (a persistent worker waits for the
next epoch's indices), so neither side's block inherits work done during the other's.

Both sides train the same model on bitwise the same batches (:func:`same_batches`), so the
quality is unchanged and the cost per sample ratio is the epoch time ratio. :func:`one_change_at_a_time` applies a
list of changes, each on top of the last, and compares each with the setting before it; :func:`changes_table` is the
table a chapter prints. :func:`profile_loop` records the loop under ``torch.profiler`` with ``data`` and ``train``
phases, for the timeline tools of :mod:`gpucost_lab.timeline`. :func:`decode_cost` and :func:`step_cost` time the
two halves of the loop apart, and :func:`same_batches` checks that two settings feed the same batches.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import pandas as pd
import torch
from torch.profiler import record_function

from gpucost_lab import cost
from gpucost_lab._validate import InputError, integer_at_least, positive
from gpucost_lab.measure.compare import Comparison, compare_steps
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.device import resolve_device, synchronizer
from gpucost_lab.measure.profiling import profile_window
from gpucost_lab.measure.timing import Clock
from gpucost_lab.pipeline.loader import (
    DECODE_PASSES,
    DEFAULT_BATCHES,
    DEFAULT_SAMPLES_SEED,
    HIDDEN,
    IMAGE_SHAPE,
    LoaderConfig,
    SyntheticImages,
    TrainStep,
    make_loader,
    run_epoch,
)
from gpucost_lab.stats import Estimate, RatioVerdict

DEFAULT_ROUNDS = 4
MODEL_NAME = f"MLP(768-{HIDDEN}-{HIDDEN}-10) on SyntheticImages"


def epoch_step(
    config: LoaderConfig,
    *,
    batches: int = DEFAULT_BATCHES,
    device: str = "cpu",
    seed: int = DEFAULT_SAMPLES_SEED,
    decode_passes: int = DECODE_PASSES,
) -> Callable[[], None]:
    """A step function that runs one epoch of ``batches`` batches through the training loop ``config`` sets up.

    The loader lives as long as the function (``step.loader``): persistent workers start at the first call.
    """
    integer_at_least("batches", batches, 1)
    dataset = SyntheticImages(batches * config.batch_size, seed=seed, decode_passes=decode_passes)
    loader, train = make_loader(dataset, config, device), TrainStep(config, device, seed=seed)

    def step() -> None:
        run_epoch(loader, train)

    step.loader, step.train = loader, train  # type: ignore[attr-defined]
    return step


def epoch_contract(
    config: LoaderConfig,
    *,
    batches: int = DEFAULT_BATCHES,
    rounds: int = DEFAULT_ROUNDS,
    device: str = "cpu",
    seed: int = DEFAULT_SAMPLES_SEED,
) -> BenchmarkContract:
    """The contract of an epoch comparison: one warm-up epoch, one epoch per block, ``rounds`` rounds."""
    integer_at_least("batches", batches, 1)
    model = TrainStep(config, device, seed=seed).model
    return BenchmarkContract.capture(
        model=model,
        inputs=[(config.batch_size, *IMAGE_SHAPE)],
        device=device,
        warmup_steps=1,
        measured_steps=1,
        repeats=integer_at_least("rounds", rounds, 2),
        counted_unit="samples",
        units_per_step=batches * config.batch_size,
        seed=seed,
        model_name=MODEL_NAME,
    )


# settings that act only when the step runs on an accelerator: without one, torch neither pins nor copies
ACCELERATOR_ONLY = ("pin_memory", "non_blocking")


def inert_changes(baseline: LoaderConfig, candidate: LoaderConfig, device: str = "cpu") -> bool:
    """Whether every field ``candidate`` changes does nothing on ``device`` (pinning and copying off an accelerator):
    the two loaders are then the same code, and timing them would be an A/A comparison."""
    changed = baseline.changes(candidate)
    return bool(changed) and not device.startswith("cuda") and all(name in ACCELERATOR_ONLY for name in changed)


@dataclass(frozen=True)
class ChangeResult:
    """One loader change compared, interleaved, with the setting it replaces, and priced per sample.

    ``comparison`` is None for a change that does nothing on the device (:func:`inert_changes`): not timed, since
    an A/A comparison can only find noise, and shown as "no effect on DEVICE" at the same cost.
    """

    change: str  # "num_workers 0 -> 1"
    baseline: LoaderConfig
    candidate: LoaderConfig
    comparison: Comparison | None
    price_per_hour_usd: float
    device: str = "cpu"

    @property
    def cost(self) -> RatioVerdict | None:
        """Candidate / baseline cost per sample: the same samples, so the epoch time ratio and its interval."""
        if self.comparison is None:
            return None
        c = self.comparison
        return RatioVerdict(c.interval, "cost per sample", "cheaper", "more expensive", c.margin, len(c.looks))

    @property
    def verdict(self) -> str:
        return f"no effect on {self.device}" if self.comparison is None else self.comparison.verdict

    @property
    def cost_verdict(self) -> str:
        return "same cost" if self.cost is None else self.cost.verdict

    def row(self) -> dict:
        nan = float("nan")
        out = {"change": self.change, "candidate": self.candidate.label}
        c = self.comparison
        if c is None:
            figures = dict.fromkeys(("baseline_samples_per_s", "candidate_samples_per_s", "time_ratio"), nan)
            figures.update(dict.fromkeys(("ci95_low", "ci95_high"), nan))
            costs: tuple[float, ...] = (nan, nan)
        else:
            figures = {
                "baseline_samples_per_s": c.baseline.units_per_s.geomean,
                "candidate_samples_per_s": c.candidate.units_per_s.geomean,
                "time_ratio": c.time_ratio,
                "ci95_low": c.ci95_low,
                "ci95_high": c.ci95_high,
            }
            costs = tuple(
                cost.measured_cost_per_unit(m, self.price_per_hour_usd).geomean for m in (c.baseline, c.candidate)
            )
        return {
            **out,
            **figures,
            "verdict": self.verdict,
            "baseline_cost_per_sample_usd": costs[0],
            "candidate_cost_per_sample_usd": costs[1],
            "cost_verdict": self.cost_verdict,
        }


def describe_change(baseline: LoaderConfig, candidate: LoaderConfig) -> str:
    """``"num_workers 0 -> 1"``: every field that differs, with its two values."""
    changed = baseline.changes(candidate)
    if not changed:
        return "no change"
    return "; ".join(f"{name} {getattr(baseline, name)} -> {getattr(candidate, name)}" for name in changed)


def compare_configs(
    baseline: LoaderConfig,
    candidate: LoaderConfig,
    *,
    batches: int = DEFAULT_BATCHES,
    rounds: int = DEFAULT_ROUNDS,
    device: str = "cpu",
    seed: int = DEFAULT_SAMPLES_SEED,
    decode_passes: int = DECODE_PASSES,
    price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD,
    order_seed: int | None = None,
    clock: Clock = time.perf_counter,
) -> ChangeResult:
    """Epochs of ``baseline`` and ``candidate`` interleaved in ``rounds`` rounds; the verdict and the price."""
    positive("price_per_hour_usd", price_per_hour_usd)
    device = resolve_device(device)
    if baseline.batch_size != candidate.batch_size:
        raise InputError(
            "batch_size",
            f"batch_size must be the same on both sides (a loader change keeps the batches), got "
            f"{baseline.batch_size} and {candidate.batch_size}",
        )
    change = describe_change(baseline, candidate)
    if inert_changes(baseline, candidate, device):
        return ChangeResult(change, baseline, candidate, None, price_per_hour_usd, device)
    contract = epoch_contract(baseline, batches=batches, rounds=rounds, device=device, seed=seed)
    knobs: dict[str, Any] = {"batches": batches, "device": device, "seed": seed, "decode_passes": decode_passes}
    steps = epoch_step(baseline, **knobs), epoch_step(candidate, **knobs)
    comparison = compare_steps(*steps, contract, rounds=rounds, order_seed=order_seed, clock=clock)
    del steps  # the loaders and their workers go with them
    return ChangeResult(change, baseline, candidate, comparison, price_per_hour_usd, device)


def one_change_at_a_time(start: LoaderConfig, changes: Sequence[Mapping[str, Any]], **kwargs) -> list[ChangeResult]:
    """Apply ``changes`` in order (each a mapping of LoaderConfig fields), each compared with the setting before.

    ``kwargs`` go to :func:`compare_configs`; round orders are drawn from ``order_seed`` + the change's place.
    """
    names = {f.name for f in fields(LoaderConfig)}
    results, current = [], start
    order_seed = kwargs.pop("order_seed", None)
    for i, change in enumerate(changes):
        unknown = sorted(set(change) - names)
        if unknown or not change:
            raise InputError("changes", f"changes must each set LoaderConfig fields {sorted(names)}, got {change!r}")
        candidate = replace(current, **change)
        seed_i = None if order_seed is None else order_seed + i
        results.append(compare_configs(current, candidate, order_seed=seed_i, **kwargs))
        current = candidate
    return results


def changes_table(results: Sequence[ChangeResult]) -> pd.DataFrame:
    """One row per change: samples/s of both sides, the time ratio with its interval and verdict, cost per sample."""
    return pd.DataFrame([r.row() for r in results]).set_index("change")


def profile_loop(
    config: LoaderConfig,
    trace_path: str | os.PathLike,
    *,
    active: int = 4,
    device: str = "cpu",
    seed: int = DEFAULT_SAMPLES_SEED,
    decode_passes: int = DECODE_PASSES,
):
    """Profile ``active`` steps of the training loop (after 1 wait and 1 warm-up step), each a ``train`` phase then a
    ``data`` phase (``next(loader)``: the next batch); writes the trace to ``trace_path``, returns the profiler."""
    integer_at_least("active", active, 1)
    device = resolve_device(device)
    batches = active + 3  # the first before the window, one per step of the window, and one the last step fetches
    dataset = SyntheticImages(batches * config.batch_size, seed=seed, decode_passes=decode_passes)
    loader, train = make_loader(dataset, config, device), TrainStep(config, device, seed=seed)
    iterator = iter(loader)
    next_batch = [next(iterator)]  # the first batch (and the workers' start) before the profiled steps

    def step() -> None:
        x, y = next_batch[0]
        with record_function("train"):
            train(x, y)
        with record_function("data"):
            next_batch[0] = next(iterator)

    prof = profile_window(
        step, device=device, wait=1, warmup=1, active=active, profile_memory=False, trace_path=trace_path
    )
    if torch.cuda.is_available() and device.startswith("cuda"):
        torch.cuda.synchronize(device)
    return prof


def decode_cost(
    samples: int = 64, repeats: int = 5, *, decode_passes: int = DECODE_PASSES, clock: Clock = time.perf_counter
) -> Estimate:
    """Seconds to read one sample (decode + augment) on this thread, one value per repeat of ``samples`` samples."""
    integer_at_least("samples", samples, 1)
    integer_at_least("repeats", repeats, 2)
    dataset = SyntheticImages(samples, decode_passes=decode_passes)
    dataset[0]  # warm-up
    values = []
    for _ in range(repeats):
        start_s = clock()
        for i in range(samples):
            dataset[i]
        values.append((clock() - start_s) / samples)
    return Estimate.of(values)


def step_cost(
    batch_size: int = 32, steps: int = 10, repeats: int = 5, *, device: str = "cpu", clock: Clock = time.perf_counter
) -> Estimate:
    """Seconds per training step (:class:`TrainStep`) on a batch already decoded, one value per repeat of ``steps``."""
    integer_at_least("steps", steps, 1)
    integer_at_least("repeats", repeats, 2)
    device = resolve_device(device)
    config, sync = LoaderConfig(batch_size=batch_size), synchronizer(device)
    x, y = next(iter(make_loader(SyntheticImages(batch_size), config)))
    train = TrainStep(config, device)
    train(x, y)  # warm-up
    values = []
    for _ in range(repeats):
        sync()
        start_s = clock()
        for _ in range(steps):
            train(x, y)
        sync()
        values.append((clock() - start_s) / steps)
    return Estimate.of(values)


def same_batches(a: LoaderConfig, b: LoaderConfig, *, batches: int = 2, seed: int = DEFAULT_SAMPLES_SEED) -> bool:
    """Whether loaders set up as ``a`` and ``b`` give bitwise the same first ``batches`` batches (same batch size)."""
    integer_at_least("batches", batches, 1)
    if a.batch_size != b.batch_size:
        return False
    dataset = SyntheticImages(batches * a.batch_size, seed=seed)
    pairs = zip(make_loader(dataset, a), make_loader(dataset, b))
    return all(torch.equal(xa, xb) and torch.equal(ya, yb) for (xa, ya), (xb, yb) in pairs)
