"""gpucost_lab.course.profile_to_cost: the worked example as a tool (chapter 01), its figures against hand counts and
the peak its plausibility check states.
"""

import json

import pytest
import torch
from measure.helpers import float32_flags_restored

from gpucost_lab.course import profile_to_cost
from gpucost_lab.roofline.bound import lookup


@pytest.fixture
def flags():
    """The float32 precision flags are process-wide: every test that sets one gets all of them back."""
    with float32_flags_restored():
        yield


def test_profile_to_cost_states_the_peak_it_used(flags, monkeypatch):
    # on the CPU nothing is in the catalog: pretend the A10 is, to see the check's peak and reason
    monkeypatch.setattr(profile_to_cost, "find_accelerator", lambda name: lookup("A10"))
    torch.set_float32_matmul_precision("high")
    result = profile_to_cost.run(device="cpu", repeats=2, warmup_steps=1, measured_steps=2, batch=8, features=64)
    assert result.measurement.contract.float32_matmul == "tf32"
    out = json.loads(json.dumps(result.to_dict()))
    assert out["contract"]["float32_matmul"] == "tf32"
    assert out["plausibility"]["peak_precision"] == "float32"  # CPU contract: the FP32 peak, and why
    assert "float32 on cpu" in out["plausibility"]["peak_reason"] in out["plausibility"]["message"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_worked_example_is_bounded_by_the_tf32_peak_when_allowed(flags):
    for precision, recorded in (("highest", "ieee"), ("high", "tf32")):
        torch.set_float32_matmul_precision(precision)
        result = profile_to_cost.run(device="cuda", repeats=2)
        assert result.measurement.contract.float32_matmul == recorded
        if result.plausibility is not None:  # a catalog GPU
            assert result.plausibility.peak_precision == {"ieee": "float32", "tf32": "tf32"}[recorded]
            assert not result.plausibility.impossible


SMALL = dict(device="cpu", repeats=2, warmup_steps=1, measured_steps=2, batch=8, features=64)


def test_the_resident_bytes_by_hand():
    # Linear(64, 64): 64 x 64 + 64 = 4,160 parameters; a batch of 8 x 64 inputs and as many targets; 4 bytes each.
    # Plain SGD keeps no state, so a step adds nothing.
    work = profile_to_cost.LinearWorkload.build("cpu", batch=8, features=64)
    assert work.resident_bytes() == (4160 + 2 * 8 * 64) * 4 == 20_736
    work.step()
    assert work.resident_bytes() == 20_736


def test_a_cpu_run_by_hand():
    result = profile_to_cost.run(price_per_hour_usd=3.6, **SMALL)
    contract = result.measurement.contract
    assert (contract.model_name, contract.parameter_count, contract.units_per_step) == ("Linear(64, 64)", 4160, 8)
    # the forward matmul and the weight-gradient matmul (the input needs no gradient): 2 x (2 x 8 x 64 x 64)
    assert result.flops_per_step == 4 * 8 * 64 * 64
    # each repeat: 2 steps of 8 samples; $3.60 an hour is $0.001 a second
    per_sample = [t / 16 * 0.001 for t in result.measurement.repeat_times_s]
    assert result.cost_per_sample_usd.values == pytest.approx(per_sample, rel=1e-12)
    assert result.plausibility is None  # a CPU is not in the catalog: no roofline to hold the speed against
    assert result.peak_memory_bytes >= 20_736 and "resident" in result.peak_memory_method
    assert 0 < len(result.top_ops) <= 5
    out = json.loads(json.dumps(result.to_dict()))
    assert out["flops_per_step"] == 131_072 and out["price_per_hour_usd"] == 3.6 and out["plausibility"] is None
    assert out["repeat_times_s"] == list(result.measurement.repeat_times_s)


@pytest.mark.parametrize("kwargs, field", [({"repeats": 1}, "repeats"), ({"price_per_hour_usd": 0}, "price")])
def test_bad_repeats_and_prices_are_refused_before_any_step(kwargs, field):
    built = []
    with pytest.raises(ValueError, match=field):
        profile_to_cost.run(**{**SMALL, **kwargs}, step_factory=built.append)
    assert built == []
