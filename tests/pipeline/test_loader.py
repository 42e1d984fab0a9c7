"""The input pipeline of chapter 07: the seeded dataset, the loader settings, the epoch timing and its figures, the
one-change-at-a-time comparison, and torch.compile priced with its compile time.

Every timed figure here runs on a fake clock (or is built from hand-picked times), so no test depends on the
machine's speed; expected values are hand computations written beside them, or properties.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab import InputError
from gpucost_lab.measure.compare import Comparison
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.pipeline.compare import (
    ChangeResult,
    changes_table,
    compare_configs,
    decode_cost,
    describe_change,
    inert_changes,
    one_change_at_a_time,
    profile_loop,
    same_batches,
    step_cost,
)
from gpucost_lab.pipeline.launch_overhead import (
    CompilePrice,
    ManySmallOps,
    default_cache_dir,
    forward_step,
    price_compile,
)
from gpucost_lab.pipeline.loader import (
    DECODE_PASSES,
    IMAGE_SHAPE,
    LoaderConfig,
    PipelineMeasurement,
    SyntheticImages,
    TrainStep,
    collate,
    make_loader,
    measure_pipeline,
    measure_settings,
    run_epoch,
    settings_table,
)
from gpucost_lab.timeline import load_trace, phases, steps

PRICE = 2.10


def counting_clock(tick_s: float = 0.5):
    """A clock that advances ``tick_s`` at every read: a block's time is its number of reads x tick."""
    ticks = itertools.count(1)
    return lambda: next(ticks) * tick_s


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


def test_workers_feed_bitwise_the_same_batches_as_the_main_thread():
    assert same_batches(LoaderConfig(batch_size=4), LoaderConfig(batch_size=4, num_workers=2, prefetch_factor=1))
    assert not same_batches(LoaderConfig(batch_size=4), LoaderConfig(batch_size=8))


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


def test_settings_with_workers_run_and_bad_counts_are_refused():
    measured = measure_settings((0, 1), batches=1, repeats=2, clock=counting_clock(0.5))
    assert [m.config.label for m in measured] == ["workers=0", "workers=1"]
    for workers in ((-1,), (65,), ()):
        with pytest.raises(InputError) as err:
            measure_settings(workers)
        assert err.value.field == "workers"
    for kwargs, field in (({"batches": 0}, "batches"), ({"repeats": 1}, "repeats"), ({"device": "tpu"}, "device")):
        with pytest.raises(InputError) as err:
            measure_pipeline(LoaderConfig(), **kwargs)
        assert err.value.field == field


def test_decode_and_step_costs_on_a_counting_clock():
    # one read before and one after each repeat: 1 s per repeat, over 4 samples (decode) or 2 steps (step)
    assert decode_cost(4, 3, clock=counting_clock(1.0)).values == (0.25, 0.25, 0.25)
    assert step_cost(8, steps=2, repeats=2, clock=counting_clock(1.0)).values == (0.5, 0.5)


# ------------------------------------------------------------------------------------------------------------
# one change at a time


def _contract(units_per_step: int = 192, measured_steps: int = 1) -> BenchmarkContract:
    return BenchmarkContract.capture(
        inputs=[(32, 3, 16, 16)],
        device="cpu",
        warmup_steps=1,
        measured_steps=measured_steps,
        repeats=2,
        units_per_step=units_per_step,
        model_name="hand-built",
    )


def test_a_change_row_prices_the_comparison():
    # every baseline epoch 0.4 s, every candidate epoch 0.1 s: ratio 0.25 exactly, a zero-width interval
    c = Comparison(_contract(), _contract(), (0.4,) * 4, (0.1,) * 4)
    result = ChangeResult("persistent_workers False -> True", LoaderConfig(num_workers=1), LoaderConfig(), c, 3.6)
    row = result.row()
    assert (row["time_ratio"], row["ci95_low"], row["ci95_high"]) == pytest.approx((0.25, 0.25, 0.25))
    assert row["verdict"] == "faster" and row["cost_verdict"] == "cheaper"
    # 0.4 s for 192 samples at $3.60 an hour ($0.001 a second)
    assert row["baseline_cost_per_sample_usd"] == pytest.approx(0.4 / 192 * 0.001)
    assert row["candidate_cost_per_sample_usd"] == pytest.approx(0.1 / 192 * 0.001)
    assert row["baseline_samples_per_s"] == pytest.approx(480.0)
    assert changes_table([result]).index.tolist() == ["persistent_workers False -> True"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="pinning is inert only without an accelerator")
def test_changes_that_do_nothing_here_are_not_timed():
    results = one_change_at_a_time(LoaderConfig(), [{"pin_memory": True}, {"non_blocking": True}])
    assert [r.comparison for r in results] == [None, None]
    assert results[1].candidate == LoaderConfig(pin_memory=True, non_blocking=True)  # each on top of the last
    row = results[0].row()
    assert row["verdict"] == "no effect on cpu" and row["cost_verdict"] == "same cost" and math.isnan(row["time_ratio"])
    with pytest.raises(InputError) as err:
        one_change_at_a_time(LoaderConfig(), [{"workers": 2}])
    assert err.value.field == "changes"
    with pytest.raises(InputError) as err:
        compare_configs(LoaderConfig(), LoaderConfig(batch_size=8))
    assert err.value.field == "batch_size"


def test_a_timed_change_on_a_counting_clock_is_the_same():
    # a block reads the clock twice whatever it runs: every block 0.5 s on both sides, ratio 1 with no spread at all,
    # an interval [1, 1] inside the 5% margin: "same"
    result = compare_configs(
        LoaderConfig(batch_size=4),
        LoaderConfig(batch_size=4, num_workers=1),
        batches=1,
        rounds=2,
        clock=counting_clock(0.5),
    )
    assert result.change == "num_workers 0 -> 1" and result.comparison.rounds == 2
    assert result.comparison.time_ratio == pytest.approx(1.0)
    assert result.verdict == "same" and result.cost_verdict == "same"
    assert result.comparison.baseline_contract.units_per_step == 4


def test_the_profiled_loop_has_a_data_and_a_train_phase_per_step(tmp_path):
    profile_loop(LoaderConfig(batch_size=4), tmp_path / "loop.json.gz", active=3)
    trace = load_trace(tmp_path / "loop.json.gz")
    counts = phases(trace).set_index("name")["count"]
    assert counts["data"] == 3 and counts["train"] == 3 and len(steps(trace)) == 3


# ------------------------------------------------------------------------------------------------------------
# launch overhead and the compile's price


def test_many_small_ops_runs_eight_operators_per_layer():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    model, x = ManySmallOps(layers=3, width=8), torch.randn(2, 8)
    with torch.no_grad(), Count():
        out = model(x)
    # per layer: select (weight[i]), select (bias[i]), mul, add, tanh, mul, mul, add
    assert Count.calls == 3 * 8 == model.operators_per_step and out.shape == (2, 8)
    assert torch.equal(forward_step(model, torch.ones(2, 8))(), forward_step(model, torch.ones(2, 8))())


def _compile_comparison(eager_block_s: float, compiled_block_s: float) -> Comparison:
    contract = _contract(units_per_step=32, measured_steps=10)
    return Comparison(contract, contract, (eager_block_s,) * 4, (compiled_block_s,) * 4)


def test_the_break_even_and_the_amortized_cost_by_hand():
    # 10 steps a block: eager 1 ms a step, compiled 0.4 ms; compile 1.2 s -> break-even 1.2 / 0.0006 = 2,000 steps
    price = price_compile(_compile_comparison(0.010, 0.004), 1.2, steps=1000, price_per_hour_usd=3.6)
    assert isinstance(price, CompilePrice) and price.samples_per_step == 32
    assert price.eager_step_s == pytest.approx(0.001) and price.compiled_step_s == pytest.approx(0.0004)
    assert tuple(price.break_even_steps) == pytest.approx((2000.0, 2000.0, 2000.0))
    costs = price.cost_per_sample_usd()
    # $0.001 a second: eager 1 ms / 32 samples; compiled (1.2 s + 1000 x 0.4 ms) / 32,000 samples
    assert costs["eager"] == pytest.approx(0.001 / 32 * 0.001)
    assert costs["compiled"] == pytest.approx(1.6 / 32_000 * 0.001)
    # a zero-width interval: below 2,000 steps "stay eager", above it "compile"
    assert (price.verdict(), price.verdict(1999), price.verdict(2001)) == ("stay eager", "stay eager", "compile")
    table = price.table((1000, 3000))
    assert table["verdict"].tolist() == ["stay eager", "compile"]
    assert table.loc[3000, "compiled_cost_per_sample_usd"] < table.loc[3000, "eager_cost_per_sample_usd"]


def test_between_the_break_even_interval_ends_the_verdict_is_inconclusive():
    # rounds at ratios 0.4 and 0.41: geometric mean 0.405, t(0.975, 1) = 12.706 -> 95% CI about 0.346 to 0.474;
    # break-even 1.2 s / (1 ms x (1 - r)): about 1,835 to 2,281 steps around 2,017
    contract = _contract(units_per_step=32, measured_steps=10)
    c = Comparison(contract, contract, (0.010,) * 4, (0.004, 0.004, 0.0041, 0.0041))
    price = price_compile(c, 1.2, steps=2000)
    low, high = price.break_even_steps[1:]
    assert 1800 < low < 1870 and 2240 < high < 2320 and c.verdict == "faster"
    assert [price.verdict(n) for n in (1800, 2000, 2400)] == ["stay eager", "inconclusive", "compile"]


def test_a_compile_that_saves_nothing_never_pays():
    price = price_compile(_compile_comparison(0.010, 0.010), 1.0, steps=10**9)
    assert price.break_even_steps.value == math.inf and price.verdict() == "inconclusive"
    # an inconclusive comparison still rules out a compile that even free compiled steps could not pay back:
    # 999 steps x 1 ms = 0.999 s < 1 s of compile; 1,001 steps could
    assert (price.verdict(999), price.verdict(1001)) == ("stay eager", "inconclusive")


@pytest.mark.parametrize(
    "kwargs,field", [({"compile_s": 0}, "compile_s"), ({"steps": 0}, "steps"), ({"price_per_hour_usd": -1}, "price")]
)
def test_bad_compile_prices_name_their_field(kwargs, field):
    args = {"compile_s": 1.0, "steps": 10, "price_per_hour_usd": 2.1, **kwargs}
    with pytest.raises(InputError) as err:
        price_compile(_compile_comparison(0.01, 0.005), args.pop("compile_s"), **args)
    assert err.value.field.startswith(field)


def test_the_cache_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "gpucost-lab" / "torch-compile"


@pytest.mark.slow
def test_compiling_into_a_fresh_cache_then_reusing_it(monkeypatch, tmp_path):
    """A cold compile into an empty folder (seconds: the generated C++ is compiled), then the same graph again."""
    from gpucost_lab.pipeline.launch_overhead import CACHE_ENV, COLD_RECORD, compile_model

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # restored after the test
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    compiled, cold = compile_model(ManySmallOps(layers=2, width=8), x, tmp_path)
    assert not cold.cache_hit and cold.cold_compile_s == cold.compile_s and (tmp_path / COLD_RECORD).exists()
    assert cold.max_abs_difference < 1e-5
    torch._dynamo.reset()
    _, warm = compile_model(ManySmallOps(layers=2, width=8), x, tmp_path)
    assert warm.cache_hit and warm.cold_compile_s == cold.compile_s
    with pytest.raises(InputError):
        compile_model(torch.nn.Linear(2, 2), x, tmp_path)


def test_epoch_figures_are_the_same_unit_as_the_contract():
    # an epoch comparison counts the epoch's samples: batches x batch size
    from gpucost_lab.pipeline.compare import epoch_contract

    contract = epoch_contract(LoaderConfig(batch_size=16), batches=3, rounds=5)
    assert contract.units_per_step == 48 and contract.repeats == 5 and contract.measured_steps == 1
    assert DECODE_PASSES >= 1
