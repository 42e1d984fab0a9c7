"""gpucost_lab.roofline.bound: the roofline bound, the hardware catalog it reads and the peak that bounds a float32
step, against hand computations from the datasheets.

The roofline of the course's Linear(1024, 1024) at batch 256 in fp32 on the A10 (chapter 04):
FLOPs: 2 x 256 x 1024 x 1024 = 536,870,912 (one multiply-add per weight per sample).
Bytes: (input 256x1024 + weight 1024x1024 + output 256x1024 + bias 1024) x 4 B = 6,295,552.
Intensity: 536,870,912 / 6,295,552 = 85.28 FLOP/byte.
A10 (datasheet): 31.2 TFLOP/s FP32, 600 GB/s, so the ridge point is 31.2e12 / 600e9 = 52 FLOP/byte;
85.28 > 52, so the layer is compute-bound and its attainable rate is the 31.2 TFLOP/s peak; the
forward pass cannot take less than 536,870,912 / 31.2e12 = 17.2 us.
At batch 1 the weight dominates the bytes: 2 x 1024^2 / ((1024 + 1024^2 + 1024 + 1024) x 4) = 0.4985
FLOP/byte, memory-bound, attainable 0.4985 x 600e9 = 299 GFLOP/s.

TF32 (issue 13, item 7): the bound of a float32 CUDA step is the TF32 peak when the contract records that float32
matmuls may use TF32. A100 40GB datasheet (dense): FP32 19.5 TFLOP/s, TF32 156 TFLOP/s (312 with sparsity).
The worked example's Linear(1024, 1024) step is 4 x 1024^2 = 4,194,304 FLOPs per sample (forward and
weight-gradient matmuls), so 50 TFLOP/s is 50e12 / 4,194,304 = 11.92 million samples/s: 2.56x the FP32
peak (impossible) but 32.1% of the TF32 peak (possible).

The catalog file, gpucost_lab/data/hardware.json: some checks cover the file's form (every field is present,
figures are positive and finite, and names are unique). The rest check relations that follow from the
hardware itself, so a typo or a sparse figure copied by mistake fails here:
  - A100 40GB and 80GB (SXM) are the same GA100 at the same clocks: only the memory differs.
  - H200 is the H100 SXM's GH100 with HBM3e: the same compute, more and faster memory.
  - Dense BF16 tensor throughput is never below plain FP32 on these cards.
  - On the datacenter Ampere/Hopper parts, the datasheets give dense FP16 tensor = 2 x dense TF32 tensor
    (A100: 312 = 2 x 156; H100 SXM: 989.4 = 2 x 494.7; H100 PCIe: 756.5 ~ 2 x 378).
  - The A10's FP32 ridge point, worked by hand in the course: 31.2e12 FLOP/s / 600e9 B/s = 52 FLOP/byte.
"""

from __future__ import annotations

import dataclasses
import json
import math
from importlib.resources import files

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from measure.helpers import float32_flags_restored

from gpucost_lab.roofline.bound import (
    Roofline,
    bounding_peak,
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


# -- the TF32 peak of a float32 step -----------------------------------------------------------------------------------
A100 = "NVIDIA A100-SXM4-40GB"
FLOPS_PER_SAMPLE = 4 * 1024 * 1024


@pytest.fixture
def flags():
    """The float32 precision flags are process-wide: every test that sets one gets all of them back."""
    with float32_flags_restored():
        yield


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


# -- the catalog file, gpucost_lab/data/hardware.json ------------------------------------------------------------------
NUMERIC_FIELDS = (
    "memory_gb",
    "memory_bandwidth_gb_per_s",
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "bf16_tflops",
)
COMPUTE_FIELDS = ("fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops")
REQUIRED_FIELDS = ("name", "aliases", *NUMERIC_FIELDS, "source", "field_sources", "notes")
REQUIRED_NAMES = {
    "A10",
    "A10G",
    "L4",
    "RTX 4090",
    "A100 40GB",
    "A100 80GB",
    "H100 SXM",
    "H100 PCIe",
    "H200",
}
# Strings torch.cuda.get_device_name() returns for these cards, and the entry each must resolve to.
DEVICE_NAMES = {
    "NVIDIA A10": "A10",
    "NVIDIA A10G": "A10G",
    "NVIDIA L4": "L4",
    "NVIDIA GeForce RTX 4090": "RTX 4090",
    "NVIDIA A100-SXM4-40GB": "A100 40GB",
    "NVIDIA A100-PCIE-40GB": "A100 40GB",
    "NVIDIA A100-SXM4-80GB": "A100 80GB",
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H200": "H200",
}
AMPERE_HOPPER_DATACENTER = ("A100 40GB", "A100 80GB", "H100 SXM", "H100 PCIe", "H200")


def _no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ValueError(f"duplicate JSON keys: {duplicates}")
    return dict(pairs)


@pytest.fixture(scope="module")
def hardware() -> dict:
    text = (files("gpucost_lab") / "data" / "hardware.json").read_text(encoding="utf-8")
    return json.loads(text, object_pairs_hook=_no_duplicate_keys)


@pytest.fixture(scope="module")
def by_name(hardware) -> dict:
    return {entry["name"]: entry for entry in hardware["accelerators"]}


def test_top_level_schema(hardware):
    assert set(hardware) == {"description", "units", "accelerators"}
    assert isinstance(hardware["description"], str) and hardware["description"].strip()
    assert hardware["units"] == {
        "memory_gb": "1e9 bytes",
        "memory_bandwidth_gb_per_s": "1e9 bytes per second",
        "*_tflops": "1e12 floating-point operations per second, dense (no structured sparsity)",
    }
    assert isinstance(hardware["accelerators"], list) and hardware["accelerators"]


def test_required_entries_present(by_name):
    missing = REQUIRED_NAMES - set(by_name)
    assert not missing, f"catalog lacks {sorted(missing)}"


def test_every_entry_has_every_field(hardware):
    for entry in hardware["accelerators"]:
        name = entry.get("name", "<no name>")
        missing = [f for f in REQUIRED_FIELDS if f not in entry]
        assert not missing, f"{name}: missing {missing}"
        unknown = sorted(set(entry) - set(REQUIRED_FIELDS))
        assert not unknown, f"{name}: fields not in the schema: {unknown}"


def test_figures_are_positive_finite_numbers(hardware):
    for entry in hardware["accelerators"]:
        for field in NUMERIC_FIELDS:
            value = entry[field]
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (
                f"{entry['name']}.{field} = {value!r} is not a number"
            )
            assert math.isfinite(value) and value > 0, f"{entry['name']}.{field} = {value!r}"


def test_text_fields(hardware):
    for entry in hardware["accelerators"]:
        name = entry["name"]
        assert isinstance(name, str) and name.strip() == name and name
        assert isinstance(entry["source"], str) and entry["source"].strip(), f"{name}: empty source"
        assert isinstance(entry["notes"], str), f"{name}: notes must be a string"
        aliases = entry["aliases"]
        assert isinstance(aliases, list) and aliases, f"{name}: aliases must be a non-empty list"
        for alias in aliases:
            assert isinstance(alias, str) and alias.strip() == alias and alias, f"{name}: bad alias {alias!r}"
        field_sources = entry["field_sources"]
        assert isinstance(field_sources, dict), f"{name}: field_sources must be an object"
        for field, src in field_sources.items():
            assert field in NUMERIC_FIELDS, f"{name}: field_sources names unknown field {field!r}"
            assert isinstance(src, str) and src.strip(), f"{name}: empty source for {field}"


def test_names_and_aliases_unique_case_insensitive(hardware):
    owner: dict[str, str] = {}
    for entry in hardware["accelerators"]:
        # An alias may repeat its own entry's name; it may not belong to two entries.
        for key in {entry["name"].casefold(), *(a.casefold() for a in entry["aliases"])}:
            assert key not in owner, f"{key!r} is claimed by both {owner[key]} and {entry['name']}"
            owner[key] = entry["name"]


def test_device_names_resolve_to_the_right_entry(hardware):
    lookup = {}
    for entry in hardware["accelerators"]:
        for key in (entry["name"], *entry["aliases"]):
            lookup[key.casefold()] = entry["name"]
    for device_name, expected in DEVICE_NAMES.items():
        assert lookup.get(device_name.casefold()) == expected, device_name
        assert lookup.get(device_name.upper().casefold()) == expected, device_name.upper()


def test_a100_40gb_and_80gb_share_compute(by_name):
    a40, a80 = by_name["A100 40GB"], by_name["A100 80GB"]
    for field in COMPUTE_FIELDS:
        assert a40[field] == a80[field], field
    assert a80["memory_gb"] > a40["memory_gb"]
    assert a80["memory_bandwidth_gb_per_s"] > a40["memory_bandwidth_gb_per_s"]


def test_h200_is_h100_sxm_compute_with_more_memory(by_name):
    h100, h200 = by_name["H100 SXM"], by_name["H200"]
    for field in COMPUTE_FIELDS:
        assert h200[field] == h100[field], field
    assert h200["memory_gb"] > h100["memory_gb"]
    assert h200["memory_bandwidth_gb_per_s"] > h100["memory_bandwidth_gb_per_s"]


def test_bf16_dense_at_least_fp32(hardware):
    for entry in hardware["accelerators"]:
        assert entry["bf16_tflops"] >= entry["fp32_tflops"], entry["name"]


@pytest.mark.parametrize("name", AMPERE_HOPPER_DATACENTER)
def test_fp16_is_twice_tf32_on_datacenter_ampere_hopper(by_name, name):
    entry = by_name[name]
    assert entry["fp16_tflops"] == pytest.approx(2 * entry["tf32_tflops"], rel=0.01)
    assert entry["bf16_tflops"] == entry["fp16_tflops"]


def test_a10_fp32_ridge_point_is_52_flop_per_byte(by_name):
    a10 = by_name["A10"]
    ridge = a10["fp32_tflops"] * 1e12 / (a10["memory_bandwidth_gb_per_s"] * 1e9)
    assert ridge == pytest.approx(52.0, rel=1e-9)
    assert ridge == pytest.approx(31.2e12 / 600e9, rel=1e-12)
