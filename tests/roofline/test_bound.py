"""The roofline of the course's Linear(1024, 1024) at batch 256 in fp32 on the A10 (chapter 04).

FLOPs: 2 x 256 x 1024 x 1024 = 536,870,912 (one multiply-add per weight per sample).
Bytes: (input 256x1024 + weight 1024x1024 + output 256x1024 + bias 1024) x 4 B = 6,295,552.
Intensity: 536,870,912 / 6,295,552 = 85.28 FLOP/byte.
A10 (datasheet): 31.2 TFLOP/s FP32, 600 GB/s, so the ridge point is 31.2e12 / 600e9 = 52 FLOP/byte;
85.28 > 52, so the layer is compute-bound and its attainable rate is the 31.2 TFLOP/s peak; the
forward pass cannot take less than 536,870,912 / 31.2e12 = 17.2 us.
At batch 1 the weight dominates the bytes: 2 x 1024^2 / ((1024 + 1024^2 + 1024 + 1024) x 4) = 0.4985
FLOP/byte, memory-bound, attainable 0.4985 x 600e9 = 299 GFLOP/s.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.roofline.bound import (
    Roofline,
    catalog,
    check_throughput,
    count_flops,
    find_accelerator,
    linear_layer_cost,
    lookup,
)


def test_linear_1024_batch_256_fp32_on_a10():
    layer = linear_layer_cost(256, 1024, 1024, "float32")
    assert layer.flops == 536_870_912
    assert layer.bytes_moved == 6_295_552
    assert layer.intensity_flops_per_byte == pytest.approx(85.28, abs=0.01)
    roof = lookup("A10").roofline("float32")
    assert roof.ridge_point_flops_per_byte == pytest.approx(52.0)
    assert roof.bound(layer.intensity_flops_per_byte) == "compute-bound"
    attainable = roof.attainable_flops_per_s(layer.intensity_flops_per_byte)
    assert attainable == pytest.approx(31.2e12)
    assert layer.flops / attainable == pytest.approx(17.2e-6, rel=1e-3)


def test_batch_one_is_memory_bound_on_a10():
    layer = linear_layer_cost(1, 1024, 1024, torch.float32)
    assert layer.intensity_flops_per_byte == pytest.approx(0.4985, abs=1e-4)
    roof = lookup("A10").roofline("float32")
    assert roof.bound(layer.intensity_flops_per_byte) == "memory-bound"
    assert roof.attainable_flops_per_s(layer.intensity_flops_per_byte) == pytest.approx(0.4985 * 600e9, rel=1e-3)


def test_bf16_halves_the_bytes_and_uses_the_tensor_core_peak():
    assert linear_layer_cost(256, 1024, 1024, "bfloat16").bytes_moved == 6_295_552 // 2
    # A10 datasheet: 125 TFLOP/s BF16 dense over 600 GB/s -> ridge at 208.3 FLOP/byte
    assert lookup("A10").roofline("bfloat16").ridge_point_flops_per_byte == pytest.approx(125e12 / 600e9)


def test_flop_counter_agrees_with_the_hand_formula():
    layer = torch.nn.Linear(1024, 1024)
    x = torch.randn(256, 1024)
    assert count_flops(lambda: layer(x)) == linear_layer_cost(256, 1024, 1024).flops
    # a training step whose input needs no grad adds only the weight-gradient matmul: 2x the forward
    assert count_flops(lambda: layer(x).sum().backward()) == 2 * 536_870_912


def test_catalog_lookup_by_name_and_by_torch_device_name():
    assert lookup("a10").name == "A10"
    assert find_accelerator("NVIDIA A100-SXM4-80GB").name == "A100 80GB"
    assert find_accelerator("NVIDIA H200").peak_flops_per_s("bfloat16") == pytest.approx(989.4e12)
    assert find_accelerator("Some Future GPU") is None
    assert find_accelerator(None) is None
    with pytest.raises(ValueError, match="accelerator must be one of .*A10"):
        lookup("Z80")
    assert {"A10", "A10G", "L4", "RTX 4090", "A100 40GB", "A100 80GB", "H100 SXM", "H100 PCIe", "H200"} <= set(
        catalog()
    )


def test_every_figure_has_a_source():
    for acc in catalog().values():
        for field in ("memory_gb", "memory_bandwidth_gb_per_s", "fp32_tflops", "bf16_tflops"):
            assert acc.source_of(field).strip()


def test_impossible_throughput_is_flagged():
    roof = lookup("A10").roofline("float32")
    flops_per_sample = 2 * 2 * 1024 * 1024  # forward + weight-gradient matmuls of Linear(1024, 1024)
    # 31.2e12 / 4,194,304 = 7.44 million samples/s is the ceiling
    ceiling = 31.2e12 / flops_per_sample
    assert not check_throughput(0.99 * ceiling, flops_per_sample, roof).impossible
    flagged = check_throughput(1.5 * ceiling, flops_per_sample, roof)
    assert flagged.impossible and flagged.fraction_of_bound == pytest.approx(1.5)
    # with the intensity known, the memory roof is the tighter bound at batch 1
    batch1 = linear_layer_cost(1, 1024, 1024).intensity_flops_per_byte
    assert check_throughput(0.5 * ceiling, flops_per_sample, roof, batch1).impossible


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda: linear_layer_cost(0, 1024, 1024), "batch"),
        (lambda: linear_layer_cost(8, 1024, 1024, "int8"), "dtype"),
        (lambda: Roofline(0, 1e9), "peak_flops_per_s"),
        (lambda: Roofline(1e12, math.nan), "bandwidth_bytes_per_s"),
        (lambda: lookup("A10").roofline("float32").attainable_flops_per_s(-1), "intensity"),
        (lambda: check_throughput(-5, 10, lookup("A10").roofline("float32")), "units_per_s"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()


@given(st.floats(1e9, 1e16), st.floats(1e9, 1e13), st.floats(1e-3, 1e4))
def test_attainable_is_under_both_roofs_and_meets_them_at_the_ridge(peak, bandwidth, intensity):
    roof = Roofline(peak, bandwidth)
    attainable = roof.attainable_flops_per_s(intensity)
    assert attainable <= peak * (1 + 1e-12)
    assert attainable <= intensity * bandwidth * (1 + 1e-12)
    assert roof.attainable_flops_per_s(roof.ridge_point_flops_per_byte) == pytest.approx(peak)
