"""Helpers of the tests in tests/quality/: training results and seed studies built by hand (no training), and a
small classification task for real runs."""

from gpucost_lab.quality.seeds import SeedRuns
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainResult


def result(
    reached=True, steps=100, acc=0.853, target=0.85, precision="fp32", max_steps=300, batch=64, metric="accuracy"
):
    """A TrainResult built by hand: no training."""
    return TrainResult(
        reached,
        steps if reached else None,
        steps * batch if reached else None,
        acc,
        target,
        batch,
        0.01,
        ((steps if reached else max_steps, acc),),
        precision=precision,
        metric=metric,
        max_steps=max_steps,
    )


def seeded(seed, steps=90, acc=0.855, reached=True, budget=300, precision="fp32", target=0.85, batch=64):
    """A fixed-budget TrainResult built by hand for one seed: no training."""
    history = ((steps, 0.851), (budget, acc)) if reached else ((budget, acc),)
    return TrainResult(
        reached,
        steps if reached else None,
        steps * batch if reached else None,
        acc,
        target,
        batch,
        0.01,
        history,
        precision=precision,
        max_steps=budget,
        seed=seed,
        hidden=128,
        budget_steps=budget,
        accuracy_at_budget=acc,
    )


def study(accs, steps=(85, 67, 113), seeds=(0, 1, 2), missed=(), **kwargs):
    return SeedRuns(tuple(seeded(s, n, a, reached=s not in missed, **kwargs) for s, n, a in zip(seeds, steps, accs)))


SMALL = ClassificationTask(train_samples=1024, val_samples=512)
