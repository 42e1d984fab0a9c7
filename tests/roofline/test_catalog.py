"""Sanity checks on the hardware catalog, gpucost_lab/data/hardware.json.

Some checks cover the file's form: every field is present, figures are positive
and finite, and names are unique. The rest check relations that follow from the
hardware itself, so a typo or a sparse figure copied by mistake fails here:
  - A100 40GB and 80GB (SXM) are the same GA100 at the same clocks: only the memory differs.
  - H200 is the H100 SXM's GH100 with HBM3e: the same compute, more and faster memory.
  - Dense BF16 tensor throughput is never below plain FP32 on these cards.
  - On the datacenter Ampere/Hopper parts, the datasheets give dense FP16 tensor = 2 x dense TF32 tensor
    (A100: 312 = 2 x 156; H100 SXM: 989.4 = 2 x 494.7; H100 PCIe: 756.5 ~ 2 x 378).
  - The A10's FP32 ridge point, worked by hand in the course: 31.2e12 FLOP/s / 600e9 B/s = 52 FLOP/byte.
"""

from __future__ import annotations

import json
import math
from importlib.resources import files

import pytest

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
def catalog() -> dict:
    text = (files("gpucost_lab") / "data" / "hardware.json").read_text(encoding="utf-8")
    return json.loads(text, object_pairs_hook=_no_duplicate_keys)


@pytest.fixture(scope="module")
def by_name(catalog) -> dict:
    return {entry["name"]: entry for entry in catalog["accelerators"]}


def test_top_level_schema(catalog):
    assert set(catalog) == {"description", "units", "accelerators"}
    assert isinstance(catalog["description"], str) and catalog["description"].strip()
    assert catalog["units"] == {
        "memory_gb": "1e9 bytes",
        "memory_bandwidth_gb_per_s": "1e9 bytes per second",
        "*_tflops": "1e12 floating-point operations per second, dense (no structured sparsity)",
    }
    assert isinstance(catalog["accelerators"], list) and catalog["accelerators"]


def test_required_entries_present(by_name):
    missing = REQUIRED_NAMES - set(by_name)
    assert not missing, f"catalog lacks {sorted(missing)}"


def test_every_entry_has_every_field(catalog):
    for entry in catalog["accelerators"]:
        name = entry.get("name", "<no name>")
        missing = [f for f in REQUIRED_FIELDS if f not in entry]
        assert not missing, f"{name}: missing {missing}"
        unknown = sorted(set(entry) - set(REQUIRED_FIELDS))
        assert not unknown, f"{name}: fields not in the schema: {unknown}"


def test_figures_are_positive_finite_numbers(catalog):
    for entry in catalog["accelerators"]:
        for field in NUMERIC_FIELDS:
            value = entry[field]
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (
                f"{entry['name']}.{field} = {value!r} is not a number"
            )
            assert math.isfinite(value) and value > 0, f"{entry['name']}.{field} = {value!r}"


def test_text_fields(catalog):
    for entry in catalog["accelerators"]:
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


def test_names_and_aliases_unique_case_insensitive(catalog):
    owner: dict[str, str] = {}
    for entry in catalog["accelerators"]:
        # An alias may repeat its own entry's name; it may not belong to two entries.
        for key in {entry["name"].casefold(), *(a.casefold() for a in entry["aliases"])}:
            assert key not in owner, f"{key!r} is claimed by both {owner[key]} and {entry['name']}"
            owner[key] = entry["name"]


def test_device_names_resolve_to_the_right_entry(catalog):
    lookup = {}
    for entry in catalog["accelerators"]:
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


def test_bf16_dense_at_least_fp32(catalog):
    for entry in catalog["accelerators"]:
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
