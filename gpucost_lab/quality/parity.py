"""The parity report and the single-seed check (chapter 06, "release the result"; chapter 03 introduces it).

:class:`ParityReport` is what every parity check returns, naming each failed condition; :func:`check_parity` holds
one candidate run against one baseline run at the same quality target, :func:`compare_to_target` trains both and
checks, and :func:`price_to_target` prices a candidate only after parity passed. The tolerance per precision,
:data:`DTYPE_TOLERANCE`, and why each is what it is: :mod:`gpucost_lab.quality.seeds`, whose check over several seeds
(:func:`gpucost_lab.quality.seeds.check_parity_over_seeds`) is the one a release decision uses. Every name here is
importable from :mod:`gpucost_lab.quality.seeds` too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import NamedTuple

from gpucost_lab import cost as _cost
from gpucost_lab._validate import InputError, fraction, one_of, positive
from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import PRECISIONS, TrainResult, train_to_target

# Largest allowed shortfall of the candidate's held-out metric below the baseline's, per precision
# (absolute, in the metric's own units: 0.01 = one percentage point of accuracy). Why: the docstring of
# gpucost_lab.quality.seeds.
DTYPE_TOLERANCE = MappingProxyType({"fp32": 0.005, "bf16-autocast": 0.01, "fp16-amp": 0.01})
assert set(DTYPE_TOLERANCE) == set(PRECISIONS)

_SLACK = 1e-12  # float rounding in "baseline - tolerance"; far below any metric's resolution


@dataclass(frozen=True)
class ParityReport:
    """Does the candidate buy the same quality as the baseline? Every failed condition is named.

    From :func:`check_parity` (one run each) or :func:`check_parity_over_seeds` (then the metrics are
    means over the seeds after ``budget_steps`` steps, the steps to target means over the seeds, and
    the per-seed fields hold each seed's numbers in the order of ``seeds``).
    """

    passed: bool  # both reached the same target and the candidate's metric is within tolerance
    metric: str  # what the numbers measure, e.g. "accuracy" (held out)
    baseline_metric: float  # the baseline's held-out metric where it stopped (over seeds: mean at the budget)
    candidate_metric: float  # the candidate's held-out metric where it stopped (over seeds: mean at the budget)
    tolerance: float  # largest allowed shortfall of candidate_metric below baseline_metric
    baseline_steps_to_target: (
        float | None
    )  # None when the baseline missed the target (over seeds: mean; None if any missed)
    candidate_steps_to_target: float | None  # None when the candidate missed the target (over seeds: as the baseline's)
    reasons: tuple[str, ...]  # one sentence per failed condition; empty when passed
    target_accuracy: float  # the candidate's quality target
    candidate_precision: str  # how the candidate trained, one of PRECISIONS
    seeds: tuple[int, ...] = ()  # the candidate's seeds, over seeds; () for a single-seed check
    budget_steps: int | None = None  # the fixed step budget the metrics were read at, over seeds
    baseline_metric_per_seed: tuple[float, ...] = ()  # held-out metric after budget_steps, per seed
    candidate_metric_per_seed: tuple[float, ...] = ()
    baseline_steps_per_seed: tuple[int | None, ...] = ()  # steps to target per seed; None where it missed
    candidate_steps_per_seed: tuple[int | None, ...] = ()

    @property
    def steps_change(self) -> float | None:
        """Candidate steps to target / baseline's - 1 (``relative_cost``'s ``steps_change``); None if either missed."""
        if not self.baseline_steps_to_target or self.candidate_steps_to_target is None:
            return None
        return self.candidate_steps_to_target / self.baseline_steps_to_target - 1.0

    def to_dict(self) -> dict:
        d = asdict(self)
        for name in (
            "reasons",
            "seeds",
            "baseline_metric_per_seed",
            "candidate_metric_per_seed",
            "baseline_steps_per_seed",
            "candidate_steps_per_seed",
        ):
            d[name] = list(d[name])
        d["steps_change"] = self.steps_change
        return d


def _budget(result: TrainResult) -> str:
    steps = result.max_steps if result.max_steps is not None else (result.history[-1][0] if result.history else None)
    return f"within {steps} steps" if steps is not None else "within its step budget"


def _same_goal(baseline: TrainResult, candidate: TrainResult) -> list[str]:
    """Why two runs cannot be compared: another metric or another target (empty when they can)."""
    reasons = []
    if baseline.metric != candidate.metric:
        reasons.append(f"the runs measure different metrics: baseline {baseline.metric}, candidate {candidate.metric}")
    if baseline.target_accuracy != candidate.target_accuracy:
        reasons.append(
            f"the targets differ: baseline {baseline.target_accuracy:g}, candidate "
            f"{candidate.target_accuracy:g}; compare at the same target"
        )
    return reasons


def check_parity(
    baseline: TrainResult, candidate: TrainResult, tolerance: float | None = None, precision: str | None = None
) -> ParityReport:
    """Hold ``candidate`` against ``baseline`` at the same quality target: the single-seed check.

    Each run's metric is read where it stopped, the evaluation that first met the target, so two
    runs that both reach it pass almost by construction; a release decision compares several seeds
    at a fixed step budget with :func:`check_parity_over_seeds`. Passes only if both runs measure the same
    metric, aimed at the same target, both reached it, and
    ``candidate.final_val_accuracy >= baseline.final_val_accuracy - tolerance``. ``tolerance``
    defaults to :data:`DTYPE_TOLERANCE` of ``precision``, which defaults to the candidate's precision.
    """
    if not isinstance(baseline, TrainResult):
        raise InputError("baseline", f"baseline must be a TrainResult, got {type(baseline).__name__}")
    if not isinstance(candidate, TrainResult):
        raise InputError("candidate", f"candidate must be a TrainResult, got {type(candidate).__name__}")
    precision = one_of("precision", candidate.precision if precision is None else precision, PRECISIONS)
    if tolerance is None:
        tolerance = DTYPE_TOLERANCE[precision]
    tolerance = fraction("tolerance", tolerance, include_zero=True, include_one=False)

    reasons = _same_goal(baseline, candidate)
    if not baseline.reached:
        reasons.append(f"baseline did not reach the target {baseline.target_accuracy:g} {_budget(baseline)}")
    if not candidate.reached:
        reasons.append(f"candidate did not reach the target {candidate.target_accuracy:g} {_budget(candidate)}")
    if candidate.final_val_accuracy < baseline.final_val_accuracy - tolerance - _SLACK:
        reasons.append(
            f"candidate {candidate.metric} {candidate.final_val_accuracy:.3f} is below baseline "
            f"{baseline.final_val_accuracy:.3f} - {tolerance:.3f}"
        )
    return ParityReport(
        passed=not reasons,
        metric=candidate.metric,
        baseline_metric=baseline.final_val_accuracy,
        candidate_metric=candidate.final_val_accuracy,
        tolerance=tolerance,
        baseline_steps_to_target=baseline.steps_to_target,
        candidate_steps_to_target=candidate.steps_to_target,
        reasons=tuple(reasons),
        target_accuracy=candidate.target_accuracy,
        candidate_precision=candidate.precision,
    )


class Comparison(NamedTuple):
    """Both runs and their parity report, from :func:`compare_to_target`."""

    baseline: TrainResult
    candidate: TrainResult
    parity: ParityReport


def compare_to_target(
    task: ClassificationTask | SequenceTask,
    baseline_kwargs: dict | None = None,
    candidate_kwargs: dict | None = None,
    tolerance: float | None = None,
) -> Comparison:
    """Train the baseline and the candidate on ``task`` with :func:`train_to_target` and check parity.

    Each ``*_kwargs`` is passed to ``train_to_target`` (e.g. ``{"precision": "bf16-autocast"}``); give
    both the same ``target_accuracy``, or neither to use the task's.
    """
    baseline = train_to_target(task, **dict(baseline_kwargs or {}))
    candidate = train_to_target(task, **dict(candidate_kwargs or {}))
    return Comparison(baseline, candidate, check_parity(baseline, candidate, tolerance=tolerance))


def price_to_target(
    report: ParityReport, baseline_cost_per_step_usd: float, candidate_cost_per_step_usd: float
) -> dict:
    """Cost to the target of both runs (:func:`gpucost_lab.cost.cost_to_target_usd`), only after parity passed.

    Returns ``baseline_cost_to_target_usd``, ``candidate_cost_to_target_usd``, their ratio
    ``relative_cost`` (candidate / baseline) and its ``verdict``.
    """
    if not report.passed:
        raise InputError(
            "report.passed",
            f"report.passed must be True before a candidate is priced, got False: {'; '.join(report.reasons)}",
        )
    baseline_usd = _cost.cost_to_target_usd(
        positive("baseline_cost_per_step_usd", baseline_cost_per_step_usd), report.baseline_steps_to_target
    )
    candidate_usd = _cost.cost_to_target_usd(
        positive("candidate_cost_per_step_usd", candidate_cost_per_step_usd), report.candidate_steps_to_target
    )
    relative = candidate_usd / baseline_usd
    return {
        "baseline_cost_to_target_usd": baseline_usd,
        "candidate_cost_to_target_usd": candidate_usd,
        "relative_cost": relative,
        "verdict": _cost.verdict(relative),
    }
