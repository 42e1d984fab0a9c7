"""Quality parity before a cheaper run is released (chapter 06, "release the result"; chapter 03 introduces it).

A faster step is only cheaper if it buys the same quality. :func:`check_parity` holds a candidate run
(a new precision, batch or kernel) against the baseline at the *same* quality target: both must reach
it, and the candidate's held-out metric may fall short of the baseline's by at most a declared
tolerance. Only a run that passes is priced (:func:`price_to_target`, cost per step x steps to target).

The tolerance is declared per precision in :data:`DTYPE_TOLERANCE`, before the run, never fitted to it:

- fp32, 0.005: two fp32 runs still differ (another seed, another reduction order or thread count), and
  a held-out accuracy near 0.85 measured on 4,096 samples carries a standard error of
  sqrt(0.85 x 0.15 / 4096) = 0.0056 by sampling alone; 0.005 is about that.
- bf16 autocast, 0.01: bfloat16 keeps 8 significant bits (about 2-3 decimal digits, relative rounding
  up to 2^-8 = 0.4%) in every matmul and activation, so logits near a decision boundary flip and
  the metric moves more than between fp32 runs.
- fp16 AMP, 0.01: float16 keeps 11 significant bits but a narrow range (largest 65,504, smallest
  normal 6.1e-5); the loss scaler skips the steps whose gradients overflow, so the trajectory
  differs from fp32's as much as bf16's does.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import NamedTuple

from . import cost as _cost
from ._validate import fraction, one_of, positive
from .workloads import PRECISIONS, ClassificationTask, SequenceTask, TrainResult, train_to_target

# Largest allowed shortfall of the candidate's held-out metric below the baseline's, per precision
# (absolute, in the metric's own units: 0.01 = one percentage point of accuracy). Why: module docstring.
DTYPE_TOLERANCE = MappingProxyType({"fp32": 0.005, "bf16-autocast": 0.01, "fp16-amp": 0.01})
assert set(DTYPE_TOLERANCE) == set(PRECISIONS)

_SLACK = 1e-12  # float rounding in "baseline - tolerance"; far below any metric's resolution


@dataclass(frozen=True)
class ParityReport:
    """Does the candidate buy the same quality as the baseline? Every failed condition is named."""

    passed: bool  # both reached the same target and the candidate's metric is within tolerance
    metric: str  # what the numbers measure, e.g. "accuracy" (held out)
    baseline_metric: float  # the baseline's held-out metric where it stopped
    candidate_metric: float  # the candidate's held-out metric where it stopped
    tolerance: float  # largest allowed shortfall of candidate_metric below baseline_metric
    baseline_steps_to_target: int | None  # None when the baseline missed the target
    candidate_steps_to_target: int | None  # None when the candidate missed the target
    reasons: tuple[str, ...]  # one sentence per failed condition; empty when passed
    target_accuracy: float  # the candidate's quality target
    candidate_precision: str  # how the candidate trained, one of PRECISIONS

    @property
    def steps_change(self) -> float | None:
        """Candidate steps to target / baseline's - 1 (``relative_cost``'s ``steps_change``); None if either missed."""
        if not self.baseline_steps_to_target or self.candidate_steps_to_target is None:
            return None
        return self.candidate_steps_to_target / self.baseline_steps_to_target - 1.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["reasons"] = list(self.reasons)
        d["steps_change"] = self.steps_change
        return d


def _budget(result: TrainResult) -> str:
    steps = result.max_steps if result.max_steps is not None else (result.history[-1][0] if result.history else None)
    return f"within {steps} steps" if steps is not None else "within its step budget"


def check_parity(baseline: TrainResult, candidate: TrainResult, tolerance: float | None = None,
                 precision: str | None = None) -> ParityReport:
    """Hold ``candidate`` against ``baseline`` at the same quality target.

    Passes only if both runs measure the same metric, aimed at the same target, both reached it, and
    ``candidate.final_val_accuracy >= baseline.final_val_accuracy - tolerance``. ``tolerance``
    defaults to :data:`DTYPE_TOLERANCE` of ``precision``, which defaults to the candidate's precision.
    """
    if not isinstance(baseline, TrainResult):
        raise ValueError(f"baseline must be a TrainResult, got {type(baseline).__name__}")
    if not isinstance(candidate, TrainResult):
        raise ValueError(f"candidate must be a TrainResult, got {type(candidate).__name__}")
    precision = one_of("precision", candidate.precision if precision is None else precision, PRECISIONS)
    if tolerance is None:
        tolerance = DTYPE_TOLERANCE[precision]
    tolerance = fraction("tolerance", tolerance, include_zero=True, include_one=False)

    reasons = []
    if baseline.metric != candidate.metric:
        reasons.append(f"the runs measure different metrics: baseline {baseline.metric}, "
                       f"candidate {candidate.metric}")
    if baseline.target_accuracy != candidate.target_accuracy:
        reasons.append(f"the targets differ: baseline {baseline.target_accuracy:g}, candidate "
                       f"{candidate.target_accuracy:g}; compare at the same target")
    if not baseline.reached:
        reasons.append(f"baseline did not reach the target {baseline.target_accuracy:g} {_budget(baseline)}")
    if not candidate.reached:
        reasons.append(f"candidate did not reach the target {candidate.target_accuracy:g} {_budget(candidate)}")
    if candidate.final_val_accuracy < baseline.final_val_accuracy - tolerance - _SLACK:
        reasons.append(f"candidate {candidate.metric} {candidate.final_val_accuracy:.3f} is below baseline "
                       f"{baseline.final_val_accuracy:.3f} - {tolerance:.3f}")
    return ParityReport(
        passed=not reasons, metric=candidate.metric, baseline_metric=baseline.final_val_accuracy,
        candidate_metric=candidate.final_val_accuracy, tolerance=tolerance,
        baseline_steps_to_target=baseline.steps_to_target, candidate_steps_to_target=candidate.steps_to_target,
        reasons=tuple(reasons), target_accuracy=candidate.target_accuracy, candidate_precision=candidate.precision)


class Comparison(NamedTuple):
    """Both runs and their parity report, from :func:`compare_to_target`."""

    baseline: TrainResult
    candidate: TrainResult
    parity: ParityReport


def compare_to_target(task: ClassificationTask | SequenceTask, baseline_kwargs: dict | None = None,
                      candidate_kwargs: dict | None = None, tolerance: float | None = None) -> Comparison:
    """Train the baseline and the candidate on ``task`` with :func:`train_to_target` and check parity.

    Each ``*_kwargs`` is passed to ``train_to_target`` (e.g. ``{"precision": "bf16-autocast"}``); give
    both the same ``target_accuracy``, or neither to use the task's.
    """
    baseline = train_to_target(task, **dict(baseline_kwargs or {}))
    candidate = train_to_target(task, **dict(candidate_kwargs or {}))
    return Comparison(baseline, candidate, check_parity(baseline, candidate, tolerance=tolerance))


def price_to_target(report: ParityReport, baseline_cost_per_step_usd: float,
                    candidate_cost_per_step_usd: float) -> dict:
    """Cost to the target of both runs (:func:`gpucost_lab.cost.cost_to_target_usd`), only after parity passed.

    Returns ``baseline_cost_to_target_usd``, ``candidate_cost_to_target_usd``, their ratio
    ``relative_cost`` (candidate / baseline) and its ``verdict``.
    """
    if not report.passed:
        raise ValueError(f"report.passed must be True before a candidate is priced, got False: "
                         f"{'; '.join(report.reasons)}")
    baseline_usd = _cost.cost_to_target_usd(positive("baseline_cost_per_step_usd", baseline_cost_per_step_usd),
                                            report.baseline_steps_to_target)
    candidate_usd = _cost.cost_to_target_usd(positive("candidate_cost_per_step_usd", candidate_cost_per_step_usd),
                                             report.candidate_steps_to_target)
    relative = candidate_usd / baseline_usd
    return {"baseline_cost_to_target_usd": baseline_usd, "candidate_cost_to_target_usd": candidate_usd,
            "relative_cost": relative, "verdict": _cost.verdict(relative)}
