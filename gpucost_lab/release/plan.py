"""The single-GPU optimization plan on the built-in workload, end to end (chapter 06).

Profile the baseline and a candidate, train both over several seeds to confirm quality parity at a
fixed step budget and count steps to the target, plan memory against the device budget, time the two
steps interleaved (ABBA/BAAB rounds, :func:`gpucost_lab.measure.compare.compare_steps`), price both to the target
with intervals that carry the timing and the seeds, and let the release gate decide: promote, or fall
back to the named baseline (or the registry's last known-good). Every decision records why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from gpucost_lab import cost
from gpucost_lab._validate import InputError, integer_at_least, one_of
from gpucost_lab.measure.compare import Comparison, compare_steps
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.profiling import operator_table, profile_window
from gpucost_lab.measure.timing import Measurement
from gpucost_lab.memory.figures import DEFAULT_DEVICE_GB, DEFAULT_RESERVE_FRACTION
from gpucost_lab.memory.from_model import measure_model_memory
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.quality.parity import ParityReport, check_parity
from gpucost_lab.quality.seeds import SeedRuns, train_over_seeds
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainingStep
from gpucost_lab.release.candidate import CandidateResult
from gpucost_lab.release.gate import Decision, gate
from gpucost_lab.release.registry import Registry
from gpucost_lab.release.report import ReportData
from gpucost_lab.stats import Estimate, Interval, RatioVerdict


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
    "batch128-lr-scaled": Config(
        batch_size=128,
        lr=0.02,
        changes=("input_shapes", "units_per_step"),
        note="twice the batch with the learning rate scaled with it",
    ),
    "bf16-autocast": Config(
        precision="bf16-mixed",
        changes=("dtype",),
        note="bf16 autocast; on CPUs without bf16 matrix units it is slower per step",
    ),
    "tiny-model": Config(
        hidden=8,
        changes=("model_name", "parameter_count"),
        note="a 16x narrower hidden layer: faster per step, but it does not reach the target in time",
    ),
}
DEVICE_GB, RESERVE_FRACTION = DEFAULT_DEVICE_GB, DEFAULT_RESERVE_FRACTION  # the team's 24 GB card, 10% held back
WINDOW_HOURS = 8.0
NIGHTLY_RUNS_OF_TARGET = 1  # the nightly job trains once to the target


# Steps to target and parity are measured over these seeds (model initialisation, batch order). Every config
# trains on the same seeds, so the steps ratio is estimated seed by seed (Comparison.cost_to_target): on the
# built-in task the baseline's steps range 67-113 over seeds, but the per-seed ratio of batch128-lr-scaled
# spreads only ~10% (log std 0.10); five seeds put the cost-to-target interval within about -+15%.
SEEDS = (0, 1, 2, 3, 4)
# Every seed of every config trains exactly this many steps: parity compares held-out accuracy there, and a
# seed that has not reached the target by then has failed parity (its steps to target count as this budget).
# 150 steps: every baseline seed reaches the 0.85 target by step 113; the 8-wide model by none.
PARITY_STEPS = 150
ROUNDS = 10  # ABBA/BAAB rounds of the interleaved timing (compare.compare_steps)
# Rounds of the interleaved timing: each times four blocks of the two steps (about 0.1 s on the course's CPU), so
# 1,000 rounds add a couple of minutes to the plan's; more are not a plan anyone waits for (10**9 ran on for days).
MAX_ROUNDS = 1000
MEASURED_STEPS = 40  # per block: long enough (several ms) that one scheduler hiccup cannot dominate a block


@dataclass(frozen=True)
class RunPlan:
    """One config measured before its timing: the step to time and its contract, quality over seeds, profile,
    planned memory. Timed beside the baseline, it becomes a :class:`~gpucost_lab.release.candidate.CandidateResult`
    (:meth:`release`)."""

    name: str
    config: Config
    step: TrainingStep  # the timed step
    contract: BenchmarkContract  # the contract the step is timed under
    seeds: SeedRuns  # trained over SEEDS for PARITY_STEPS steps, first crossing of the target recorded
    peak_memory_bytes: int
    top_ops: list = field(default_factory=list)

    @property
    def reached(self) -> bool:
        return self.seeds.reached_all

    @property
    def steps_to_target_per_seed(self) -> tuple[int, ...]:
        """Steps to the target for each seed; PARITY_STEPS stands in for a seed that missed it."""
        return tuple(r.steps_to_target or PARITY_STEPS for r in self.seeds.runs)

    @property
    def steps_to_target(self) -> float:
        """Geometric mean over seeds of the steps to target (the figure the cost uses)."""
        return Estimate.of(self.steps_to_target_per_seed).geomean

    def release(
        self,
        measurement: Measurement,
        price_per_hour_usd: float,
        parity_passed: bool,
        parity_reasons: tuple[str, ...],
        parity_summary: str,
    ) -> CandidateResult:
        """The measured-run record of this config, timed as ``measurement``: what the gate judges and the report
        shows. Its cost to target is the measured cost per step x steps per seed; its nightly run takes
        NIGHTLY_RUNS_OF_TARGET trainings to the target at the geometric-mean step time."""
        hours = self.steps_to_target * measurement.step_time_s.geomean * NIGHTLY_RUNS_OF_TARGET / 3600
        return CandidateResult(
            name=self.name,
            contract=measurement.contract,
            cost_to_target_usd=cost.measured_cost_to_target(
                measurement, self.steps_to_target_per_seed, price_per_hour_usd
            ),
            parity_passed=parity_passed,
            parity_reasons=tuple(parity_reasons),
            peak_memory_bytes=self.peak_memory_bytes,
            run_hours=hours,
            samples_per_s=measurement.units_per_s,
            cost_per_sample_usd=cost.measured_cost_per_unit(measurement, price_per_hour_usd),
            steps_to_target=self.steps_to_target,
            parity_summary=parity_summary,
        )

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "batch_size": self.config.batch_size,
            "lr": self.config.lr,
            "hidden": self.config.hidden,
            "precision": self.config.precision,
            "seeds": list(SEEDS),
            "steps_to_target_per_seed": list(self.steps_to_target_per_seed),
            "steps_to_target": self.steps_to_target,
            "reached_target": self.reached,
            "accuracy_at_parity_steps": list(self.seeds.accuracy_at_budget_values),
            "peak_memory_bytes": self.peak_memory_bytes,
            "top_ops": self.top_ops,
        }


@dataclass(frozen=True)
class PlanResult:
    baseline: RunPlan
    candidate: RunPlan
    comparison: Comparison  # the interleaved timing of the two steps
    cost: RatioVerdict  # candidate / baseline cost to target
    parity: ParityReport
    budget_bytes: int
    decision: Decision
    price_per_hour_usd: float
    baseline_release: CandidateResult  # the baseline as timed: what the gate judged and the report shows
    candidate_release: CandidateResult  # the candidate as timed

    def _release(self, side: str) -> CandidateResult:
        one_of("side", side, ("baseline", "candidate"))
        return self.baseline_release if side == "baseline" else self.candidate_release

    def cost_to_target_usd(self, side: str) -> Estimate | Interval:
        """Cost to target of ``"baseline"`` or ``"candidate"``: its interleaved blocks' cost per step x steps
        per seed."""
        return self._release(side).cost_to_target_usd

    def _samples_per_s(self, side: str) -> Estimate:
        """Throughput of ``"baseline"`` or ``"candidate"`` as timed beside the other (samples/s)."""
        rate = self._release(side).samples_per_s
        assert rate is not None  # RunPlan.release records it
        return rate

    def to_dict(self) -> dict:
        c = self.decision
        sides = {"baseline": self.baseline, "candidate": self.candidate}
        return {
            **{
                side: {**run.to_dict(), "samples_per_second": self._samples_per_s(side).to_dict()}
                for side, run in sides.items()
            },
            "timing": self.comparison.to_dict(),
            "parity": {
                "passed": self.parity.passed,
                "metric": self.parity.metric,
                "baseline_metric": self.parity.baseline_metric,
                "candidate_metric": self.parity.candidate_metric,
                "tolerance": self.parity.tolerance,
                "reasons": list(self.parity.reasons),
            },
            "memory": {
                "peak_bytes": self.candidate.peak_memory_bytes,
                "budget_bytes": self.budget_bytes,
                "fits": self.candidate.peak_memory_bytes <= self.budget_bytes,
            },
            "cost_to_target": {
                "baseline": self.cost_to_target_usd("baseline").to_dict(),
                "candidate": self.cost_to_target_usd("candidate").to_dict(),
                "ratio": c.cost_ratio,
                "verdict": self.cost.verdict,
                "ratio_ci95": list(c.cost_ratio_ci95) if c.cost_ratio_ci95 else None,
            },
            "decision": {"action": c.action, "to": c.to, "reasons": list(c.reasons)},
            "price_per_hour_usd": self.price_per_hour_usd,
        }

    def report_data(self) -> ReportData:
        """The plan as a throughput/cost report (write it with :func:`gpucost_lab.release.report.write_report`)."""
        cmp = self.comparison
        method = (
            f"synchronized timing interleaved with the baseline in {cmp.rounds} ABBA/BAAB rounds of "
            f"{cmp.baseline_contract.measured_steps} steps per block after warm-up; geometric means, "
            f"log-scale Student-t 95% CI; steps to target over seeds {', '.join(map(str, SEEDS))}"
        )
        return ReportData(
            f"Optimization plan: {self.candidate.name} against {self.baseline.name}",
            cmp.baseline.contract,
            method,
            self.price_per_hour_usd,
            self.baseline_release,
            self.candidate_release,
            self.decision,
            candidate_contract=cmp.candidate.contract,
            quality_target=f"validation accuracy >= {self.parity.target_accuracy}",
        )


def measure_config(name: str, config: Config, *, task: ClassificationTask | None = None) -> RunPlan:
    """Profile, train over seeds and plan the memory of one config of the built-in task (timing is done
    by :func:`run_plan`, interleaved with the baseline)."""
    task = task or ClassificationTask()
    step = TrainingStep(task, config.batch_size, hidden=config.hidden, lr=config.lr, precision=config.precision)
    contract = BenchmarkContract.capture(
        model=step.model,
        inputs=[step.x],
        dtype=_dtype(config),
        device="cpu",
        warmup_steps=10,
        measured_steps=MEASURED_STEPS,
        repeats=ROUNDS,
        seed=task.seed,
        model_name=f"MLP(32-{config.hidden}-8)",
    )
    prof = profile_window(step, wait=1, warmup=1, active=3, profile_memory=False)
    ops = operator_table(prof, top=5).to_dict(orient="records")
    seeds = train_over_seeds(
        task,
        SEEDS,
        budget_steps=PARITY_STEPS,
        batch_size=config.batch_size,
        lr=config.lr,
        hidden=config.hidden,
        precision=config.precision,
    )
    memory = measure_model_memory(
        task.model(config.hidden),
        (step.x,),
        optimizer_factory=lambda ps: torch.optim.SGD(ps, lr=config.lr, momentum=0.9),
    )
    peak = memory.static_bytes + int(memory.activation_bytes_per_sample * config.batch_size)
    return RunPlan(name, config, step, contract, seeds, peak, ops)


def _dtype(config: Config) -> str:
    return "bfloat16" if config.precision == "bf16-mixed" else "float32"


def check_rounds(rounds: int) -> int:
    """``rounds`` if it is an integer in [2, :data:`MAX_ROUNDS`] (two rounds give an interval)."""
    return integer_at_least("rounds", rounds, 2, MAX_ROUNDS)


def run_plan(
    candidate: str = "batch128-lr-scaled",
    *,
    price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD,
    rounds: int = ROUNDS,
    registry: Registry | None = None,
    baseline: RunPlan | None = None,
) -> PlanResult:
    """Profile, check parity, plan memory, time interleaved, price to target and decide, for one named candidate.

    Pass ``baseline`` (from :func:`measure_config` with ``BASELINE``) to judge several candidates
    against one baseline's training runs; its step is timed again beside each candidate.
    """
    if candidate not in CANDIDATES:
        raise InputError("candidate", f"candidate must be one of {', '.join(map(repr, CANDIDATES))}, got {candidate!r}")
    cost.cost_per_second_usd(price_per_hour_usd)  # validate the price before spending time
    check_rounds(rounds)
    base = baseline or measure_config(BASELINE_NAME, BASELINE)
    cand = measure_config(candidate, CANDIDATES[candidate])
    changes = CANDIDATES[candidate].changes
    comparison = compare_steps(
        base.step, cand.step, base.contract, candidate_contract=cand.contract, allow=changes, rounds=rounds
    )
    to_target = comparison.cost_to_target(base.steps_to_target_per_seed, cand.steps_to_target_per_seed)
    parity = check_parity(base.seeds, cand.seeds)
    budget_bytes = int(
        MemoryLedger(
            static_gb=0, activation_gb_per_sample=1, device_gb=DEVICE_GB, reserve_fraction=RESERVE_FRACTION
        ).budget_gb
        * 1e9
    )

    price = float(price_per_hour_usd)
    base_release = base.release(comparison.baseline, price, True, ("reference",), "reference")
    said = f"accuracy {parity.candidate_metric:.3f} vs {parity.baseline_metric:.3f} (tolerance {parity.tolerance})"
    cand_release = cand.release(
        comparison.candidate, price, parity.passed, parity.reasons, f"{'passed' if parity.passed else 'failed'}: {said}"
    )
    fallback = registry.last_known_good() if registry is not None else None
    decision = gate(
        base_release,
        cand_release,
        budget_bytes=budget_bytes,
        window_hours=WINDOW_HOURS,
        allow=changes,
        fallback=fallback if fallback not in (None, candidate) else None,
        cost=to_target,
    )
    if registry is not None:
        registry.record(decision)
    return PlanResult(
        base, cand, comparison, to_target, parity, budget_bytes, decision, price, base_release, cand_release
    )
