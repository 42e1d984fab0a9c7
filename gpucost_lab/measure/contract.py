"""The frozen benchmark contract (chapter 01): everything a number depends on, written down.

A throughput or a cost is only comparable with another measured under the same contract: same
hardware, software, model, shapes, precision, warm-up, synchronization and counted unit. Comparing
across contracts raises :class:`ContractMismatch` naming every changed field, unless the change is
the one being tested and is named in ``allow``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, NamedTuple

from gpucost_lab._validate import InputError, integer_at_least, one_of
from gpucost_lab.measure import device as _device

if TYPE_CHECKING:  # torch is imported where a contract is captured, not when this module is
    import torch

COUNTED_UNITS = ("samples", "tokens")
FLOAT32_MATH = ("ieee", "tf32")  # how CUDA may run float32 matmuls and convolutions: IEEE FP32, or TF32 tensor cores


class FieldChange(NamedTuple):
    field: str
    before: object
    after: object


class ContractMismatch(Exception):
    """Two results were measured under different contracts."""

    def __init__(self, changes: Sequence[FieldChange]):
        self.changes = tuple(changes)
        listed = "; ".join(f"{c.field}: {c.before!r} -> {c.after!r}" for c in self.changes)
        super().__init__(f"contracts differ in {len(self.changes)} field(s): {listed}")


@dataclass(frozen=True)
class BenchmarkContract:
    """What a benchmark measured and how; see :meth:`capture` to fill it from the running machine."""

    # hardware
    cpu_model: str
    cpu_cores: int
    gpu_name: str | None  # None on a CPU-only machine
    gpu_memory_bytes: int | None
    # software
    python_version: str
    torch_version: str
    cuda_version: str | None  # the CUDA torch was built with; None for a CPU build
    threads: int  # torch intra-op threads
    float32_matmul: str  # "tf32" when CUDA float32 matmuls may use TF32 tensor cores, else "ieee"
    float32_conv: str  # the same for cuDNN float32 convolutions ("tf32" is torch's default)
    # workload
    device: str  # "cpu" or "cuda[:N]"
    model_name: str
    parameter_count: int
    input_shapes: tuple[tuple[int, ...], ...]
    dtype: str  # e.g. "float32", "bfloat16"
    warmup_steps: int  # untimed steps before the first repeat
    measured_steps: int  # timed steps per repeat
    repeats: int  # independent timed repeats (>= 2, for an interval)
    sync_method: str  # how the device was synchronized before each clock read
    counted_unit: str  # "samples" or "tokens"
    units_per_step: int  # useful units one step processes
    seed: int

    def __post_init__(self) -> None:
        integer_at_least("warmup_steps", self.warmup_steps, 0)
        integer_at_least("measured_steps", self.measured_steps, 1)
        integer_at_least("repeats", self.repeats, 2)
        integer_at_least("units_per_step", self.units_per_step, 1)
        integer_at_least("parameter_count", self.parameter_count, 0)
        one_of("counted_unit", self.counted_unit, COUNTED_UNITS)
        one_of("float32_matmul", self.float32_matmul, FLOAT32_MATH)
        one_of("float32_conv", self.float32_conv, FLOAT32_MATH)
        # JSON has no tuples: normalise shapes so a round trip compares equal.
        object.__setattr__(self, "input_shapes", tuple(tuple(int(d) for d in s) for s in self.input_shapes))

    @classmethod
    def capture(
        cls,
        *,
        model: torch.nn.Module | None = None,
        inputs: Iterable = (),
        dtype: str | torch.dtype = "float32",
        device: str = "auto",
        warmup_steps: int = 5,
        measured_steps: int = 20,
        repeats: int = 5,
        counted_unit: str = "samples",
        units_per_step: int | None = None,
        seed: int = 0,
        model_name: str | None = None,
        parameter_count: int | None = None,
    ) -> BenchmarkContract:
        """Freeze a contract from the running environment plus the workload.

        ``inputs`` holds tensors or shapes; ``units_per_step`` defaults to the first input's first
        dimension (the batch size, for samples).
        """
        import torch

        device = _device.resolve_device(device)
        shapes = tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else tuple(x) for x in inputs)
        if units_per_step is None:
            if not shapes or not shapes[0]:
                raise InputError(
                    "units_per_step", "units_per_step must be given when inputs has no batch dimension, got None"
                )
            units_per_step = shapes[0][0]
        if parameter_count is None:
            parameter_count = sum(p.numel() for p in model.parameters()) if model is not None else 0
        if model_name is None:
            model_name = _describe(model) if model is not None else "unnamed"
        return cls(
            **environment(device),
            device=device,
            model_name=model_name,
            parameter_count=parameter_count,
            input_shapes=shapes,
            dtype=str(dtype).removeprefix("torch."),
            warmup_steps=warmup_steps,
            measured_steps=measured_steps,
            repeats=repeats,
            sync_method=_device.sync_method(device),
            counted_unit=counted_unit,
            units_per_step=units_per_step,
            seed=seed,
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["input_shapes"] = [list(s) for s in self.input_shapes]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> BenchmarkContract:
        names = {f.name for f in fields(cls)}
        if set(data) != names:
            missing, unknown = sorted(names - set(data)), sorted(set(data) - names)
            raise InputError(
                "contract", f"contract fields must be exactly {sorted(names)}; missing {missing}, unknown {unknown}"
            )
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> BenchmarkContract:
        return cls.from_dict(json.loads(text))

    @property
    def fingerprint(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON: equal contracts, equal fingerprints."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def diff(self, other: BenchmarkContract) -> tuple[FieldChange, ...]:
        """Every field whose value differs, in declaration order."""
        return tuple(
            FieldChange(f.name, getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        )

    def require_same(self, other: BenchmarkContract, allow: Iterable[str] = ()) -> None:
        """Raise :class:`ContractMismatch` unless ``other`` differs only in the fields named in ``allow``."""
        allow = set(allow)
        unknown = allow - {f.name for f in fields(self)}
        if unknown:
            raise InputError("allow", f"allow must name contract fields, got unknown {sorted(unknown)}")
        changes = [c for c in self.diff(other) if c.field not in allow]
        if changes:
            raise ContractMismatch(changes)

    def check_environment(self) -> None:
        """Raise :class:`ContractMismatch` if the running machine is not the one the contract names."""
        now = replace(self, **environment(self.device))
        self.require_same(now)


def environment(device: str = "cpu") -> dict:
    """The contract's hardware and software fields, read from the running machine and process."""
    import torch

    gpu_name = gpu_memory_bytes = None
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        gpu_name, gpu_memory_bytes = props.name, int(props.total_memory)
    return {
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count() or 1,
        "gpu_name": gpu_name,
        "gpu_memory_bytes": gpu_memory_bytes,
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "threads": torch.get_num_threads(),
        **float32_math(),
    }


def float32_math() -> dict:
    """Whether CUDA may run float32 matmuls and cuDNN float32 convolutions on TF32 tensor cores, as torch
    reports it now: ``{"float32_matmul": "tf32" or "ieee", "float32_conv": ...}``, recorded on every device.

    ``torch.set_float32_matmul_precision("high")`` or ``("medium")`` and ``torch.backends.cuda.matmul.allow_tf32 =
    True`` turn matmuls to "tf32"; ``torch.backends.cudnn.allow_tf32`` (True by default) does it for convolutions.
    The ``fp32_precision`` settings of torch 2.9 and later are read first: they resolve both ways of setting it,
    where the older getters refuse to answer once the two are mixed.
    """
    import torch

    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    return {
        "float32_matmul": _tf32_or_ieee(matmul, lambda: matmul.allow_tf32),
        "float32_conv": _tf32_or_ieee(getattr(cudnn, "conv", None), lambda: cudnn.allow_tf32),
    }


def _tf32_or_ieee(backend: object, legacy_flag: Callable[[], bool]) -> str:
    precision = getattr(backend, "fp32_precision", None)
    allowed = precision == "tf32" if isinstance(precision, str) else bool(legacy_flag())
    return "tf32" if allowed else "ieee"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what the platform module says (also what the benchmarks
    record about their machine)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _describe(model: torch.nn.Module) -> str:
    """A short, stable model name: the class, or the class of a one-child wrapper with its shape."""
    text = repr(model)
    return text if len(text) <= 80 else type(model).__name__
