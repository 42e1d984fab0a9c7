"""Train the course's tasks to a quality target, and time their steps (chapters 03 and 06).

Cost per sample means nothing unless the samples buy the same quality. The tasks
(:class:`~gpucost_lab.quality.tasks.ClassificationTask`, :class:`~gpucost_lab.quality.tasks.SequenceTask`, in
:mod:`gpucost_lab.quality.tasks` and importable from here) are small enough to learn on a CPU in a second or two;
:func:`train_to_target` trains until the validation accuracy reaches a stated target
and reports how many steps (and samples) that took: the *steps to target* that cost is multiplied by.
Its ``seed`` draws the model initialisation and the batch order while the data and the held-out set
stay those of the task's seed, so runs over several seeds (:func:`gpucost_lab.quality.seeds.train_over_seeds`)
are judged on the same held-out samples; ``budget_steps`` trains a fixed number of steps and records
the held-out accuracy there, the quality that parity across seeds compares. A sequence task is counted in
tokens, so its cost is priced per token (``tokens_to_target``).

Both kinds of task train in a stated precision (:data:`gpucost_lab.precision.PRECISIONS`): full fp32, bf16-mixed
(``torch.autocast`` in bfloat16 around forward and loss, fp32 weights and gradients; CPU or CUDA) or fp16-mixed
(autocast in float16 plus ``torch.amp.GradScaler``; CUDA only); chapter 06 checks the quality parity of the faster
precision before its lower cost is released (:func:`gpucost_lab.quality.parity.check_parity`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import torch

from gpucost_lab._validate import InputError, fraction, integer_at_least, positive
from gpucost_lab.loop.phases import CHECKPOINT, DATA, EVAL, FORWARD_BACKWARD, LOGGING
from gpucost_lab.measure import device as _device
from gpucost_lab.precision import check_precision
from gpucost_lab.quality.tasks import ClassificationTask, NextTokenGRU, SequenceTask, init_seed


def autocast(precision: str, device: str = "cpu") -> contextlib.AbstractContextManager:
    """The context that runs forward and loss in ``precision`` on ``device`` (a no-op for fp32)."""
    check_precision(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
    return torch.autocast(device_type=device_type, dtype=dtype)


def _grad_scaler(precision: str) -> torch.amp.GradScaler | None:
    """fp16-mixed scales the loss so that small gradients do not underflow in float16; the others need no scaler."""
    return torch.amp.GradScaler("cuda") if precision == "fp16-mixed" else None


def _optimizer_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler | None) -> None:
    """Backward from ``loss`` and one optimizer step, through ``scaler`` when there is one."""
    optimizer.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def _loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every prediction: one per sample, or one per token of a sequence."""
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _repeat_rows(t: torch.Tensor, reps: int) -> torch.Tensor:
    return t.repeat(reps, *([1] * (t.dim() - 1)))


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of predictions whose arg-max equals ``y``: per sample, or per token for a sequence task."""
    with torch.no_grad():
        return (model(x).argmax(dim=-1) == y).float().mean().item()


@dataclass(frozen=True)
class TrainResult:
    """How a run reached (or missed) its quality target."""

    reached: bool  # the target was met at an evaluated step (within budget_steps when one was given)
    steps_to_target: int | None  # optimizer steps until the validation accuracy first met the target
    samples_to_target: int | None  # steps x batch size
    final_val_accuracy: float  # at the step the run stopped (budget_steps when one was given)
    target_accuracy: float
    batch_size: int
    lr: float
    history: tuple[tuple[int, float], ...]  # (step, validation accuracy) at every evaluation
    precision: str = "fp32"  # one of gpucost_lab.precision.PRECISIONS: how forward and loss ran
    device: str = "cpu"  # where it trained
    metric: str = "accuracy"  # what final_val_accuracy measures ("accuracy", "next-token accuracy")
    counted_unit: str = "samples"  # the unit cost is priced per: "samples" or "tokens"
    tokens_to_target: int | None = None  # steps x batch x sequence length, for a sequence task; else None
    max_steps: int | None = None  # the step budget: a run that missed the target stopped there
    seed: int | None = None  # model initialisation and batch order (the data are the task's); None: not recorded
    hidden: int | None = None  # model width; None: not recorded
    budget_steps: int | None = None  # a fixed-budget run trained exactly this many steps; None: stopped at the target
    accuracy_at_budget: float | None = None  # held-out metric after exactly budget_steps steps; None without a budget

    @property
    def units_to_target(self) -> int | None:
        """Counted units to the target: tokens for a sequence task, samples otherwise."""
        return self.tokens_to_target if self.counted_unit == "tokens" else self.samples_to_target

    @property
    def target_resolution_steps(self) -> int | None:
        """Steps between the evaluation that met the target and the one before it (None if missed).

        The first step at or above the target lies in that window, ending at ``steps_to_target``:
        1 means steps to target is exact to the step; ``eval_every`` means it is rounded up to the grid.
        """
        if self.steps_to_target is None:
            return None
        before = [step for step, _ in self.history if step < self.steps_to_target]
        return self.steps_to_target - (before[-1] if before else 0)

    @property
    def budget_text(self) -> str:
        """Where the run had to reach its target, as a parity check says it: "within 300 steps"."""
        steps = self.max_steps if self.max_steps is not None else (self.history[-1][0] if self.history else None)
        return f"within {steps} steps" if steps is not None else "within its step budget"

    def to_dict(self) -> dict:
        """The summary without the history, for a results table."""
        return {k: v for k, v in asdict(self).items() if k != "history"}


# Default width of the band below the target where train_to_target evaluates every step. Measured on the default
# ClassificationTask (target 0.85), batch 64 lr 0.01 and batch 128 lr 0.02 in fp32, bf16-mixed and hidden 8, 20 seeds
# each: the largest rise of held-out accuracy within 10 steps from any step at or above 0.82 was 0.029 (batch 128 at
# step 30; the median change in 10 steps near 0.85 is 0.002), and the largest shortfall below 0.85 at a coarse
# evaluation whose next 9 steps crossed the target was 0.018, so 0.03 finds every one of those 80 crossings at its
# exact step (0.01 missed 4). The cost is held-out evaluations: about 60 per run to the target instead of about 10
# (one evaluation of 4,096 samples costs about 4 training steps of batch 64 at hidden 128 on one CPU thread, 1.0 ms
# against 0.24 ms).
FINE_WITHIN = 0.03


@dataclass(frozen=True)
class _Run:
    """The checked settings of one :func:`train_to_target` run, with the task's defaults filled in."""

    batch_size: int
    lr: float
    target_accuracy: float
    max_steps: int  # the budget when one is given
    eval_every: int
    hidden: int
    precision: str
    device: str  # resolved
    seed: int
    fine_within: float
    budget_steps: int | None


def _budgeted(budget_steps: int | None, max_steps: int) -> tuple[int | None, int]:
    """(budget_steps, max_steps) checked: a fixed budget of at most ``max_steps`` steps becomes the run's limit."""
    if budget_steps is None:
        return None, max_steps
    budget_steps = integer_at_least("budget_steps", budget_steps, 1)
    if budget_steps > max_steps:
        raise InputError(
            "budget_steps", f"budget_steps must be an integer <= max_steps ({max_steps}), got {budget_steps!r}"
        )
    return budget_steps, budget_steps


def _batch_indices(samples: int, batch_size: int, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Batches of sample indices in a shuffled order, shuffled again when the next batch would run past its end."""
    order, cursor = torch.randperm(samples, generator=generator), 0
    while True:
        if cursor + batch_size > samples:
            order, cursor = torch.randperm(samples, generator=generator), 0
        yield order[cursor : cursor + batch_size]
        cursor += batch_size


def _train(task: ClassificationTask | SequenceTask, run: _Run) -> tuple[list[tuple[int, float]], int | None]:
    """Train as :func:`train_to_target` says: the (step, held-out metric) history and the step that met the target."""
    x, y, x_val, y_val = (t.to(run.device) for t in task.data())
    model = task.model(run.hidden, seed=run.seed).to(run.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9)
    scaler = _grad_scaler(run.precision)
    batches = _batch_indices(len(x), run.batch_size, torch.Generator().manual_seed(run.seed + 1))
    fine_from = run.target_accuracy - run.fine_within  # evaluate every step once the last evaluation is at or above
    history: list[tuple[int, float]] = []
    reached_at: int | None = None
    for step, idx in zip(range(1, run.max_steps + 1), batches):
        idx = idx.to(run.device)
        with autocast(run.precision, run.device):
            loss = _loss(model(x[idx]), y[idx])
        _optimizer_step(loss, optimizer, scaler)
        fine = reached_at is None and bool(history) and history[-1][1] >= fine_from
        if step % run.eval_every == 0 or fine or step == run.budget_steps:
            with autocast(run.precision, run.device):
                history.append((step, accuracy(model, x_val, y_val)))
            if reached_at is None and history[-1][1] >= run.target_accuracy:
                reached_at = step
                if run.budget_steps is None:
                    break
    return history, reached_at


def train_to_target(
    task: ClassificationTask | SequenceTask,
    *,
    batch_size: int = 64,
    lr: float | None = None,
    target_accuracy: float | None = None,
    max_steps: int = 3000,
    eval_every: int = 10,
    hidden: int | None = None,
    precision: str = "fp32",
    device: str = "cpu",
    seed: int | None = None,
    fine_within: float = FINE_WITHIN,
    budget_steps: int | None = None,
) -> TrainResult:
    """Train ``task.model(hidden, seed)`` with SGD (momentum 0.9) until validation accuracy >= ``target_accuracy``.

    ``lr``, ``target_accuracy`` and ``hidden`` default to the task's (0.01, 0.85 and 128 for a
    :class:`ClassificationTask`). ``precision`` is one of :data:`gpucost_lab.precision.PRECISIONS`: forward, loss
    and evaluation run under :func:`autocast`; "fp16-mixed" also scales the loss with
    ``torch.amp.GradScaler`` and needs ``device="cuda"``. Deterministic for a given seed and
    arguments on the CPU (on CUDA, up to the GPU kernels' own determinism).

    ``seed`` draws the model initialisation and the batch order; the training data and the held-out
    set are always those of ``task.seed``, so runs with different seeds are judged on the same
    held-out samples. None (the default) uses ``task.seed`` for all of them, as before seeds existed.

    Evaluation: every ``eval_every`` steps while the last held-out accuracy is below
    ``target_accuracy - fine_within``, then every step, so steps to target is exact to the step when
    the accuracy approaches the target without jumping more than ``fine_within`` in ``eval_every``
    steps (:attr:`TrainResult.target_resolution_steps` says how exact it is). ``fine_within=0``
    evaluates only every ``eval_every`` steps (steps to target is then a multiple of it). The default,
    :data:`FINE_WITHIN` (0.03), is wider than any 10-step rise measured near the default target.

    ``budget_steps``: train exactly that many steps (at most ``max_steps``) without stopping at the
    target, still recording the first step that met it (``steps_to_target``, evaluated as above until
    then, every ``eval_every`` steps after) and the held-out metric after exactly ``budget_steps``
    steps (``accuracy_at_budget``, also ``final_val_accuracy``). ``reached`` then means the target
    was met at some step <= ``budget_steps``, even if the accuracy at the budget has drifted back
    below it; the result's ``max_steps`` is the budget.
    """
    integer_at_least("batch_size", batch_size, 1)
    lr = task.default_lr if lr is None else lr
    positive("lr", lr)
    target = task.default_target_accuracy if target_accuracy is None else target_accuracy
    fraction("target_accuracy", target, include_zero=False, include_one=True)
    integer_at_least("max_steps", max_steps, 1)
    integer_at_least("eval_every", eval_every, 1)
    hidden = integer_at_least("hidden", task.default_hidden if hidden is None else hidden, 1)
    seed = init_seed(task, seed)
    fine_within = fraction("fine_within", fine_within, include_zero=True, include_one=True)
    budget_steps, max_steps = _budgeted(budget_steps, max_steps)
    device = _device.resolve_device(device)
    check_precision(precision, device)
    run = _Run(
        batch_size, lr, target, max_steps, eval_every, hidden, precision, device, seed, fine_within, budget_steps
    )
    history, reached_at = _train(task, run)
    return _result(task, run, history, reached_at)


def _result(
    task: ClassificationTask | SequenceTask, run: _Run, history: list[tuple[int, float]], reached_at: int | None
) -> TrainResult:
    """What :func:`train_to_target` reports of a run that evaluated ``history`` and met the target at ``reached_at``."""
    val = history[-1][1] if history else 0.0  # the last evaluation: where the run stopped
    samples = None if reached_at is None else reached_at * run.batch_size
    tokens = samples * task.units_per_sample if samples is not None and task.counted_unit == "tokens" else None
    return TrainResult(
        reached=reached_at is not None,
        steps_to_target=reached_at,
        samples_to_target=samples,
        final_val_accuracy=val,
        target_accuracy=run.target_accuracy,
        batch_size=run.batch_size,
        lr=run.lr,
        history=tuple(history),
        precision=run.precision,
        device=run.device,
        metric=task.metric,
        counted_unit=task.counted_unit,
        tokens_to_target=tokens,
        max_steps=run.max_steps,
        seed=run.seed,
        hidden=run.hidden,
        budget_steps=run.budget_steps,
        accuracy_at_budget=val if run.budget_steps is not None else None,
    )


class TrainingStep:
    """One optimizer step of ``task.model(hidden)`` on a fixed batch: the unit timed for throughput.

    ``precision`` and ``device`` as in :func:`train_to_target`; ``units_per_step`` is the batch
    size in samples, or batch x sequence length in tokens for a :class:`SequenceTask`.
    """

    def __init__(
        self,
        task: ClassificationTask | SequenceTask,
        batch_size: int,
        hidden: int | None = None,
        lr: float | None = None,
        precision: str = "fp32",
        device: str = "cpu",
    ):
        integer_at_least("batch_size", batch_size, 1)
        self.device = _device.resolve_device(device)
        self.precision = check_precision(precision, self.device)
        x, y, _, _ = task.data()
        reps = -(-batch_size // len(x))  # a batch larger than the data repeats it
        self.x = _repeat_rows(x, reps)[:batch_size].to(self.device).clone()  # its own storage, not a view of the data
        self.y = _repeat_rows(y, reps)[:batch_size].to(self.device).clone()
        self.counted_unit = task.counted_unit
        self.units_per_step = batch_size * task.units_per_sample
        self.model = task.model(task.default_hidden if hidden is None else hidden).to(self.device)
        lr = task.default_lr if lr is None else lr
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=positive("lr", lr), momentum=0.9)
        self.scaler = _grad_scaler(self.precision)

    def __call__(self) -> None:
        with autocast(self.precision, self.device):
            loss = _loss(self.model(self.x), self.y)
        _optimizer_step(loss, self.optimizer, self.scaler)


def train_with_phases(
    task: ClassificationTask,
    timer,
    *,
    steps: int = 60,
    batch_size: int = 64,
    lr: float = 0.01,
    eval_every: int = 20,
    checkpoint_every: int = 30,
    checkpoint_path=None,
    storage_latency_s: float = 0.0,
) -> float:
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
        with timer.phase(DATA):
            idx = torch.randint(0, len(x), (batch_size,), generator=g)
            xb, yb = x[idx], y[idx]
            if storage_latency_s > 0:
                time.sleep(storage_latency_s)
        with timer.phase(FORWARD_BACKWARD):
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if step % eval_every == 0:
            with timer.phase(EVAL):
                val_accuracy = accuracy(model, x_val, y_val)
        if checkpoint_path is not None and step % checkpoint_every == 0:
            with timer.phase(CHECKPOINT):
                torch.save(
                    {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, checkpoint_path
                )
        with timer.phase(LOGGING):
            loss.item()
    return val_accuracy


__all__ = [
    "FINE_WITHIN",
    "ClassificationTask",
    "NextTokenGRU",
    "SequenceTask",
    "TrainResult",
    "TrainingStep",
    "accuracy",
    "autocast",
    "train_to_target",
    "train_with_phases",
]
