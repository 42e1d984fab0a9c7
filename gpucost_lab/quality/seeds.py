"""One config trained once per seed (chapters 03 and 06): the spread of its steps to target and its quality.

Steps to target vary from seed to seed, so a cost to target is built from several
(:attr:`SeedRuns.steps_to_target_values`), and a release decision holds a candidate against the baseline over the
same seeds at a fixed step budget: :func:`gpucost_lab.quality.parity.check_parity` given two :class:`SeedRuns`
from :func:`train_over_seeds`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Integral
from statistics import fmean

from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import TrainResult, train_to_target

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


def format_seeds(seeds: Iterable[int]) -> str:
    """``0, 1, 2``: seeds as the messages about a seed study list them."""
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
        return tuple(run.seed for run in self.runs if run.seed is not None)  # every run has one (checked)

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
        return tuple(seed for seed, run in zip(self.seeds, self.runs) if not run.reached)

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
                f"{self.runs[0].target_accuracy:g}, got seeds {format_seeds(self.missed_seeds)} "
                f"that missed it {self.runs[0].budget_text}",
            )
        return tuple(run.steps_to_target for run in self.runs if run.steps_to_target is not None)

    @property
    def accuracy_at_budget_values(self) -> tuple[float, ...]:
        """Held-out metric per seed after exactly ``budget_steps`` steps; only for fixed-budget runs."""
        if self.budget_steps is None:
            raise InputError(
                "budget_steps",
                "budget_steps must be an integer for accuracy_at_budget_values, got None: "
                "train with train_over_seeds(..., budget_steps=N)",
            )
        return tuple(run.accuracy_at_budget for run in self.runs if run.accuracy_at_budget is not None)

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


def check_seeds(seeds: Iterable[int], min_seeds: int) -> tuple[int, ...]:
    """``seeds`` as a tuple of ints, if it holds at least ``min_seeds`` distinct integers >= 0."""
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
    steps and records its held-out metric there, which :func:`gpucost_lab.quality.parity.check_parity`
    compares. At least ``min_seeds`` (3) distinct seeds.
    """
    seeds = check_seeds(seeds, integer_at_least("min_seeds", min_seeds, 1))
    if "seed" in train_kwargs:
        raise InputError(
            "seed",
            f"seed must not be given to train_over_seeds, got seed={train_kwargs['seed']!r}; pass seeds=(...) instead",
        )
    return SeedRuns(tuple(train_to_target(task, seed=s, budget_steps=budget_steps, **train_kwargs) for s in seeds))


__all__ = ["MIN_SEEDS", "SeedRuns", "check_seeds", "format_seeds", "train_over_seeds"]
