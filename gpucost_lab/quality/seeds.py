"""Quality parity before a cheaper run is released (chapter 06, "release the result"; chapter 03 introduces it).

A faster step is only cheaper if it buys the same quality. :func:`check_parity_over_seeds` holds a
candidate (a new precision, batch or kernel) against the baseline over several seeds
(:func:`train_over_seeds`, :class:`SeedRuns`): every seed of both must reach the same quality target
within the same fixed step budget, and the candidate's held-out metric after that budget, averaged
over the seeds, may fall short of the baseline's by at most a declared tolerance. The per-seed steps
to target (:attr:`SeedRuns.steps_to_target_values`) are what the cost-to-target interval is built
from. :func:`check_parity` is the single-seed check: it compares each run's metric at the
evaluation that first met the target, which two runs that both reach it pass almost by construction.
Only a run that passes is priced (:func:`price_to_target`, cost per step x steps to target).
The report, the single-seed check and the pricing live in :mod:`gpucost_lab.quality.parity`, importable
from here; the checks over seeds are below.

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

from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Integral
from statistics import fmean
from typing import NamedTuple

from gpucost_lab._validate import InputError, fraction, integer_at_least, one_of
from gpucost_lab.quality.parity import (
    _SLACK,
    DTYPE_TOLERANCE,
    Comparison,
    ParityReport,
    _budget,
    _same_goal,
    check_parity,
    compare_to_target,
    price_to_target,
)
from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import PRECISIONS, TrainResult, train_to_target

__all__ = [
    "DTYPE_TOLERANCE",
    "MIN_SEEDS",
    "Comparison",
    "ParityReport",
    "SeedComparison",
    "SeedRuns",
    "check_parity",
    "check_parity_over_seeds",
    "compare_over_seeds",
    "compare_to_target",
    "price_to_target",
    "train_over_seeds",
]


MIN_SEEDS = 3  # fewest seeds a seed study accepts by default: one seed says nothing about the spread
# Fields every run of one SeedRuns shares: one config, trained once per seed.
_SAME_CONFIG = (
    "metric",
    "counted_unit",
    "target_accuracy",
    "batch_size",
    "lr",
    "hidden",
    "precision",
    "device",
    "budget_steps",
)


def _seed_list(seeds: Iterable[int]) -> str:
    return ", ".join(str(s) for s in seeds)


@dataclass(frozen=True)
class SeedRuns:
    """One config trained once per seed (:func:`train_over_seeds`): its quality and steps to target per seed.

    The runs share every setting but the seed (metric, target, batch, lr, hidden, precision, device,
    step budget) and their seeds are distinct; otherwise an ``InputError`` names the field. The runs are
    kept in seed order, so two studies over the same seeds line up seed by seed.
    """

    runs: tuple[TrainResult, ...]

    def __post_init__(self) -> None:
        if isinstance(self.runs, TrainResult) or not isinstance(self.runs, (tuple, list)):
            raise InputError("runs", f"runs must be a tuple of TrainResult, got {type(self.runs).__name__}")
        runs = tuple(self.runs)
        object.__setattr__(self, "runs", runs)
        if not runs:
            raise InputError("runs", "runs must hold at least one TrainResult, got ()")
        for i, run in enumerate(runs):
            if not isinstance(run, TrainResult):
                raise InputError(f"runs[{i}]", f"runs[{i}] must be a TrainResult, got {type(run).__name__}")
            if run.seed is None:
                raise InputError(f"runs[{i}].seed", f"runs[{i}].seed must be an integer (the run's seed), got None")
        if len(set(self.seeds)) != len(runs):
            raise InputError("runs", f"runs must have distinct seeds, got {list(self.seeds)}")
        object.__setattr__(self, "runs", tuple(sorted(runs, key=lambda run: run.seed)))
        for name in _SAME_CONFIG:
            values = [getattr(run, name) for run in runs]
            if any(v != values[0] for v in values):
                raise InputError(
                    f"runs[*].{name}", f"runs[*].{name} must be the same for every seed (one config), got {values}"
                )

    @property
    def seeds(self) -> tuple[int, ...]:
        """Each run's seed (model initialisation and batch order), ascending."""
        return tuple(run.seed for run in self.runs)

    @property
    def budget_steps(self) -> int | None:
        """The fixed step budget every run trained for; None if they stopped at the target."""
        return self.runs[0].budget_steps

    @property
    def reached_all(self) -> bool:
        """Every seed met the target (within the budget, for fixed-budget runs)."""
        return all(run.reached for run in self.runs)

    @property
    def missed_seeds(self) -> tuple[int, ...]:
        """The seeds whose run did not meet the target."""
        return tuple(run.seed for run in self.runs if not run.reached)

    @property
    def steps_to_target_per_seed(self) -> tuple[int | None, ...]:
        """Steps to target per seed, None where a seed missed it."""
        return tuple(run.steps_to_target for run in self.runs)

    @property
    def steps_to_target_values(self) -> tuple[int, ...]:
        """Steps to target per seed, for the cost-to-target interval; only when every seed reached it."""
        if not self.reached_all:
            raise InputError(
                "steps_to_target_values",
                f"steps_to_target_values needs every seed to reach the target "
                f"{self.runs[0].target_accuracy:g}, got seeds {_seed_list(self.missed_seeds)} "
                f"that missed it {_budget(self.runs[0])}",
            )
        return tuple(run.steps_to_target for run in self.runs)

    @property
    def accuracy_at_budget_values(self) -> tuple[float, ...]:
        """Held-out metric per seed after exactly ``budget_steps`` steps; only for fixed-budget runs."""
        if self.budget_steps is None:
            raise InputError(
                "budget_steps",
                "budget_steps must be an integer for accuracy_at_budget_values, got None: "
                "train with train_over_seeds(..., budget_steps=N)",
            )
        return tuple(run.accuracy_at_budget for run in self.runs)

    @property
    def mean_accuracy_at_budget(self) -> float:
        """Mean over the seeds of :attr:`accuracy_at_budget_values`."""
        return fmean(self.accuracy_at_budget_values)

    def to_dict(self) -> dict:
        """Seeds, per-seed steps to target and accuracy at the budget, and each run's summary."""
        budget = self.budget_steps is not None
        return {
            "seeds": list(self.seeds),
            "budget_steps": self.budget_steps,
            "reached_all": self.reached_all,
            "missed_seeds": list(self.missed_seeds),
            "steps_to_target": list(self.steps_to_target_per_seed),
            "target_resolution_steps": [run.target_resolution_steps for run in self.runs],
            "accuracy_at_budget": list(self.accuracy_at_budget_values) if budget else None,
            "mean_accuracy_at_budget": self.mean_accuracy_at_budget if budget else None,
            "runs": [run.to_dict() for run in self.runs],
        }


def _check_seeds(seeds: Iterable[int], min_seeds: int) -> tuple[int, ...]:
    allowed = f"a sequence of at least {min_seeds} distinct integers >= 0"
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise InputError("seeds", f"seeds must be {allowed}, got {seeds!r}")
    seeds = tuple(seeds)
    if (
        len(seeds) < min_seeds
        or len(set(seeds)) != len(seeds)
        or any(isinstance(s, bool) or not isinstance(s, Integral) or s < 0 for s in seeds)
    ):
        raise InputError("seeds", f"seeds must be {allowed}, got {seeds!r}")
    return tuple(int(s) for s in seeds)


def train_over_seeds(
    task: ClassificationTask | SequenceTask,
    seeds: Iterable[int] = (0, 1, 2),
    *,
    budget_steps: int | None = None,
    min_seeds: int = MIN_SEEDS,
    **train_kwargs,
) -> SeedRuns:
    """Train one config once per seed with :func:`train_to_target`: the spread of its steps to target.

    Each seed draws its own model initialisation and batch order; the data and held-out set are the
    task's. ``train_kwargs`` go to ``train_to_target`` (``batch_size``, ``lr``, ``hidden``,
    ``precision``, ...; not ``seed``). With ``budget_steps`` every seed trains exactly that many
    steps and records its held-out metric there, which :func:`check_parity_over_seeds` compares.
    At least ``min_seeds`` (3) distinct seeds.
    """
    seeds = _check_seeds(seeds, integer_at_least("min_seeds", min_seeds, 1))
    if "seed" in train_kwargs:
        raise InputError(
            "seed",
            f"seed must not be given to train_over_seeds, got seed={train_kwargs['seed']!r}; pass seeds=(...) instead",
        )
    return SeedRuns(tuple(train_to_target(task, seed=s, budget_steps=budget_steps, **train_kwargs) for s in seeds))


def _missed(name: str, runs: SeedRuns) -> str:
    missed = runs.missed_seeds
    return (
        f"{name} did not reach the target {runs.runs[0].target_accuracy:g} {_budget(runs.runs[0])} "
        f"with seed{'s' if len(missed) > 1 else ''} {_seed_list(missed)}"
    )


def check_parity_over_seeds(
    baseline: SeedRuns,
    candidate: SeedRuns,
    tolerance: float | None = None,
    precision: str | None = None,
    *,
    min_seeds: int = MIN_SEEDS,
) -> ParityReport:
    """Hold ``candidate`` against ``baseline`` over the same seeds at the same fixed step budget.

    Both must come from :func:`train_over_seeds` with the same ``budget_steps`` (else ``ValueError``
    when either has none). Passes only if both measure the same metric, aimed at the same target,
    over the same seeds (at least ``min_seeds``) and the same budget, every seed of both met the target
    within the budget (each seed that missed is named), and the candidate's mean held-out metric
    after the budget is >= the baseline's mean - ``tolerance``. ``tolerance`` defaults to
    :data:`DTYPE_TOLERANCE` of ``precision``, which defaults to the candidate's precision.
    """
    for name, runs in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(runs, SeedRuns):
            raise InputError(name, f"{name} must be a SeedRuns (from train_over_seeds), got {type(runs).__name__}")
        if runs.budget_steps is None:
            raise InputError(
                f"{name}.budget_steps",
                f"{name}.budget_steps must be an integer, got None: parity across seeds compares the "
                "metric after a fixed step budget; train with train_over_seeds(..., budget_steps=N)",
            )
    min_seeds = integer_at_least("min_seeds", min_seeds, 1)
    first, cand_first = baseline.runs[0], candidate.runs[0]
    precision = one_of("precision", cand_first.precision if precision is None else precision, PRECISIONS)
    tolerance = fraction(
        "tolerance",
        DTYPE_TOLERANCE[precision] if tolerance is None else tolerance,
        include_zero=True,
        include_one=False,
    )
    base_mean, cand_mean = baseline.mean_accuracy_at_budget, candidate.mean_accuracy_at_budget

    reasons = _same_goal(first, cand_first)
    if baseline.budget_steps != candidate.budget_steps:
        reasons.append(
            f"the step budgets differ: baseline {baseline.budget_steps}, candidate "
            f"{candidate.budget_steps}; compare after the same number of steps"
        )
    if baseline.seeds != candidate.seeds:
        reasons.append(
            f"the seeds differ: baseline {_seed_list(baseline.seeds)}, candidate "
            f"{_seed_list(candidate.seeds)}; compare over the same seeds"
        )
    if len(candidate.seeds) < min_seeds:
        reasons.append(
            f"only {len(candidate.seeds)} seed{'s' if len(candidate.seeds) > 1 else ''} "
            f"({_seed_list(candidate.seeds)}); parity across seeds needs at least {min_seeds}"
        )
    for name, runs in (("baseline", baseline), ("candidate", candidate)):
        if not runs.reached_all:
            reasons.append(_missed(name, runs))
    if cand_mean < base_mean - tolerance - _SLACK:
        reasons.append(
            f"candidate mean {cand_first.metric} after {candidate.budget_steps} steps {cand_mean:.3f} "
            f"over seeds {_seed_list(candidate.seeds)} is below baseline {base_mean:.3f} - {tolerance:.3f}"
        )

    def mean_steps(runs: SeedRuns) -> float | None:
        return fmean(runs.steps_to_target_values) if runs.reached_all else None

    return ParityReport(
        passed=not reasons,
        metric=cand_first.metric,
        baseline_metric=base_mean,
        candidate_metric=cand_mean,
        tolerance=tolerance,
        baseline_steps_to_target=mean_steps(baseline),
        candidate_steps_to_target=mean_steps(candidate),
        reasons=tuple(reasons),
        target_accuracy=cand_first.target_accuracy,
        candidate_precision=cand_first.precision,
        seeds=candidate.seeds,
        budget_steps=candidate.budget_steps,
        baseline_metric_per_seed=baseline.accuracy_at_budget_values,
        candidate_metric_per_seed=candidate.accuracy_at_budget_values,
        baseline_steps_per_seed=baseline.steps_to_target_per_seed,
        candidate_steps_per_seed=candidate.steps_to_target_per_seed,
    )


class SeedComparison(NamedTuple):
    """Both seed studies and their parity report, from :func:`compare_over_seeds`."""

    baseline: SeedRuns
    candidate: SeedRuns
    parity: ParityReport


def compare_over_seeds(
    task: ClassificationTask | SequenceTask,
    baseline_kwargs: dict | None = None,
    candidate_kwargs: dict | None = None,
    *,
    budget_steps: int,
    seeds: Iterable[int] = (0, 1, 2),
    tolerance: float | None = None,
) -> SeedComparison:
    """Train baseline and candidate over ``seeds`` for ``budget_steps`` steps each and check parity across seeds.

    Each ``*_kwargs`` is passed to :func:`train_over_seeds` (e.g. ``{"precision": "bf16-autocast"}``).
    """
    seeds = _check_seeds(seeds, MIN_SEEDS)
    baseline = train_over_seeds(task, seeds, budget_steps=budget_steps, **dict(baseline_kwargs or {}))
    candidate = train_over_seeds(task, seeds, budget_steps=budget_steps, **dict(candidate_kwargs or {}))
    return SeedComparison(baseline, candidate, check_parity_over_seeds(baseline, candidate, tolerance=tolerance))
