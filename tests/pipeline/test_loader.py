"""gpucost_lab.pipeline.loader: the seeded dataset, the loader settings and the epoch timing and its figures (chapter
07), on a fake clock or hand-picked times, against hand computations written beside them, or properties.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab import InputError
from gpucost_lab.pipeline.compare import describe_change, inert_changes
from gpucost_lab.pipeline.loader import (
    IMAGE_SHAPE,
    LoaderConfig,
    PipelineMeasurement,
    SyntheticImages,
    TrainStep,
    collate,
    make_loader,
    measure_pipeline,
    run_epoch,
    settings_table,
)

from .helpers import counting_clock

PRICE = 2.10


# ------------------------------------------------------------------------------------------------------------
# the dataset


def test_a_sample_is_the_same_whoever_reads_it_and_differs_across_indices_and_seeds():
    a, b = SyntheticImages(8, seed=3), SyntheticImages(8, seed=3)
    x0, y0 = a[5]
    x1, y1 = b[5]
    assert x0.shape == IMAGE_SHAPE and x0.dtype == np.float32 and 0 <= y0 < 10
    assert np.array_equal(x0, x1) and y0 == y1
    assert not np.array_equal(a[5][0], a[6][0])
    assert not np.array_equal(a[5][0], SyntheticImages(8, seed=4)[5][0])


@given(st.integers(0, 199), st.integers(0, 6))
def test_every_sample_is_normalized(index, passes):
    # the last step divides by the standard deviation after removing the mean: mean 0 and std 1, whatever the decode
    x, _ = SyntheticImages(200, decode_passes=passes)[index]
    assert abs(float(x.mean())) < 1e-4 and abs(float(x.std()) - 1) < 1e-3


def test_the_decode_passes_change_the_pixels_and_indices_outside_the_set_are_refused():
    assert not np.array_equal(SyntheticImages(2, decode_passes=0)[1][0], SyntheticImages(2, decode_passes=1)[1][0])
    with pytest.raises(IndexError):
        SyntheticImages(2)[2]
    for field, kwargs in (("samples", {"samples": 0}), ("decode_passes", {"samples": 1, "decode_passes": -1})):
        with pytest.raises(InputError) as err:
            SyntheticImages(**kwargs)
        assert err.value.field == field


def test_collate_stacks_samples_into_one_tensor_each():
    samples = [SyntheticImages(3)[i] for i in range(3)]
    x, y = collate(samples)
    assert x.shape == (3, *IMAGE_SHAPE) and x.dtype == torch.float32 and y.tolist() == [s[1] for s in samples]
    assert torch.equal(x[2], torch.from_numpy(samples[2][0]))


# ------------------------------------------------------------------------------------------------------------
# the loader settings


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"num_workers": -1}, "num_workers"),
        ({"num_workers": 65}, "num_workers"),
        ({"num_workers": 1, "prefetch_factor": 0}, "prefetch_factor"),
        ({"prefetch_factor": 2}, "prefetch_factor"),  # without workers
        ({"persistent_workers": True}, "persistent_workers"),  # without workers
        ({"pin_memory": "yes"}, "pin_memory"),
        ({"non_blocking": 1}, "non_blocking"),
    ],
)
def test_bad_loader_settings_name_their_field(kwargs, field):
    with pytest.raises(InputError) as err:
        LoaderConfig(**kwargs)
    assert err.value.field == field and str(err.value).startswith(field)


def test_settings_labels_changes_and_zero_workers():
    tuned = LoaderConfig(num_workers=2, prefetch_factor=4, persistent_workers=True, pin_memory=True)
    assert tuned.label == "workers=2, prefetch=4, persistent, pinned"
    assert LoaderConfig().label == "workers=0"
    assert LoaderConfig().changes(tuned) == ["num_workers", "pin_memory", "prefetch_factor", "persistent_workers"]
    assert tuned.with_workers(0) == LoaderConfig(pin_memory=True)  # the worker-only settings go with the workers
    assert tuned.with_workers(1).num_workers == 1 and tuned.with_workers(1).prefetch_factor == 4
    assert describe_change(LoaderConfig(), LoaderConfig(num_workers=1)) == "num_workers 0 -> 1"
    assert describe_change(LoaderConfig(), LoaderConfig()) == "no change"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a CPU-only machine does with pinning")
def test_pinning_is_left_off_without_an_accelerator_and_the_workers_are_as_set():
    loader = make_loader(SyntheticImages(4), LoaderConfig(num_workers=2, pin_memory=True, persistent_workers=True))
    assert loader.pin_memory is False and loader.num_workers == 2 and loader.persistent_workers is True
    assert inert_changes(LoaderConfig(), LoaderConfig(pin_memory=True, non_blocking=True), "cpu")
    assert not inert_changes(LoaderConfig(), LoaderConfig(pin_memory=True, num_workers=1), "cpu")
    assert not inert_changes(LoaderConfig(), LoaderConfig(pin_memory=True), "cuda")
    assert not inert_changes(LoaderConfig(), LoaderConfig(), "cpu")  # no change at all is not an inert change


def test_the_train_step_learns_and_is_seeded():
    x, y = collate([SyntheticImages(16)[i] for i in range(16)])
    a, b = TrainStep(LoaderConfig(), seed=1), TrainStep(LoaderConfig(), seed=1)
    assert float(a(x, y)) == float(b(x, y))
    losses = [float(a(x, y)) for _ in range(20)]
    assert losses[-1] < losses[0]  # the same batch 20 times: SGD lowers its loss


# ------------------------------------------------------------------------------------------------------------
# timing an epoch and a setting, on a fake clock


class FakeLoader:
    """``batches`` batches, each taking ``load_s`` of the fake time to arrive; ``iter()`` takes ``start_s``."""

    def __init__(self, now: list[float], batches: int, load_s: float, start_s: float = 0.0):
        self.now, self.batches, self.load_s, self.start_s = now, batches, load_s, start_s

    def __iter__(self):
        self.now[0] += self.start_s
        for _ in range(self.batches):
            self.now[0] += self.load_s
            yield torch.zeros(1), torch.zeros(1)


def test_an_epoch_splits_into_waiting_and_training():
    now = [0.0]

    def train(x, y):
        now[0] += 0.003

    loader = FakeLoader(now, batches=5, load_s=0.002, start_s=0.010)
    elapsed_s, waited_s, first_s = run_epoch(loader, train, clock=lambda: now[0])
    # 10 ms start + 5 x (2 ms load + 3 ms step) = 35 ms; waited 10 + 5 x 2 = 20 ms; first batch 10 + 2 = 12 ms
    assert elapsed_s == pytest.approx(0.035) and waited_s == pytest.approx(0.020) and first_s == pytest.approx(0.012)
    assert run_epoch(FakeLoader(now, 3, 0.002), None, clock=lambda: now[0])[:2] == pytest.approx((0.006, 0.006))


def test_a_setting_measured_on_a_counting_clock():
    # each epoch of b batches reads the clock 2b + 5 times: start, after iter(), 2 per batch, 2 at the end, the last
    # read; at 0.5 s a read its time is (2b + 4) x 0.5 = b + 2 s. Waiting: after iter() 0.5, 0.5 per batch, 0.5 at the
    # end = (b + 2) x 0.5; the first batch 1.0 s.
    m = measure_pipeline(LoaderConfig(batch_size=4), batches=2, repeats=3, clock=counting_clock(0.5))
    assert m.loop_times_s == m.loader_times_s == (4.0, 4.0, 4.0)
    assert m.wait_times_s == (2.0, 2.0, 2.0) and m.first_batch_times_s == (1.0, 1.0, 1.0)
    assert m.samples_per_epoch == 8
    assert m.loop_samples_per_s.geomean == pytest.approx(8 / 4) and m.data_wait_fraction.geomean == pytest.approx(0.5)
    assert m.cost_per_sample_usd(PRICE).geomean == pytest.approx(4 / 8 * PRICE / 3600)


def test_figures_from_hand_picked_times():
    m = PipelineMeasurement(LoaderConfig(), 2, (0.5, 2.0), (1.0, 4.0), (0.25, 3.0), (0.1, 0.4))
    # 2 batches of 32 = 64 samples; geometric means: loader sqrt(0.5 x 2) = 1 s, loop sqrt(1 x 4) = 2 s
    assert m.loader_samples_per_s.geomean == pytest.approx(64.0)
    assert m.loop_samples_per_s.geomean == pytest.approx(32.0)
    assert m.data_wait_fraction.values == pytest.approx((0.25, 0.75))
    assert m.data_wait_fraction.geomean == pytest.approx(math.sqrt(0.25 * 0.75))
    assert m.first_batch_s.geomean == pytest.approx(0.2)
    assert m.cost_per_sample_usd(3.6).geomean == pytest.approx(2 / 64 * 3.6 / 3600)
    row = m.to_dict(3.6)
    assert row["setting"] == "workers=0" and row["num_workers"] == 0 and row["loop_times_s"] == [1.0, 4.0]
    assert set(row["data_wait_fraction"]) == {"geomean", "ci95_low", "ci95_high"}
    table = settings_table([m], 3.6)
    assert list(table.columns) == [
        "loader_samples_per_s",
        "loop_samples_per_s",
        "data_wait_fraction",
        "first_batch_ms",
        "cost_per_sample_usd",
    ]
    assert table.loc["workers=0", "first_batch_ms"] == pytest.approx(200.0)
