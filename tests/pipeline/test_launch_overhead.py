"""gpucost_lab.pipeline.launch_overhead: many small operators, and torch.compile priced with its compile time (chapter
07), on hand-built comparisons against hand computations of the break-even and the amortized cost. (A real compile
into a fresh cache: tests/pipeline/test_launch_overhead_compile.py.)
"""

from __future__ import annotations

import math

import pytest
import torch

from gpucost_lab import InputError
from gpucost_lab.measure.compare import Comparison
from gpucost_lab.pipeline.launch_overhead import (
    CompilePrice,
    ManySmallOps,
    default_cache_dir,
    forward_step,
    price_compile,
)

from .helpers import hand_contract


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
    contract = hand_contract(units_per_step=32, measured_steps=10)
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
    contract = hand_contract(units_per_step=32, measured_steps=10)
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
