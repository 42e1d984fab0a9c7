"""Small, real, seeded training tasks with a held-out quality metric (chapters 03 and 06).

Cost per sample means nothing unless the samples buy the same quality. A :class:`ClassificationTask`
is a synthetic classification problem (Gaussian clusters) that a small MLP learns on a CPU in a
second or two; :func:`train_to_target` trains until the validation accuracy reaches a stated target
and reports how many steps (and samples) that took: the *steps to target* that cost is multiplied by.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ._validate import fraction, integer_at_least, positive


@dataclass(frozen=True)
class ClassificationTask:
    """``classes`` Gaussian clusters in ``features`` dimensions; ``spread`` sets how much they overlap."""

    features: int = 32  # input width
    classes: int = 8  # labels
    train_samples: int = 16_384
    val_samples: int = 4_096  # held out: the quality metric is measured here
    spread: float = 2.0  # noise standard deviation per feature around unit-Gaussian cluster centres
    seed: int = 0  # data and model initialisation

    def __post_init__(self) -> None:
        integer_at_least("features", self.features, 1)
        integer_at_least("classes", self.classes, 2)
        integer_at_least("train_samples", self.train_samples, 1)
        integer_at_least("val_samples", self.val_samples, 1)
        positive("spread", self.spread)

    def data(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x_train, y_train, x_val, y_val)``, the same tensors for the same task."""
        g = torch.Generator().manual_seed(self.seed)
        centres = torch.randn(self.classes, self.features, generator=g)
        n = self.train_samples + self.val_samples
        labels = torch.randint(0, self.classes, (n,), generator=g)
        x = centres[labels] + self.spread * torch.randn(n, self.features, generator=g)
        return x[: self.train_samples], labels[: self.train_samples], x[self.train_samples:], labels[self.train_samples:]

    def model(self, hidden: int = 128) -> torch.nn.Module:
        """A two-layer MLP, initialised from the task's seed."""
        torch.manual_seed(self.seed)
        return torch.nn.Sequential(torch.nn.Linear(self.features, hidden), torch.nn.ReLU(),
                                   torch.nn.Linear(hidden, self.classes))


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of ``x`` whose arg-max prediction equals ``y``."""
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


@dataclass(frozen=True)
class TrainResult:
    """How a run reached (or missed) its quality target."""

    reached: bool
    steps_to_target: int | None  # optimizer steps until the validation accuracy first met the target
    samples_to_target: int | None  # steps x batch size
    final_val_accuracy: float  # at the step the run stopped
    target_accuracy: float
    batch_size: int
    lr: float
    history: tuple[tuple[int, float], ...]  # (step, validation accuracy) at every evaluation

    def to_dict(self) -> dict:
        """The summary without the history, for a results table."""
        return {k: v for k, v in asdict(self).items() if k != "history"}


def train_to_target(task: ClassificationTask, *, batch_size: int = 64, lr: float = 0.01, target_accuracy: float = 0.85,
                    max_steps: int = 3000, eval_every: int = 10, hidden: int = 128) -> TrainResult:
    """Train ``task.model(hidden)`` with SGD (momentum 0.9) until validation accuracy >= ``target_accuracy``.

    Deterministic for a given task seed and arguments. Evaluates every ``eval_every`` steps, so
    steps to target is a multiple of it.
    """
    integer_at_least("batch_size", batch_size, 1)
    positive("lr", lr)
    fraction("target_accuracy", target_accuracy, include_zero=False, include_one=True)
    integer_at_least("max_steps", max_steps, 1)
    integer_at_least("eval_every", eval_every, 1)
    x, y, x_val, y_val = task.data()
    model = task.model(hidden)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    g = torch.Generator().manual_seed(task.seed + 1)
    order, cursor, history, val = torch.randperm(len(x), generator=g), 0, [], 0.0
    for step in range(1, max_steps + 1):
        if cursor + batch_size > len(x):
            order, cursor = torch.randperm(len(x), generator=g), 0
        idx = order[cursor:cursor + batch_size]
        cursor += batch_size
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % eval_every == 0:
            val = accuracy(model, x_val, y_val)
            history.append((step, val))
            if val >= target_accuracy:
                return TrainResult(True, step, step * batch_size, val, target_accuracy, batch_size, lr, tuple(history))
    return TrainResult(False, None, None, val, target_accuracy, batch_size, lr, tuple(history))


class TrainingStep:
    """One optimizer step of ``task.model(hidden)`` on a fixed batch: the unit timed for throughput."""

    def __init__(self, task: ClassificationTask, batch_size: int, hidden: int = 128, lr: float = 0.01):
        integer_at_least("batch_size", batch_size, 1)
        x, y, _, _ = task.data()
        reps = -(-batch_size // len(x))  # a batch larger than the data repeats it
        self.x, self.y = x.repeat(reps, 1)[:batch_size], y.repeat(reps)[:batch_size]
        self.model = task.model(hidden)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)

    def __call__(self) -> None:
        loss = torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()


def train_with_phases(task: ClassificationTask, timer, *, steps: int = 60, batch_size: int = 64, lr: float = 0.01,
                      eval_every: int = 20, checkpoint_every: int = 30, checkpoint_path=None,
                      storage_latency_s: float = 0.0) -> float:
    """A real training loop with every phase inside ``timer.phase(name)`` (chapter 05).

    Phases: "data" (take the next batch; ``storage_latency_s`` stands in for a slow disk or network),
    "forward_backward", "eval" (accuracy on the whole validation set every ``eval_every`` steps),
    "checkpoint" (``torch.save`` of model and optimizer to ``checkpoint_path`` every
    ``checkpoint_every`` steps; skipped when no path is given) and "logging" (reading the loss with
    ``.item()``, a sync point on a GPU). Returns the last validation accuracy (0.0 if never evaluated).
    """
    import time

    integer_at_least("steps", steps, 1)
    integer_at_least("batch_size", batch_size, 1)
    integer_at_least("eval_every", eval_every, 1)
    integer_at_least("checkpoint_every", checkpoint_every, 1)
    x, y, x_val, y_val = task.data()
    model = task.model()
    optimizer = torch.optim.SGD(model.parameters(), lr=positive("lr", lr), momentum=0.9)
    g = torch.Generator().manual_seed(task.seed + 1)
    val_accuracy = 0.0
    for step in range(1, steps + 1):
        with timer.phase("data"):
            idx = torch.randint(0, len(x), (batch_size,), generator=g)
            xb, yb = x[idx], y[idx]
            if storage_latency_s > 0:
                time.sleep(storage_latency_s)
        with timer.phase("forward_backward"):
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if step % eval_every == 0:
            with timer.phase("eval"):
                val_accuracy = accuracy(model, x_val, y_val)
        if checkpoint_path is not None and step % checkpoint_every == 0:
            with timer.phase("checkpoint"):
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step},
                           checkpoint_path)
        with timer.phase("logging"):
            loss.item()
    return val_accuracy
