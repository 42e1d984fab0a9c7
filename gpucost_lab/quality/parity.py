"""Quality parity before a cheaper run is released (chapter 06, "release the result"; chapter 03 introduces it).

A faster step is only cheaper if it buys the same quality. :func:`check_parity` holds a candidate (a new
precision, batch or kernel) against the baseline at the same quality target, and :class:`ParityReport` names every
condition that failed. One run each (:class:`~gpucost_lab.quality.train.TrainResult`) is the one-seed case: each
metric is read at the evaluation that first met the target, which two runs that both reach it pass almost by
construction. Several seeds each (:class:`~gpucost_lab.quality.seeds.SeedRuns`) is the check a release decision
uses: every seed of both must reach the target within the same fixed step budget, and the candidate's held-out
metric after that budget, averaged over the seeds, may fall short of the baseline's by at most a declared
tolerance. :func:`compare_to_target` trains both sides and checks them; only a run that passes is priced
(:func:`price_to_target`, cost per step x steps to target).

The tolerance is declared per precision in :data:`DTYPE_TOLERANCE`, before the run, never fitted to it:

- fp32, 0.005: two fp32 runs still differ (another seed, another reduction order or thread count), and
  a held-out accuracy near 0.85 measured on 4,096 samples carries a standard error of
  sqrt(0.85 x 0.15 / 4096) = 0.0056 by sampling alone; 0.005 is about that.
- bf16-mixed, 0.01: bfloat16 keeps 8 significant bits (about 2-3 decimal digits, relative rounding
  up to 2^-8 = 0.4%) in every matmul and activation, so logits near a decision boundary flip and
  the metric moves more than between fp32 runs.
- fp16-mixed, 0.01: float16 keeps 11 significant bits but a narrow range (largest 65,504, smallest
  normal 6.1e-5); the loss scaler skips the steps whose gradients overflow, so the trajectory
  differs from fp32's as much as bf16's does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from statistics import fmean
from types import MappingProxyType
from typing import NamedTuple

from gpucost_lab import cost as _cost
from gpucost_lab._validate import InputError, fraction, integer_at_least, one_of, positive
from gpucost_lab.precision import PRECISIONS
from gpucost_lab.quality.seeds import MIN_SEEDS, SeedRuns, check_seeds, format_seeds, train_over_seeds
from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import TrainResult, train_to_target

# Largest allowed shortfall of the candidate's held-out metric below the baseline's, per precision
# (absolute, in the metric's own units: 0.01 = one percentage point of accuracy). Why: the module doc.
DTYPE_TOLERANCE = MappingProxyType({"fp32": 0.005, "bf16-mixed": 0.01, "fp16-mixed": 0.01})
assert set(DTYPE_TOLERANCE) == set(PRECISIONS)

_SLACK = 1e-12  # float rounding in "baseline - tolerance"; far below any metric's resolution


@dataclass(frozen=True)
class ParityReport:
    """Does the candidate buy the same quality as the baseline? Every failed condition is named.

    From :func:`check_parity`. Over seeds the metrics are means over the seeds after ``budget_steps``
    steps, the steps to target means over the seeds, and the per-seed fields hold each seed's numbers
    in the order of ``seeds``; for one run each they keep their defaults.
    """

    passed: bool  # both reached the same target and the candidate's metric is within tolerance
    metric: str  # what the numbers measure, e.g. "accuracy" (held out)
    baseline_metric: float  # the baseline's held-out metric where it stopped (over seeds: mean at the budget)
    candidate_metric: float  # the candidate's held-out metric where it stopped (over seeds: mean at the budget)
    tolerance: float  # largest allowed shortfall of candidate_metric below baseline_metric
    baseline_steps_to_target: float | None  # None when the baseline missed the target (over seeds: mean, or None)
    candidate_steps_to_target: float | None  # None when the candidate missed the target (over seeds: as the baseline's)
    reasons: tuple[str, ...]  # one sentence per failed condition; empty when passed
    target_accuracy: float  # the candidate's quality target
    candidate_precision: str  # how the candidate trained, one of gpucost_lab.precision.PRECISIONS
    seeds: tuple[int, ...] = ()  # the candidate's seeds, over seeds; () for one run each
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


def _runs(name: str, side: object, over_seeds: bool) -> tuple[TrainResult, ...]:
    """The runs of one side: a one-run check's run, or a seed study's runs (checked to have a step budget)."""
    if not over_seeds:
        if not isinstance(side, TrainResult):
            raise InputError(
                name, f"{name} must be a TrainResult or a SeedRuns (from train_over_seeds), got {type(side).__name__}"
            )
        return (side,)
    if not isinstance(side, SeedRuns):
        raise InputError(name, f"{name} must be a SeedRuns (from train_over_seeds), got {type(side).__name__}")
    if side.budget_steps is None:
        raise InputError(
            f"{name}.budget_steps",
            f"{name}.budget_steps must be an integer, got None: parity across seeds compares the "
            "metric after a fixed step budget; train with train_over_seeds(..., budget_steps=N)",
        )
    return side.runs


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


def _same_study(baseline: SeedRuns, candidate: SeedRuns, min_seeds: int) -> list[str]:
    """Why two seed studies cannot be compared: another budget, other seeds or too few (empty when they can)."""
    reasons = []
    if baseline.budget_steps != candidate.budget_steps:
        reasons.append(
            f"the step budgets differ: baseline {baseline.budget_steps}, candidate "
            f"{candidate.budget_steps}; compare after the same number of steps"
        )
    if baseline.seeds != candidate.seeds:
        reasons.append(
            f"the seeds differ: baseline {format_seeds(baseline.seeds)}, candidate "
            f"{format_seeds(candidate.seeds)}; compare over the same seeds"
        )
    if len(candidate.seeds) < min_seeds:
        reasons.append(
            f"only {len(candidate.seeds)} seed{'s' if len(candidate.seeds) > 1 else ''} "
            f"({format_seeds(candidate.seeds)}); parity across seeds needs at least {min_seeds}"
        )
    return reasons


def _missed(name: str, runs: tuple[TrainResult, ...], over_seeds: bool) -> str | None:
    """The reason when a run of one side missed the target (over seeds, naming each seed that did)."""
    missed = tuple(run.seed for run in runs if not run.reached)
    if not missed:
        return None
    reason = f"{name} did not reach the target {runs[0].target_accuracy:g} {runs[0].budget_text}"
    if not over_seeds:
        return reason
    return f"{reason} with seed{'s' if len(missed) > 1 else ''} {format_seeds(s for s in missed if s is not None)}"


def _metric_and_steps(side: TrainResult | SeedRuns) -> tuple[float, float | None]:
    """The held-out metric compared and the steps to target: a run's where it stopped, or a study's means."""
    if isinstance(side, TrainResult):
        return side.final_val_accuracy, side.steps_to_target
    return side.mean_accuracy_at_budget, fmean(side.steps_to_target_values) if side.reached_all else None


def _short(candidate: TrainResult | SeedRuns, cand_metric: float, base_metric: float, tolerance: float) -> str:
    """The reason when the candidate's metric falls short of the baseline's by more than ``tolerance``."""
    if isinstance(candidate, TrainResult):
        what, over = candidate.metric, ""
    else:
        what = f"mean {candidate.runs[0].metric} after {candidate.budget_steps} steps"
        over = f" over seeds {format_seeds(candidate.seeds)}"
    return f"candidate {what} {cand_metric:.3f}{over} is below baseline {base_metric:.3f} - {tolerance:.3f}"


def check_parity(
    baseline: TrainResult | SeedRuns,
    candidate: TrainResult | SeedRuns,
    tolerance: float | None = None,
    precision: str | None = None,
    *,
    min_seeds: int = MIN_SEEDS,
) -> ParityReport:
    """Hold ``candidate`` against ``baseline`` at the same quality target: one run each, or one seed study each.

    Passes only if both measure the same metric, aimed at the same target, every run of both reached it, and the
    candidate's held-out metric >= the baseline's - ``tolerance``. ``tolerance`` defaults to
    :data:`DTYPE_TOLERANCE` of ``precision``, which defaults to the candidate's precision.

    Two :class:`TrainResult` (from :func:`train_to_target`) are the one-seed case: each metric is read where its
    run stopped. Two :class:`SeedRuns` (from :func:`train_over_seeds` with ``budget_steps``; ``InputError``
    without) must also cover the same seeds (at least ``min_seeds``) and the same budget; each seed that missed
    the target is named, and the metric is the mean over the seeds after the budget.
    """
    over_seeds = isinstance(baseline, SeedRuns) or isinstance(candidate, SeedRuns)
    base_runs, cand_runs = _runs("baseline", baseline, over_seeds), _runs("candidate", candidate, over_seeds)
    min_seeds = integer_at_least("min_seeds", min_seeds, 1)
    precision = one_of("precision", cand_runs[0].precision if precision is None else precision, PRECISIONS)
    tolerance = fraction(
        "tolerance",
        DTYPE_TOLERANCE[precision] if tolerance is None else tolerance,
        include_zero=True,
        include_one=False,
    )
    (base_metric, base_steps), (cand_metric, cand_steps) = _metric_and_steps(baseline), _metric_and_steps(candidate)
    studies = (baseline, candidate) if isinstance(baseline, SeedRuns) and isinstance(candidate, SeedRuns) else None

    reasons = _same_goal(base_runs[0], cand_runs[0])
    if studies:
        reasons += _same_study(*studies, min_seeds)
    for name, runs in (("baseline", base_runs), ("candidate", cand_runs)):
        if missed := _missed(name, runs, over_seeds):
            reasons.append(missed)
    if cand_metric < base_metric - tolerance - _SLACK:
        reasons.append(_short(candidate, cand_metric, base_metric, tolerance))
    report = ParityReport(
        passed=not reasons,
        metric=cand_runs[0].metric,
        baseline_metric=base_metric,
        candidate_metric=cand_metric,
        tolerance=tolerance,
        baseline_steps_to_target=base_steps,
        candidate_steps_to_target=cand_steps,
        reasons=tuple(reasons),
        target_accuracy=cand_runs[0].target_accuracy,
        candidate_precision=cand_runs[0].precision,
    )
    return _with_seeds(report, *studies) if studies else report


def _with_seeds(report: ParityReport, baseline: SeedRuns, candidate: SeedRuns) -> ParityReport:
    """``report`` with each seed's numbers of the two studies."""
    return replace(
        report,
        seeds=candidate.seeds,
        budget_steps=candidate.budget_steps,
        baseline_metric_per_seed=baseline.accuracy_at_budget_values,
        candidate_metric_per_seed=candidate.accuracy_at_budget_values,
        baseline_steps_per_seed=baseline.steps_to_target_per_seed,
        candidate_steps_per_seed=candidate.steps_to_target_per_seed,
    )


class ParityRuns(NamedTuple):
    """Both sides :func:`compare_to_target` trained (one run each, or one seed study each) and their parity."""

    baseline: TrainResult | SeedRuns
    candidate: TrainResult | SeedRuns
    parity: ParityReport


def compare_to_target(
    task: ClassificationTask | SequenceTask,
    baseline_kwargs: dict | None = None,
    candidate_kwargs: dict | None = None,
    tolerance: float | None = None,
    *,
    seeds: Iterable[int] | None = None,
    budget_steps: int | None = None,
) -> ParityRuns:
    """Train the baseline and the candidate on ``task`` and check their parity (:func:`check_parity`).

    Without ``seeds``, one run each with :func:`train_to_target`, each ``*_kwargs`` passed to it (e.g.
    ``{"precision": "bf16-mixed"}``; give both the same ``target_accuracy``, or neither to use the task's).
    With ``seeds`` (at least :data:`MIN_SEEDS`), each side over those seeds for ``budget_steps`` steps with
    :func:`train_over_seeds`, the check a release decision uses.
    """
    baseline_kwargs, candidate_kwargs = dict(baseline_kwargs or {}), dict(candidate_kwargs or {})
    baseline: TrainResult | SeedRuns
    candidate: TrainResult | SeedRuns
    if seeds is None:
        budget: dict = {} if budget_steps is None else {"budget_steps": budget_steps}
        baseline = train_to_target(task, **budget, **baseline_kwargs)
        candidate = train_to_target(task, **budget, **candidate_kwargs)
    else:
        seeds = check_seeds(seeds, MIN_SEEDS)
        if budget_steps is None:
            raise InputError(
                "budget_steps",
                "budget_steps must be an integer with seeds, got None: parity across seeds compares the metric "
                "after a fixed step budget",
            )
        baseline = train_over_seeds(task, seeds, budget_steps=budget_steps, **baseline_kwargs)
        candidate = train_over_seeds(task, seeds, budget_steps=budget_steps, **candidate_kwargs)
    return ParityRuns(baseline, candidate, check_parity(baseline, candidate, tolerance=tolerance))


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
    base_steps, cand_steps = report.baseline_steps_to_target, report.candidate_steps_to_target
    if base_steps is None or cand_steps is None:  # a report check_parity passed has both
        raise InputError(
            "report", f"report must hold both steps to target to be priced, got {base_steps!r} and {cand_steps!r}"
        )
    baseline_usd = _cost.cost_to_target_usd(
        positive("baseline_cost_per_step_usd", baseline_cost_per_step_usd), base_steps
    )
    candidate_usd = _cost.cost_to_target_usd(
        positive("candidate_cost_per_step_usd", candidate_cost_per_step_usd), cand_steps
    )
    relative = candidate_usd / baseline_usd
    return {
        "baseline_cost_to_target_usd": baseline_usd,
        "candidate_cost_to_target_usd": candidate_usd,
        "relative_cost": relative,
        "verdict": _cost.verdict(relative),
    }


__all__ = [
    "DTYPE_TOLERANCE",
    "ParityReport",
    "ParityRuns",
    "check_parity",
    "compare_to_target",
    "price_to_target",
]
