"""TF32 awareness: the contract records whether CUDA may run float32 math on TF32 tensor cores, and the
roofline bound of a float32 CUDA step is the TF32 peak when it may (issue 13, item 7).

Hand values, A100 40GB datasheet (dense): FP32 19.5 TFLOP/s, TF32 156 TFLOP/s (312 with sparsity).
The worked example's Linear(1024, 1024) step is 4 x 1024^2 = 4,194,304 FLOPs per sample (forward and
weight-gradient matmuls), so 50 TFLOP/s is 50e12 / 4,194,304 = 11.92 million samples/s: 2.56x the FP32
peak (impossible) but 32.1% of the TF32 peak (possible).
The flags are process-wide: every test that sets one restores all of them (fixture ``flags``).
"""

import dataclasses
import json

import pytest
import torch

from gpucost_lab.course import profile_to_cost
from gpucost_lab.measure.contract import BenchmarkContract, ContractMismatch, float32_math
from gpucost_lab.measure.timing import measure
from gpucost_lab.roofline.bound import bounding_peak, catalog, check_throughput, lookup

# torch >= 2.9 precision settings, parents before children so a restore lands on the child's own value
SETTINGS = (
    "fp32_precision",
    "cuda.matmul.fp32_precision",
    "cudnn.fp32_precision",
    "cudnn.conv.fp32_precision",
    "cudnn.rnn.fp32_precision",
    "mkldnn.fp32_precision",
    "mkldnn.matmul.fp32_precision",
    "mkldnn.conv.fp32_precision",
    "mkldnn.rnn.fp32_precision",
)
A100 = "NVIDIA A100-SXM4-40GB"
FLOPS_PER_SAMPLE = 4 * 1024 * 1024


def _owner(path):
    obj = torch.backends
    for name in path.split(".")[:-1]:
        obj = getattr(obj, name)
    return obj


def _snapshot():
    if hasattr(torch.backends, "fp32_precision"):
        return {p: _owner(p).fp32_precision for p in SETTINGS}
    return {"matmul": torch.get_float32_matmul_precision(), "cudnn": torch.backends.cudnn.allow_tf32}


def _restore(saved):
    if "matmul" in saved:
        torch.set_float32_matmul_precision(saved["matmul"])
        torch.backends.cudnn.allow_tf32 = saved["cudnn"]
        return
    for path, value in saved.items():
        _owner(path).fp32_precision = value


@pytest.fixture
def flags():
    saved, math_before = _snapshot(), float32_math()
    yield
    _restore(saved)
    assert _snapshot() == saved and float32_math() == math_before


def on_a100(contract):
    """The same contract as if captured on an A100 (this machine has no GPU)."""
    return dataclasses.replace(
        contract, device="cuda", gpu_name=A100, gpu_memory_bytes=40 * 2**30, sync_method="torch.cuda.synchronize"
    )


@pytest.mark.parametrize(
    "name,tf32,fp32",
    [
        ("A100 40GB", 156, 19.5),
        ("A100 80GB", 156, 19.5),
        ("H100 SXM", 494.7, 67),
        ("H200", 494.7, 67),
        ("L4", 60, 30.3),
    ],
)
def test_catalog_keeps_dense_tf32_peaks_with_sources(name, tf32, fp32):
    acc = lookup(name)  # datasheet dense figures (H100 SXM / H200 TF32: architecture whitepaper, Table 3)
    assert (acc.tf32_tflops, acc.fp32_tflops) == (tf32, fp32)
    assert "datasheet" in acc.source_of("tf32_tflops") or "whitepaper" in acc.source_of("tf32_tflops")


def test_every_catalog_tf32_peak_has_a_source_and_is_not_below_fp32():
    for acc in catalog().values():
        assert acc.source_of("tf32_tflops").strip()
        assert acc.tf32_tflops >= acc.fp32_tflops  # equal on the A10G and RTX 4090, as their documents print


def test_torch_defaults_are_recorded(flags, contract):
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = True
    c = contract()
    assert (c.float32_matmul, c.float32_conv) == ("ieee", "tf32")
    assert c.to_dict()["float32_matmul"] == "ieee"


@pytest.mark.parametrize("precision,recorded", [("highest", "ieee"), ("high", "tf32"), ("medium", "tf32")])
def test_matmul_precision_is_recorded_on_any_device_and_dtype(flags, contract, precision, recorded):
    torch.set_float32_matmul_precision(precision)
    assert torch.backends.cuda.matmul.allow_tf32 == (recorded == "tf32")  # torch keeps the two in step
    assert contract().float32_matmul == recorded
    assert contract(dtype="bfloat16").float32_matmul == recorded


def test_allow_tf32_flags_are_recorded(flags, contract):
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.get_float32_matmul_precision() == "high"
    torch.backends.cudnn.allow_tf32 = False
    c = contract()
    assert (c.float32_matmul, c.float32_conv) == ("tf32", "ieee")


@pytest.mark.skipif(not hasattr(torch.backends, "fp32_precision"), reason="torch < 2.9 has no fp32_precision")
def test_the_newer_fp32_precision_setting_is_recorded(flags, contract):
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    assert contract().float32_matmul == "tf32"
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    torch.backends.fp32_precision = "tf32"  # the global setting, inherited by cuDNN convolutions
    torch.backends.cudnn.conv.fp32_precision = "none"
    assert contract().float32_conv == "tf32"


def test_a_tf32_change_is_a_contract_change(flags, contract):
    torch.set_float32_matmul_precision("highest")
    off = contract()
    torch.set_float32_matmul_precision("high")
    on = contract()
    assert [c.field for c in off.diff(on)] == ["float32_matmul"]
    assert off.fingerprint != on.fingerprint
    assert BenchmarkContract.from_json(on.to_json()) == on
    with pytest.raises(ContractMismatch, match="float32_matmul: 'ieee' -> 'tf32'"):
        off.require_same(on)
    off.require_same(on, allow=["float32_matmul"])
    # flipping the flag after the contract was frozen: the measurement refuses, naming the field
    with pytest.raises(ContractMismatch, match="float32_matmul"):
        measure(lambda: None, off)


@pytest.mark.parametrize("field,value", [("float32_matmul", "high"), ("float32_conv", True)])
def test_bad_values_are_named(contract, field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(contract(), **{field: value})


def test_a100_float32_bound_is_the_tf32_peak_when_tf32_is_allowed(flags, contract):
    torch.set_float32_matmul_precision("high")
    peak = bounding_peak(on_a100(contract()))
    assert peak.precision == "tf32" and "float32_matmul='tf32'" in peak.reason
    assert lookup(A100).peak_flops_per_s(peak.precision) == pytest.approx(156e12)
    torch.set_float32_matmul_precision("highest")
    peak = bounding_peak(on_a100(contract()))
    assert peak.precision == "float32" and "IEEE FP32" in peak.reason
    assert lookup(A100).peak_flops_per_s(peak.precision) == pytest.approx(19.5e12)


def test_other_contracts_keep_their_own_peak(flags, contract):
    torch.set_float32_matmul_precision("high")
    assert bounding_peak(contract()).precision == "float32"  # float32 on the CPU: TF32 does not apply
    assert bounding_peak(on_a100(contract(dtype="bfloat16"))).precision == "bfloat16"
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = True
    assert bounding_peak(on_a100(contract())).precision == "float32"  # a step without convolutions
    assert bounding_peak(on_a100(contract()), convolutions=True).precision == "tf32"
    torch.backends.cudnn.allow_tf32 = False
    assert bounding_peak(on_a100(contract()), convolutions=True).precision == "float32"


def test_a_tf32_speed_is_not_called_impossible(flags, contract):
    samples_per_s = 50e12 / FLOPS_PER_SAMPLE  # 11.92 million
    torch.set_float32_matmul_precision("high")
    peak = bounding_peak(on_a100(contract()))
    check = check_throughput(samples_per_s, FLOPS_PER_SAMPLE, lookup(A100).roofline(peak.precision), peak=peak)
    assert not check.impossible and check.fraction_of_bound == pytest.approx(50 / 156)
    assert check.peak_precision == "tf32" and "TF32 peak" in check.message
    torch.set_float32_matmul_precision("highest")
    peak = bounding_peak(on_a100(contract()))
    check = check_throughput(samples_per_s, FLOPS_PER_SAMPLE, lookup(A100).roofline(peak.precision), peak=peak)
    assert check.impossible and check.fraction_of_bound == pytest.approx(50 / 19.5)
    assert check.peak_precision == "float32" and "FP32 peak" in check.message


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
