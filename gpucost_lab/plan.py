"""The single-GPU optimization plan on the built-in workload, end to end (chapter 06).

Profile the baseline and a candidate, confirm quality parity at the target, plan memory against the
device budget, price both to the target with intervals, and let the release gate decide: promote,
or fall back to the named baseline (or the registry's last known-good). Every decision records why.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from . import cost
from .contract import BenchmarkContract
from .memory import MemoryLedger
from .model_memory import measure_model_memory
from .profiling import operator_table, profile_window
from .quality import ParityReport, check_parity
from .release import CandidateResult, Decision, Registry, gate
from .report import ReportData, RunRow
from .timing import Measurement, measure
from .workloads import ClassificationTask, TrainingStep, TrainResult, train_to_target


@dataclass(frozen=True)
class Config:
    """One way to train the built-in task, and the contract fields it changes from the baseline."""

    batch_size: int = 64
    lr: float = 0.01
    hidden: int = 128
    precision: str = "fp32"
    changes: tuple[str, ...] = ()  # contract fields this config is allowed to change
    note: str = ""


BASELINE_NAME = "fp32-baseline"
BASELINE = Config(note="the job as it runs tonight")
CANDIDATES = {
    "batch128-lr-scaled": Config(batch_size=128, lr=0.02, changes=("input_shapes", "units_per_step"),
                                 note="twice the batch with the learning rate scaled with it"),
    "bf16-autocast": Config(precision="bf16-autocast", changes=("dtype",),
                            note="bf16 autocast; on CPUs without bf16 matrix units it is slower per step"),
    "tiny-model": Config(hidden=8, changes=("model_name", "parameter_count"),
                         note="a 16x narrower hidden layer: faster per step, but it does not reach the target in time"),
}
MAX_STEPS = 300  # a candidate that has not reached the target by then has failed parity
DEVICE_GB, RESERVE_FRACTION = 24.0, 0.10  # the team's 24 GB card, 10% held back
WINDOW_HOURS = 8.0
NIGHTLY_RUNS_OF_TARGET = 1  # the nightly job trains once to the target


@dataclass(frozen=True)
class RunPlan:
    """What was measured for one config."""

    name: str
    config: Config
    measurement: Measurement
    steps_to_target: int  # MAX_STEPS when the target was not reached
    reached: bool
    final_accuracy: float
    peak_memory_bytes: int
    cost_to_target_usd: object  # Estimate
    training: TrainResult  # the run to the quality target
    top_ops: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"name": self.name, "batch_size": self.config.batch_size, "lr": self.config.lr,
                "hidden": self.config.hidden, "precision": self.config.precision,
                "samples_per_second": self.measurement.units_per_s.to_dict(),
                "steps_to_target": self.steps_to_target, "reached_target": self.reached,
                "final_accuracy": self.final_accuracy, "peak_memory_bytes": self.peak_memory_bytes,
                "cost_to_target_usd": self.cost_to_target_usd.to_dict(), "top_ops": self.top_ops}


@dataclass(frozen=True)
class PlanResult:
    baseline: RunPlan
    candidate: RunPlan
    parity: ParityReport
    budget_bytes: int
    decision: Decision
    price_per_hour_usd: float

    def to_dict(self) -> dict:
        c = self.decision
        return {
            "baseline": self.baseline.to_dict(), "candidate": self.candidate.to_dict(),
            "parity": {"passed": self.parity.passed, "metric": self.parity.metric,
                       "baseline_metric": self.parity.baseline_metric, "candidate_metric": self.parity.candidate_metric,
                       "tolerance": self.parity.tolerance, "reasons": list(self.parity.reasons)},
            "memory": {"peak_bytes": self.candidate.peak_memory_bytes, "budget_bytes": self.budget_bytes,
                       "fits": self.candidate.peak_memory_bytes <= self.budget_bytes},
            "cost_to_target": {"baseline": self.baseline.cost_to_target_usd.to_dict(),
                               "candidate": self.candidate.cost_to_target_usd.to_dict(),
                               "ratio": c.cost_ratio,
                               "ratio_ci95": list(c.cost_ratio_ci95) if c.cost_ratio_ci95 else None},
            "decision": {"action": c.action, "to": c.to, "reasons": list(c.reasons)},
            "price_per_hour_usd": self.price_per_hour_usd,
        }

    def report_data(self) -> ReportData:
        """The plan as a throughput/cost report (write it with :func:`gpucost_lab.report.write_report`)."""
        def row(run: RunPlan, parity: str) -> RunRow:
            return RunRow(run.name, run.measurement.units_per_s,
                          cost.measured_cost_per_unit(run.measurement, self.price_per_hour_usd),
                          run.peak_memory_bytes, run.steps_to_target, run.cost_to_target_usd, parity)

        m = self.baseline.measurement
        method = (f"synchronized timing, {m.contract.repeats} repeats x {m.contract.measured_steps} steps after "
                  f"{m.contract.warmup_steps} warm-up steps, Student-t 95% CI")
        parity = ("passed" if self.parity.passed else "failed") + (
            f": accuracy {self.parity.candidate_metric:.3f} vs {self.parity.baseline_metric:.3f} "
            f"(tolerance {self.parity.tolerance})")
        return ReportData(f"Optimization plan: {self.candidate.name} against {self.baseline.name}", m.contract, method,
                          self.price_per_hour_usd, row(self.baseline, "reference"), row(self.candidate, parity),
                          self.decision, candidate_contract=self.candidate.measurement.contract,
                          quality_target=f"validation accuracy >= {self.parity.target_accuracy}")


MEASURED_STEPS = 200  # per repeat: long enough (tens of ms) that one scheduler hiccup cannot dominate a repeat


def measure_config(name: str, config: Config, *, task: ClassificationTask | None = None,
                   price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD, repeats: int = 5) -> RunPlan:
    """Measure, profile, train to target and plan the memory of one config of the built-in task."""
    task = task or ClassificationTask()
    step = TrainingStep(task, config.batch_size, hidden=config.hidden, lr=config.lr, precision=config.precision)
    contract = BenchmarkContract.capture(model=step.model, inputs=[step.x], dtype=_dtype(config), device="cpu",
                                         warmup_steps=10, measured_steps=MEASURED_STEPS, repeats=repeats,
                                         seed=task.seed,
                                         model_name=f"MLP(32-{config.hidden}-8)")
    measurement = measure(step, contract)
    prof = profile_window(step, wait=1, warmup=1, active=3, profile_memory=False)
    ops = operator_table(prof, top=5).to_dict(orient="records")
    result = train_to_target(task, batch_size=config.batch_size, lr=config.lr, hidden=config.hidden,
                             precision=config.precision, max_steps=MAX_STEPS)
    steps = result.steps_to_target or MAX_STEPS
    memory = measure_model_memory(task.model(config.hidden), (step.x,),
                                  optimizer_factory=lambda ps: torch.optim.SGD(ps, lr=config.lr, momentum=0.9))
    peak = memory.static_bytes + int(memory.activation_bytes_per_sample * config.batch_size)
    to_target = cost.measured_cost_to_target(measurement, steps, price_per_hour_usd)
    return RunPlan(name, config, measurement, steps, result.reached, result.final_val_accuracy, peak, to_target,
                   result, ops)


def _dtype(config: Config) -> str:
    return "bfloat16" if config.precision == "bf16-autocast" else "float32"


def run_plan(candidate: str = "batch128-lr-scaled", *, price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD,
             repeats: int = 5, registry: Registry | None = None, baseline: RunPlan | None = None) -> PlanResult:
    """Profile, check parity, plan memory, price to target and decide, for one named candidate.

    Pass ``baseline`` (from :func:`measure_config` with ``BASELINE``) to judge several candidates
    against one baseline measurement; it must have been priced at the same price.
    """
    if candidate not in CANDIDATES:
        raise ValueError(f"candidate must be one of {', '.join(map(repr, CANDIDATES))}, got {candidate!r}")
    cost.cost_per_second_usd(price_per_hour_usd)  # validate the price before spending time
    base = baseline or measure_config(BASELINE_NAME, BASELINE, price_per_hour_usd=price_per_hour_usd, repeats=repeats)
    cand = measure_config(candidate, CANDIDATES[candidate], price_per_hour_usd=price_per_hour_usd, repeats=repeats)
    parity = check_parity(base.training, cand.training)
    budget_bytes = int(MemoryLedger(static_gb=0, activation_gb_per_sample=1, device_gb=DEVICE_GB,
                                    reserve_fraction=RESERVE_FRACTION).budget_gb * 1e9)

    def as_candidate(run: RunPlan, passed: bool, reasons) -> CandidateResult:
        hours = run.steps_to_target * run.measurement.step_time_s.mean * NIGHTLY_RUNS_OF_TARGET / 3600
        return CandidateResult(run.name, run.measurement.contract, run.cost_to_target_usd, passed, tuple(reasons),
                               run.peak_memory_bytes, hours)

    fallback = registry.last_known_good() if registry is not None else None
    decision = gate(as_candidate(base, True, ("reference",)), as_candidate(cand, parity.passed, parity.reasons),
                    budget_bytes=budget_bytes, window_hours=WINDOW_HOURS, allow=CANDIDATES[candidate].changes,
                    fallback=fallback if fallback not in (None, candidate) else None)
    if registry is not None:
        registry.record(decision)
    return PlanResult(base, cand, parity, budget_bytes, decision, float(price_per_hour_usd))
