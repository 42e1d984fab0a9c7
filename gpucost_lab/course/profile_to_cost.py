"""The course's worked example as a tool (chapter 01): profile to cost, honestly.

Linear(1024, 1024), batch 256, 5 warm-up steps, 20 timed steps per repeat, priced at an assumed
$2.10 per accelerator-hour. The contract is frozen first; timing synchronizes the device; the
profiler runs in its own short window, never during the timed repeats, because profiling slows
the steps it records. On a catalog GPU the throughput is held against the roofline: the TF32 peak
when the contract records that float32 matmuls may use TF32 (``float32_matmul="tf32"``), else FP32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from gpucost_lab import cost
from gpucost_lab._validate import integer_at_least
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.profiling import operator_table, peak_allocated_bytes, profile_window
from gpucost_lab.measure.timing import Measurement, measure
from gpucost_lab.memory.from_model import storage_bytes
from gpucost_lab.roofline.bound import PlausibilityCheck, bounding_peak, check_throughput, count_flops, find_accelerator
from gpucost_lab.stats import Estimate

# Timed repeats: each is 20 steps of the worked example, about 0.5 s on the course's 2-core CPU (up to 3 s beside
# other work), so 100 repeats take about a minute; at least 2 give an interval.
MAX_REPEATS = 100


@dataclass
class LinearWorkload:
    """One SGD training step of ``Linear(features, features)`` on a fixed random batch (MSE loss)."""

    model: torch.nn.Module
    inputs: torch.Tensor
    targets: torch.Tensor
    optimizer: torch.optim.Optimizer

    @classmethod
    def build(
        cls,
        device: str = "cpu",
        batch: int = 256,
        features: int = 1024,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
    ) -> LinearWorkload:
        torch.manual_seed(seed)
        model = torch.nn.Linear(features, features).to(device=device, dtype=dtype)
        inputs = torch.randn(batch, features, device=device, dtype=dtype)
        targets = torch.randn(batch, features, device=device, dtype=dtype)
        return cls(model, inputs, targets, torch.optim.SGD(model.parameters(), lr=1e-3))

    def step(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(self.model(self.inputs), self.targets)
        loss.backward()
        self.optimizer.step()

    def resident_bytes(self) -> int:
        """Parameters, optimizer state and the batch: memory held across steps."""
        state = [v for s in self.optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
        return storage_bytes([*self.model.parameters(), *state, self.inputs, self.targets])


@dataclass(frozen=True)
class ProfileToCost:
    measurement: Measurement
    price_per_hour_usd: float
    cost_per_sample_usd: Estimate
    peak_memory_bytes: int
    peak_memory_method: str
    flops_per_step: int
    top_ops: list[dict]
    plausibility: PlausibilityCheck | None  # None when the accelerator is not in the catalog (or on CPU)

    def to_dict(self) -> dict:
        return {
            "contract": self.measurement.contract.to_dict(),
            "contract_fingerprint": self.measurement.contract.fingerprint,
            "repeat_times_s": list(self.measurement.repeat_times_s),
            "samples_per_second": self.measurement.units_per_s.to_dict(),
            "cost_per_sample_usd": self.cost_per_sample_usd.to_dict(),
            "price_per_hour_usd": self.price_per_hour_usd,
            "peak_memory_bytes": self.peak_memory_bytes,
            "peak_memory_method": self.peak_memory_method,
            "flops_per_step": self.flops_per_step,
            "top_ops": self.top_ops,
            "plausibility": self.plausibility.to_dict() if self.plausibility else None,
        }


def run(
    device: str = "auto",
    price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD,
    repeats: int = 5,
    warmup_steps: int = 5,
    measured_steps: int = 20,
    batch: int = 256,
    features: int = 1024,
    seed: int = 0,
    top: int = 5,
    progress: bool = False,
    step_factory: Callable[[str], LinearWorkload] | None = None,
) -> ProfileToCost:
    """Freeze the contract, time with synchronization over repeats, profile a window, price the result."""
    cost.cost_per_second_usd(price_per_hour_usd)  # validate before spending time
    integer_at_least("repeats", repeats, 2, MAX_REPEATS)
    contract = BenchmarkContract.capture(
        model=None,
        inputs=[(batch, features)],
        dtype="float32",
        device=device,
        warmup_steps=warmup_steps,
        measured_steps=measured_steps,
        repeats=repeats,
        counted_unit="samples",
        seed=seed,
        model_name=f"Linear({features}, {features})",
        parameter_count=features * features + features,
    )
    work = (step_factory or (lambda d: LinearWorkload.build(d, batch, features, seed)))(contract.device)
    on_cuda = contract.device.startswith("cuda")
    if on_cuda:
        torch.cuda.reset_peak_memory_stats(contract.device)
    measurement = measure(work.step, contract, progress=progress)
    prof = profile_window(work.step, device=contract.device, wait=1, warmup=1, active=5, profile_memory=not on_cuda)
    if on_cuda:
        peak_bytes = torch.cuda.max_memory_allocated(contract.device)
        method = "torch.cuda.max_memory_allocated over warm-up and timed steps"
    else:
        peak_bytes = work.resident_bytes() + peak_allocated_bytes(prof, device_type=0)
        method = "resident parameters, optimizer state and batch + profiler's peak allocated within 5 steps"
    ops = operator_table(prof, top=top, on_device=on_cuda).to_dict(orient="records")
    flops = count_flops(work.step)
    accelerator = find_accelerator(contract.gpu_name)
    check = None
    if accelerator is not None:
        peak = bounding_peak(contract)  # the step has matmuls and no convolutions
        check = check_throughput(
            measurement.units_per_s_geomean, flops / batch, accelerator.roofline(peak.precision), peak=peak
        )
    return ProfileToCost(
        measurement,
        float(price_per_hour_usd),
        cost.measured_cost_per_unit(measurement, price_per_hour_usd),
        int(peak_bytes),
        method,
        flops,
        ops,
        check,
    )
