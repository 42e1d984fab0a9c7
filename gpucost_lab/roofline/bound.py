"""The roofline bound (chapter 04): how fast a step *could* run on a given accelerator.

attainable FLOP/s = min(peak FLOP/s, arithmetic intensity x memory bandwidth). Below the ridge point
(peak / bandwidth, in FLOP per byte) a kernel is memory-bound; above it, compute-bound. A measured
throughput above the bound is impossible: the usual cause is timing without synchronization.
Peaks come from the catalog ``data/hardware.json`` (dense figures, each with its source). A float32 step
on CUDA that may use TF32 tensor cores is bounded by the TF32 peak, not the FP32 one (:func:`bounding_peak`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from gpucost_lab._validate import InputError, integer_at_least, one_of, positive

if TYPE_CHECKING:  # dtypes may be torch's; the catalog and the bounds never need torch itself
    import torch

_BYTES_PER_ELEMENT = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
_PEAK_FIELD = {"float32": "fp32_tflops", "tf32": "tf32_tflops", "float16": "fp16_tflops", "bfloat16": "bf16_tflops"}


def dtype_name(dtype: str | torch.dtype) -> str:
    """``torch.float32`` or ``"float32"`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def bytes_per_element(dtype: str | torch.dtype) -> int:
    name = one_of("dtype", dtype_name(dtype), _BYTES_PER_ELEMENT)
    return _BYTES_PER_ELEMENT[name]


@dataclass(frozen=True)
class Accelerator:
    """One catalog entry. Peaks are dense (no structured sparsity), in 1e12 FLOP/s."""

    name: str
    memory_gb: float
    memory_bandwidth_gb_per_s: float
    fp32_tflops: float
    tf32_tflops: float
    fp16_tflops: float
    bf16_tflops: float
    source: str
    aliases: tuple[str, ...] = ()
    notes: str = ""
    field_sources: tuple[tuple[str, str], ...] = ()  # (field, source) where a figure has its own source

    def source_of(self, field: str) -> str:
        """Where the figure ``field`` (e.g. ``"bf16_tflops"``) comes from."""
        return dict(self.field_sources).get(field, self.source)

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gb_per_s * 1e9

    def peak_flops_per_s(self, dtype: str | torch.dtype) -> float:
        """Dense peak for ``dtype``: "float32" (CUDA cores), "tf32", "float16" or "bfloat16"."""
        name = one_of("dtype", dtype_name(dtype), _PEAK_FIELD)
        return getattr(self, _PEAK_FIELD[name]) * 1e12

    def peak_source(self, dtype: str | torch.dtype) -> str:
        """Where the dense peak for ``dtype`` (as :meth:`peak_flops_per_s` takes it) comes from."""
        name = one_of("dtype", dtype_name(dtype), _PEAK_FIELD)
        return self.source_of(_PEAK_FIELD[name])

    def roofline(self, dtype: str | torch.dtype) -> Roofline:
        return Roofline(self.peak_flops_per_s(dtype), self.memory_bandwidth_bytes_per_s)


@lru_cache(maxsize=1)
def catalog() -> dict[str, Accelerator]:
    """Every accelerator in ``data/hardware.json``, by name."""
    raw = json.loads((resources.files("gpucost_lab") / "data" / "hardware.json").read_text())
    accelerators = {}
    for entry in raw["accelerators"]:
        entry = dict(
            entry,
            aliases=tuple(entry.get("aliases", ())),
            field_sources=tuple(sorted(entry.get("field_sources", {}).items())),
        )
        accelerators[entry["name"]] = Accelerator(**entry)
    return accelerators


def catalog_table() -> pd.DataFrame:
    """The catalog as a table: one row per accelerator, dense peaks, bandwidth and source."""
    columns = [
        "name",
        "memory_gb",
        "memory_bandwidth_gb_per_s",
        "fp32_tflops",
        "tf32_tflops",
        "fp16_tflops",
        "bf16_tflops",
        "source",
    ]
    return pd.DataFrame([[getattr(a, c) for c in columns] for a in catalog().values()], columns=columns)


def lookup(name: str) -> Accelerator:
    """The catalog entry whose name or alias is ``name`` (case-insensitive)."""
    wanted = str(name).strip().lower()
    for acc in catalog().values():
        if wanted == acc.name.lower() or wanted in (a.lower() for a in acc.aliases):
            return acc
    raise InputError("accelerator", f"accelerator must be one of {', '.join(map(repr, catalog()))}, got {name!r}")


def find_accelerator(device_name: str | None) -> Accelerator | None:
    """Match a ``torch.cuda.get_device_name()`` string to the catalog; None when unknown (no bound)."""
    if not device_name:
        return None
    try:
        return lookup(device_name)
    except ValueError:
        return None


@dataclass(frozen=True)
class Roofline:
    """A peak and a bandwidth; evaluate any arithmetic intensity against them."""

    peak_flops_per_s: float
    bandwidth_bytes_per_s: float

    def __post_init__(self) -> None:
        positive("peak_flops_per_s", self.peak_flops_per_s)
        positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)

    @property
    def ridge_point_flops_per_byte(self) -> float:
        """The intensity where the memory roof meets the compute roof."""
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    def attainable_flops_per_s(self, intensity_flops_per_byte: float) -> float:
        positive("intensity_flops_per_byte", intensity_flops_per_byte)
        return min(self.peak_flops_per_s, intensity_flops_per_byte * self.bandwidth_bytes_per_s)

    def bound(self, intensity_flops_per_byte: float) -> str:
        """ "memory-bound" below the ridge point, "compute-bound" at or above it."""
        positive("intensity_flops_per_byte", intensity_flops_per_byte)
        return "memory-bound" if intensity_flops_per_byte < self.ridge_point_flops_per_byte else "compute-bound"


@dataclass(frozen=True)
class LayerCost:
    """FLOPs and bytes moved by one kernel, and their ratio."""

    flops: int
    bytes_moved: int

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.bytes_moved


def linear_layer_cost(
    batch: int, in_features: int, out_features: int, dtype: str | torch.dtype = "float32", bias: bool = True
) -> LayerCost:
    """Forward pass of ``nn.Linear``: 2 x batch x in x out FLOPs (the matmul's multiply-adds, as
    ``FlopCounterMode`` counts them), over the bytes read and written once each: input, weight,
    bias and output."""
    b = integer_at_least("batch", batch, 1)
    n_in = integer_at_least("in_features", in_features, 1)
    n_out = integer_at_least("out_features", out_features, 1)
    elements = b * n_in + n_in * n_out + b * n_out + (n_out if bias else 0)
    return LayerCost(flops=2 * b * n_in * n_out, bytes_moved=elements * bytes_per_element(dtype))


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs of one call of ``fn`` (forward and, if it calls it, backward), by ``FlopCounterMode``."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


class PeakChoice(NamedTuple):
    """The catalog peak a step is bounded by (a key of :meth:`Accelerator.peak_flops_per_s`) and why."""

    precision: str
    reason: str


def bounding_peak(contract, convolutions: bool = False) -> PeakChoice:
    """Which peak bounds a step measured under ``contract``
    (a :class:`~gpucost_lab.measure.contract.BenchmarkContract`).

    A float32 step on CUDA may run its matmuls on TF32 tensor cores when the contract's ``float32_matmul`` is
    "tf32", and its cuDNN convolutions when ``float32_conv`` is (set ``convolutions`` when the step convolves).
    Its bound is then the TF32 peak, 8x the FP32 one on an A100: against the FP32 peak a correct timing would be
    called impossible. Any other dtype, or float32 off CUDA, is bounded by the dtype's own peak.
    """
    dtype = dtype_name(contract.dtype)
    if dtype != "float32":
        return PeakChoice(dtype, f"{dtype} peak: the contract's dtype")
    if not str(contract.device).startswith("cuda"):
        return PeakChoice("float32", f"FP32 peak: float32 on {contract.device}, where TF32 does not apply")
    if contract.float32_matmul == "tf32":
        return PeakChoice("tf32", "TF32 peak: CUDA float32 matmuls may use TF32 tensor cores (float32_matmul='tf32')")
    if convolutions and contract.float32_conv == "tf32":
        return PeakChoice(
            "tf32", "TF32 peak: cuDNN float32 convolutions may use TF32 tensor cores (float32_conv='tf32')"
        )
    return PeakChoice("float32", "FP32 peak: CUDA float32 matmuls run in IEEE FP32 (float32_matmul='ieee')")


@dataclass(frozen=True)
class PlausibilityCheck:
    """A measured throughput held against the roofline bound."""

    measured_flops_per_s: float
    bound_flops_per_s: float
    fraction_of_bound: float
    impossible: bool
    message: str
    peak_precision: str | None = None  # the catalog peak the compute roof is, when the caller said (PeakChoice)
    peak_reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def check_throughput(
    units_per_s: float,
    flops_per_unit: float,
    roofline: Roofline,
    intensity_flops_per_byte: float | None = None,
    peak: PeakChoice | None = None,
) -> PlausibilityCheck:
    """Flag a throughput whose implied FLOP/s exceed the attainable bound as impossible.

    Without an intensity the bound is the compute peak (the loosest roof). ``peak`` (from
    :func:`bounding_peak`) says which catalog peak ``roofline`` was built from, and is stated in the message.
    """
    measured = positive("units_per_s", units_per_s) * positive("flops_per_unit", flops_per_unit)
    bound = (
        roofline.peak_flops_per_s
        if intensity_flops_per_byte is None
        else roofline.attainable_flops_per_s(intensity_flops_per_byte)
    )
    impossible = measured > bound
    message = f"{measured / 1e12:.3g} TFLOP/s is {measured / bound:.1%} of the {bound / 1e12:.3g} TFLOP/s bound"
    if peak is not None:
        message += f" ({peak.reason})"
    if impossible:
        message += ": impossible; the usual cause is timing without synchronizing the device"
    precision, reason = peak if peak is not None else (None, None)
    return PlausibilityCheck(measured, bound, measured / bound, impossible, message, precision, reason)
