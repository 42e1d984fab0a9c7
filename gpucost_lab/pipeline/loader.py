"""Feed the device (chapter 07): a seeded image pipeline, the loader settings that feed it, and what each costs.

A training step can only run as fast as its next batch arrives. :class:`SyntheticImages` stands in for a folder of
JPEGs: each sample is a seeded block of bytes (the "file"), decoded and augmented on the CPU by a fixed amount of
numpy work: :data:`DECODE_PASSES` passes of a smoothing filter over the pixels (numpy's elementwise operations run on
one thread, so the cost is a fixed amount of one core's time, measured by
:func:`~gpucost_lab.pipeline.compare.decode_cost`), then a random 16 x 16 crop and a random flip drawn from the
sample's own seed. The same index always gives the same tensor, whatever process decodes it, so every loader setting
feeds the model exactly the same batches in the same order (:func:`~gpucost_lab.pipeline.compare.same_batches`): a
loader setting cannot change the quality reached, only the time and so the cost.

:class:`LoaderConfig` holds the settings that decide how the batches arrive: ``batch_size``, ``num_workers``,
``pin_memory``, ``prefetch_factor``, ``persistent_workers`` and ``non_blocking`` (the host-to-device copy).
:func:`measure_pipeline` runs whole **epochs** of ``batches`` batches, each from a fresh iterator, as every epoch
of a real run starts (workers that do not persist are started again, the prefetch queue starts empty): after one
untimed warm-up epoch, ``repeats`` rounds of an epoch of the loader alone (batches fetched, nothing trained) and an
epoch of the training loop (fetch, then one step of a small MLP). It keeps the raw times: each epoch's, and of the
loop's, the time spent inside ``iter()`` and ``next(loader)`` waiting for data, and the time to the first batch.
From them, each an :class:`~gpucost_lab.stats.Estimate` across the rounds: loader samples/s, loop samples/s, the
data-wait fraction (wait / loop time), the time to the first batch and the cost per sample at a stated price
(:mod:`gpucost_lab.cost`).

The settings compared one change at a time, and ``torch.compile`` against launch overhead, are in
:mod:`gpucost_lab.pipeline.compare` and :mod:`gpucost_lab.pipeline.launch_overhead`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset

from gpucost_lab import cost
from gpucost_lab._validate import InputError, integer_at_least, positive
from gpucost_lab.measure.device import resolve_device, synchronizer
from gpucost_lab.measure.timing import Clock
from gpucost_lab.pipeline.bounds import (
    MAX_BATCH_SIZE,
    MAX_BATCHES,
    MAX_DECODE_PASSES,
    MAX_PREFETCH_FACTOR,
    MAX_REPEATS,
    check_run,
)
from gpucost_lab.stats import Estimate

IMAGE_SHAPE = (3, 16, 16)  # channels, height, width of a sample after the crop
ENCODED_SIDE = 20  # the stored sample is 3 x 20 x 20 bytes; the crop takes 16 x 16 of it
CLASSES = 10
DECODE_PASSES = 4  # smoothing passes of the decode: the per-sample CPU cost, a fixed amount of numpy work
HIDDEN = 640  # the training model: Linear(768, HIDDEN), ReLU, Linear(HIDDEN, HIDDEN), ReLU, Linear(HIDDEN, 10)
DEFAULT_BATCHES = 6  # batches per timed epoch
DEFAULT_REPEATS = 4  # timed epochs per setting
DEFAULT_SAMPLES_SEED = 0
MAX_WORKERS = 64


class SyntheticImages(Dataset):
    """``samples`` seeded image-like samples, each decoded and augmented on the CPU when it is read.

    ``decode_passes`` is the decode's cost in passes of the filter (default :data:`DECODE_PASSES`). Item ``i`` is
    ``(image, label)``: a float32 array of :data:`IMAGE_SHAPE` and an int class, both fixed by ``(seed, i)``; the
    loader's :func:`collate` makes a batch of them one tensor, so a batch's decode runs no torch operator (as a JPEG
    decoder runs none) and shows on a profile as one stretch between operators.
    """

    def __init__(self, samples: int, *, seed: int = DEFAULT_SAMPLES_SEED, decode_passes: int = DECODE_PASSES):
        self.samples = integer_at_least("samples", samples, 1)
        self.seed = integer_at_least("seed", seed, 0)
        self.decode_passes = integer_at_least("decode_passes", decode_passes, 0, MAX_DECODE_PASSES)

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        if not 0 <= index < self.samples:
            raise IndexError(f"index must be in [0, {self.samples}), got {index!r}")
        rng = np.random.default_rng((self.seed, int(index)))
        label = int(rng.integers(CLASSES))
        encoded = rng.integers(0, 256, size=(IMAGE_SHAPE[0], ENCODED_SIDE, ENCODED_SIDE), dtype=np.uint8)
        x = encoded.astype(np.float32) / 255.0 + 0.05 * label  # the class leaves a trace in the pixels
        for _ in range(self.decode_passes):  # "decode": the fixed per-sample work
            x = np.tanh(x + 0.5 * np.roll(x, 1, axis=-1) - 0.25)
        top, left = rng.integers(0, ENCODED_SIDE - IMAGE_SHAPE[1] + 1, size=2)
        x = x[:, top : top + IMAGE_SHAPE[1], left : left + IMAGE_SHAPE[2]]
        if rng.random() < 0.5:
            x = x[:, :, ::-1]
        x = (x - x.mean()) / (x.std() + 1e-6)
        return np.ascontiguousarray(x, dtype=np.float32), label


def collate(samples: Sequence[tuple[np.ndarray, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of samples as two tensors, images ``(batch, *IMAGE_SHAPE)`` and labels ``(batch,)``."""
    images, labels = zip(*samples)
    return torch.from_numpy(np.stack(images)), torch.tensor(labels, dtype=torch.int64)


@dataclass(frozen=True)
class LoaderConfig:
    """How the batches reach the training step: the ``torch.utils.data.DataLoader`` settings and the copy's.

    ``prefetch_factor`` (batches each worker loads ahead) and ``persistent_workers`` (keep the workers between
    epochs) need ``num_workers`` > 0; ``prefetch_factor=None`` is DataLoader's default (2 with workers).
    ``pin_memory`` (page-locked batches) and ``non_blocking`` (an asynchronous host-to-device copy) act only when
    the step runs on an accelerator: on a CPU-only machine they change nothing.
    """

    batch_size: int = 32
    num_workers: int = 0
    pin_memory: bool = False
    prefetch_factor: int | None = None
    persistent_workers: bool = False
    non_blocking: bool = False

    def __post_init__(self) -> None:
        integer_at_least("batch_size", self.batch_size, 1, MAX_BATCH_SIZE)
        integer_at_least("num_workers", self.num_workers, 0, MAX_WORKERS)
        for name in ("pin_memory", "persistent_workers", "non_blocking"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(name, f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.prefetch_factor is not None:
            integer_at_least("prefetch_factor", self.prefetch_factor, 1, MAX_PREFETCH_FACTOR)
        if self.num_workers == 0 and (self.prefetch_factor is not None or self.persistent_workers):
            field = "prefetch_factor" if self.prefetch_factor is not None else "persistent_workers"
            raise InputError(
                field,
                f"{field} needs num_workers > 0 (it sets the workers' behaviour), got {field}="
                f"{getattr(self, field)!r} with num_workers=0",
            )

    def with_workers(self, num_workers: int) -> LoaderConfig:
        """This config with ``num_workers`` workers; the worker-only settings are dropped for 0."""
        if num_workers == 0:
            return replace(self, num_workers=0, prefetch_factor=None, persistent_workers=False)
        return replace(self, num_workers=num_workers)

    def changes(self, other: LoaderConfig) -> list[str]:
        """The fields ``other`` sets differently, in declaration order."""
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(other, f.name)]

    @property
    def label(self) -> str:
        """A short name: ``workers=2, prefetch=4, persistent, pinned, non_blocking``."""
        parts = [f"workers={self.num_workers}"]
        if self.prefetch_factor is not None:
            parts.append(f"prefetch={self.prefetch_factor}")
        parts += [name for name, on in (("persistent", self.persistent_workers), ("pinned", self.pin_memory)) if on]
        parts += ["non_blocking"] if self.non_blocking else []
        return ", ".join(parts)

    def to_dict(self) -> dict:
        return asdict(self)


def make_loader(dataset: Dataset, config: LoaderConfig, device: str = "cpu") -> DataLoader:
    """The DataLoader ``config`` describes, over ``dataset`` in its order; pinning only where it acts (CUDA)."""
    kwargs: dict[str, Any] = {}
    if config.num_workers > 0:
        kwargs = {"persistent_workers": config.persistent_workers}
        if config.prefetch_factor is not None:
            kwargs["prefetch_factor"] = config.prefetch_factor
    return DataLoader(
        dataset,
        batch_size=config.batch_size,
        shuffle=False,
        num_workers=config.num_workers,
        collate_fn=collate,
        pin_memory=config.pin_memory and device.startswith("cuda"),
        **kwargs,
    )


class TrainStep:
    """One SGD step of a small seeded MLP on a batch, the batch first copied to ``device`` as ``config`` says."""

    def __init__(self, config: LoaderConfig, device: str = "cpu", *, seed: int = 0, hidden: int = HIDDEN):
        self.device, self.non_blocking = device, config.non_blocking
        generator = torch.Generator().manual_seed(seed)
        features = int(np.prod(IMAGE_SHAPE))
        layers = [torch.nn.Linear(features, hidden), torch.nn.Linear(hidden, hidden), torch.nn.Linear(hidden, CLASSES)]
        for layer in layers:  # seeded without touching the global generator
            torch.nn.init.normal_(layer.weight, std=layer.in_features**-0.5, generator=generator)
            torch.nn.init.zeros_(layer.bias)
        self.model = torch.nn.Sequential(
            torch.nn.Flatten(), layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2]
        ).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.to(self.device, non_blocking=self.non_blocking)
        y = y.to(self.device, non_blocking=self.non_blocking)
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()


def run_epoch(
    loader: DataLoader,
    step: Callable[[torch.Tensor, torch.Tensor], object] | None = None,
    *,
    clock: Clock = time.perf_counter,
    synchronize: Callable[[], None] = lambda: None,
) -> tuple[float, float, float]:
    """One pass over ``loader`` from a fresh iterator, ``step`` on each batch: (seconds in all, seconds waiting,
    seconds until the first batch).

    The wait is the time spent inside ``iter()`` and ``next()``: starting workers, decoding on this thread, or
    waiting for a worker's batch; the first batch's includes the start. ``synchronize`` runs before the last clock
    read (the device's queued work).
    """
    start_s = clock()
    iterator = iter(loader)
    waited_s, first_s = clock() - start_s, None
    while True:
        before_s = clock()
        try:
            x, y = next(iterator)
        except StopIteration:
            waited_s += clock() - before_s
            break
        waited_s += clock() - before_s
        first_s = waited_s if first_s is None else first_s
        if step is not None:
            step(x, y)
    synchronize()
    return clock() - start_s, waited_s, waited_s if first_s is None else first_s


@dataclass(frozen=True)
class PipelineMeasurement:
    """Raw per-epoch times of one loader setting; every figure is derived from them."""

    config: LoaderConfig
    batches: int  # batches per epoch
    loader_times_s: tuple[float, ...]  # the loader alone, per epoch
    loop_times_s: tuple[float, ...]  # loader + training step, per epoch
    wait_times_s: tuple[float, ...]  # of the loop's time, spent waiting for the next batch
    first_batch_times_s: tuple[float, ...]  # of the wait, until the first batch (workers' start included)

    @property
    def samples_per_epoch(self) -> int:
        return self.batches * self.config.batch_size

    @property
    def loader_samples_per_s(self) -> Estimate:
        return Estimate.of(self.samples_per_epoch / t for t in self.loader_times_s)

    @property
    def loop_samples_per_s(self) -> Estimate:
        return Estimate.of(self.samples_per_epoch / t for t in self.loop_times_s)

    @property
    def data_wait_fraction(self) -> Estimate:
        """The share of the loop's time spent waiting for data, one value per epoch."""
        return Estimate.of(w / t for w, t in zip(self.wait_times_s, self.loop_times_s))

    @property
    def first_batch_s(self) -> Estimate:
        """Seconds from the start of an epoch until its first batch is ready, one value per epoch."""
        return Estimate.of(self.first_batch_times_s)

    def cost_per_sample_usd(self, price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD) -> Estimate:
        """The loop's cost per sample at ``price_per_hour_usd``: each epoch's seconds per sample x the price."""
        per_s_usd = cost.cost_per_second_usd(price_per_hour_usd)
        return Estimate.of(t / self.samples_per_epoch * per_s_usd for t in self.loop_times_s)

    def to_dict(self, price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD) -> dict:
        """The setting, each figure as ``{geomean, ci95_low, ci95_high}``, and the raw per-epoch times."""
        return {
            "setting": self.config.label,
            **self.config.to_dict(),
            "batches_per_epoch": self.batches,
            "loader_samples_per_s": self.loader_samples_per_s.to_dict(),
            "loop_samples_per_s": self.loop_samples_per_s.to_dict(),
            "data_wait_fraction": self.data_wait_fraction.to_dict(),
            "first_batch_s": self.first_batch_s.to_dict(),
            "cost_per_sample_usd": self.cost_per_sample_usd(price_per_hour_usd).to_dict(),
            "loader_times_s": list(self.loader_times_s),
            "loop_times_s": list(self.loop_times_s),
            "wait_times_s": list(self.wait_times_s),
            "first_batch_times_s": list(self.first_batch_times_s),
        }

    def row(self, price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD) -> dict:
        """The setting as one row of plain figures: geometric means and 95% interval ends."""
        out = {"setting": self.config.label, **self.config.to_dict(), "batches_per_epoch": self.batches}
        for name, est in (
            ("loader_samples_per_s", self.loader_samples_per_s),
            ("loop_samples_per_s", self.loop_samples_per_s),
            ("data_wait_fraction", self.data_wait_fraction),
            ("first_batch_s", self.first_batch_s),
            ("cost_per_sample_usd", self.cost_per_sample_usd(price_per_hour_usd)),
        ):
            out.update({name: est.geomean, f"{name}_ci95_low": est.ci95_low, f"{name}_ci95_high": est.ci95_high})
        return out


def _validate_run(batches: int, repeats: int) -> None:
    integer_at_least("batches", batches, 1, MAX_BATCHES)
    integer_at_least("repeats", repeats, 2, MAX_REPEATS)


def measure_pipeline(
    config: LoaderConfig,
    *,
    batches: int = DEFAULT_BATCHES,
    repeats: int = DEFAULT_REPEATS,
    device: str = "cpu",
    seed: int = DEFAULT_SAMPLES_SEED,
    decode_passes: int = DECODE_PASSES,
    clock: Clock = time.perf_counter,
) -> PipelineMeasurement:
    """Time ``repeats`` rounds, after one warm-up epoch of the loop: each round an epoch of the loader alone, then an
    epoch of the loop, both of ``batches`` batches through the same loader (its persistent workers start once)."""
    _validate_run(batches, repeats)
    device = resolve_device(device)
    sync = synchronizer(device)
    dataset = SyntheticImages(batches * config.batch_size, seed=seed, decode_passes=decode_passes)
    step, loader = TrainStep(config, device, seed=seed), make_loader(dataset, config, device)
    run_epoch(loader, step, clock=clock, synchronize=sync)  # warm-up: persistent workers start here
    times: dict[str, list[float]] = {"loader": [], "loop": [], "wait": [], "first": []}
    for _ in range(repeats):
        times["loader"].append(run_epoch(loader, None, clock=clock, synchronize=sync)[0])
        elapsed_s, waited_s, first_s = run_epoch(loader, step, clock=clock, synchronize=sync)
        times["loop"].append(elapsed_s)
        times["wait"].append(waited_s)
        times["first"].append(first_s)
    del loader  # its workers, if they persist, stop with it
    return PipelineMeasurement(config, batches, *(tuple(times[k]) for k in ("loader", "loop", "wait", "first")))


def measure_settings(
    workers: Iterable[int] = (0, 1, 2), base: LoaderConfig | None = None, **kwargs
) -> list[PipelineMeasurement]:
    """:func:`measure_pipeline` for ``base`` (default :class:`LoaderConfig`) with each number of workers."""
    base = LoaderConfig() if base is None else base
    counts = [integer_at_least("workers", n, 0, MAX_WORKERS) for n in workers]
    if not counts:
        raise InputError("workers", "workers must name at least one number of workers, got none")
    check_run(
        len(counts),
        base.batch_size,
        kwargs.get("batches", DEFAULT_BATCHES),
        kwargs.get("repeats", DEFAULT_REPEATS),
        kwargs.get("decode_passes", DECODE_PASSES),
    )
    return [measure_pipeline(base.with_workers(n), **kwargs) for n in counts]


def settings_table(
    measurements: Sequence[PipelineMeasurement], price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD
) -> pd.DataFrame:
    """One row per setting (geometric means): loader and loop samples/s, data-wait fraction, ms to the first batch
    of an epoch, cost per sample."""
    positive("price_per_hour_usd", price_per_hour_usd)
    rows = [m.row(price_per_hour_usd) for m in measurements]
    table = pd.DataFrame(rows).set_index("setting")
    table["first_batch_ms"] = table["first_batch_s"] * 1e3
    columns = ["loader_samples_per_s", "loop_samples_per_s", "data_wait_fraction", "first_batch_ms"]
    return table[[*columns, "cost_per_sample_usd"]]
