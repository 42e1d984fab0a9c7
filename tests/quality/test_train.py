"""gpucost_lab.quality.train (train_to_target, TrainingStep, autocast): seeded, held-out metric, a real
steps-to-target checked against a plain reference loop written here."""

import dataclasses

import pytest
import torch

from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import TrainingStep, TrainResult, accuracy, autocast, train_to_target

from .helpers import result


def test_training_is_deterministic_and_reaches_the_target():
    task = ClassificationTask()
    first, second = train_to_target(task, batch_size=64), train_to_target(task, batch_size=64)
    assert first == second
    assert first.reached and first.final_val_accuracy >= first.target_accuracy
    assert first.samples_to_target == first.steps_to_target * 64
    # the run stops at the evaluation that met the target
    assert first.history[-1] == (first.steps_to_target, first.final_val_accuracy)
    assert first.seed == task.seed and first.hidden == 128
    assert first.budget_steps is None and first.accuracy_at_budget is None


def test_a_task_with_no_signal_never_reaches_the_target():
    # spread so large that the clusters are noise: 8 classes, chance is 1/8
    result = train_to_target(ClassificationTask(spread=1e3, train_samples=512, val_samples=512), max_steps=60)
    assert not result.reached and result.steps_to_target is None and result.samples_to_target is None
    assert result.final_val_accuracy < 0.3


def test_accuracy_is_the_share_of_argmax_hits():
    model = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.eye(2))
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [0.0, 3.0]])
    assert accuracy(model, x, torch.tensor([0, 1, 1, 1])) == pytest.approx(3 / 4)


def test_training_step_uses_a_batch_of_the_asked_size():
    step = TrainingStep(ClassificationTask(train_samples=50, val_samples=10), batch_size=128)
    assert step.x.shape == (128, 32) and step.y.shape == (128,)
    before = [p.clone() for p in step.model.parameters()]
    step()
    assert any(not torch.equal(a, b) for a, b in zip(before, step.model.parameters()))


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"lr": 0}, "lr"),
        ({"target_accuracy": 1.5}, "target_accuracy"),
        ({"max_steps": 0}, "max_steps"),
    ],
)
def test_bad_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        train_to_target(ClassificationTask(train_samples=10, val_samples=10), **kwargs)


class RecordingTimer:
    """Records the order of phases entered; no clock needed."""

    def __init__(self):
        self.entered = []

    def phase(self, name):
        import contextlib

        self.entered.append(name)
        return contextlib.nullcontext()


def test_train_with_phases_runs_each_phase_as_often_as_scheduled(tmp_path):
    from gpucost_lab.quality.train import train_with_phases

    timer = RecordingTimer()
    ckpt = tmp_path / "ckpt.pt"
    acc = train_with_phases(
        ClassificationTask(), timer, steps=60, eval_every=20, checkpoint_every=30, checkpoint_path=ckpt
    )
    counts = {p: timer.entered.count(p) for p in set(timer.entered)}
    # 60 steps: data, forward_backward and logging each step; eval at 20, 40, 60; checkpoint at 30, 60
    assert counts == {"data": 60, "forward_backward": 60, "logging": 60, "eval": 3, "checkpoint": 2}
    assert timer.entered[:2] == ["data", "forward_backward"]
    saved = torch.load(ckpt)
    assert saved["step"] == 60
    assert 0.125 < acc <= 1.0  # better than chance over 8 classes after 60 steps


def test_train_with_phases_without_a_checkpoint_path_skips_checkpoints():
    from gpucost_lab.quality.train import train_with_phases

    timer = RecordingTimer()
    train_with_phases(ClassificationTask(), timer, steps=10, eval_every=5, checkpoint_every=5)
    assert "checkpoint" not in timer.entered and timer.entered.count("eval") == 2


def test_training_step_batch_owns_its_storage():
    # a view would charge the whole data set to the batch in storage-based memory accounting
    step = TrainingStep(ClassificationTask(), batch_size=64)
    assert step.x.untyped_storage().nbytes() == 64 * 32 * 4


def test_sequence_training_step_counts_tokens():
    step = TrainingStep(SequenceTask(train_sequences=8, val_sequences=2), batch_size=20)
    assert step.x.shape == step.y.shape == (20, 32)  # 8 sequences repeated to fill the batch
    assert step.counted_unit == "tokens" and step.units_per_step == 20 * 32
    before = [p.clone() for p in step.model.parameters()]
    step()
    assert any(not torch.equal(a, b) for a, b in zip(before, step.model.parameters()))


# ---- precision -------------------------------------------------------------------------------------------------------


def test_fp16_amp_needs_cuda_and_unknown_precisions_are_refused():
    task = ClassificationTask(train_samples=64, val_samples=16)
    with pytest.raises(ValueError, match="fp16-mixed.*needs CUDA"):
        train_to_target(task, precision="fp16-mixed", device="cpu")
    with pytest.raises(ValueError, match="precision must be one of"):
        train_to_target(task, precision="int8")
    with pytest.raises(ValueError, match="fp16-mixed.*needs CUDA"):
        TrainingStep(task, 8, precision="fp16-mixed")


def test_bf16_autocast_runs_the_matmuls_in_bfloat16_with_fp32_weights():
    model = ClassificationTask().model()
    x = torch.randn(4, 32)
    with autocast("bf16-mixed", "cpu"):
        out = model(x)
    assert out.dtype == torch.bfloat16  # torch's CPU autocast casts linear to bfloat16
    assert all(p.dtype == torch.float32 for p in model.parameters())
    with autocast("fp32", "cpu"):
        assert model(x).dtype == torch.float32


# ---- the result ------------------------------------------------------------------------------------------------------


def test_train_result_fields_are_documented_in_to_dict():
    r = result()
    assert set(r.to_dict()) == {f.name for f in dataclasses.fields(TrainResult)} - {"history"}


# ---- seeds, fine evaluation near the target, fixed step budgets ------------------------------------------------------


def per_step_accuracy(task, seed, steps, batch=64, lr=0.01, hidden=128):
    """Reference trajectory: a plain loop that evaluates the held-out set after every step.

    Written here without train_to_target, with the seed protocol it documents: the MLP initialised
    after ``torch.manual_seed(seed)``, batches drawn without replacement in an order from a generator
    seeded ``seed + 1`` (a fresh permutation when the next batch would run past the data), held-out
    data of the task's own seed. Returns the accuracy after steps 1..steps (index step - 1).
    """
    x, y, x_val, y_val = task.data()
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(task.features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, task.classes)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    g = torch.Generator().manual_seed(seed + 1)
    order, cursor, accuracies = torch.randperm(len(x), generator=g), 0, []
    for _ in range(steps):
        if cursor + batch > len(x):
            order, cursor = torch.randperm(len(x), generator=g), 0
        idx = order[cursor : cursor + batch]
        cursor += batch
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            accuracies.append((model(x_val).argmax(dim=1) == y_val).float().mean().item())
    return accuracies


def first_step_at(accuracies, target, every=1):
    """First step (1-based) whose accuracy meets ``target``, looking only at multiples of ``every``."""
    return next((i + 1 for i, a in enumerate(accuracies) if (i + 1) % every == 0 and a >= target), None)


@pytest.fixture(scope="module")
def reference():
    """Per-step held-out accuracy of the default task for seeds 0, 1, 2 (the task's data: seed 0)."""
    task = ClassificationTask()
    return task, {seed: per_step_accuracy(task, seed, 160) for seed in (0, 1, 2)}


def test_fine_evaluation_finds_the_first_step_at_the_target(reference):
    task, trajectories = reference
    exact = {}
    for seed, accuracies in trajectories.items():
        exact[seed] = first_step_at(accuracies, 0.85)
        assert exact[seed] is not None, "the reference should cross 0.85 within 160 steps"
        result = train_to_target(task, seed=seed)
        assert result.seed == seed
        assert result.steps_to_target == exact[seed] and result.samples_to_target == exact[seed] * 64
        assert result.final_val_accuracy == accuracies[exact[seed] - 1]  # judged on the task's held-out data
        assert result.target_resolution_steps == 1  # the step before was evaluated too
        # every evaluation is the reference's accuracy at that step
        assert all(acc == accuracies[step - 1] for step, acc in result.history)
    # the 10-step grid would have rounded at least one of them up
    assert any(steps % 10 for steps in exact.values())


def test_evaluations_follow_the_schedule(reference):
    # every 10 steps while the last evaluation is below 0.85 - fine_within, then every step
    task, trajectories = reference
    result = train_to_target(task, seed=2, fine_within=0.03)
    steps = [step for step, _ in result.history]
    expected, last = [], None
    for step in range(1, result.steps_to_target + 1):
        if step % 10 == 0 or (last is not None and last >= 0.85 - 0.03):
            expected.append(step)
            last = trajectories[2][step - 1]
    assert steps == expected


def test_fine_within_zero_keeps_the_ten_step_grid(reference):
    task, trajectories = reference
    for seed in (0, 1):
        result = train_to_target(task, seed=seed, fine_within=0)
        assert result.steps_to_target == first_step_at(trajectories[seed], 0.85, every=10)
        assert all(step % 10 == 0 for step, _ in result.history)
        assert result.target_resolution_steps == 10


def test_no_seed_means_the_task_seed():
    task = ClassificationTask(train_samples=512, val_samples=256, seed=3)
    assert train_to_target(task, max_steps=30) == train_to_target(task, max_steps=30, seed=3)
    assert train_to_target(task, max_steps=30).seed == 3
    assert train_to_target(task, max_steps=30, seed=4) != train_to_target(task, max_steps=30)


@pytest.fixture
def optimizer_steps(monkeypatch):
    """Count every SGD optimizer step taken."""
    count = {"steps": 0}
    step = torch.optim.SGD.step

    def counting(self, *args, **kwargs):
        count["steps"] += 1
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.SGD, "step", counting)
    return count


def test_a_budget_trains_exactly_that_many_steps_past_the_target(reference, optimizer_steps):
    task, trajectories = reference
    exact = first_step_at(trajectories[1], 0.85)
    result = train_to_target(task, seed=1, budget_steps=125)
    assert optimizer_steps["steps"] == 125 and exact < 125
    assert result.reached and result.steps_to_target == exact
    assert result.budget_steps == result.max_steps == 125
    assert result.accuracy_at_budget == result.final_val_accuracy == trajectories[1][124]
    # after the target: every 10 steps, and the budget's last step
    after = [step for step, _ in result.history if step > exact]
    assert after == [s for s in range(10, 121, 10) if s > exact] + [125]


def test_a_budget_that_ends_before_the_target_misses_it(reference, optimizer_steps):
    task, trajectories = reference
    exact = first_step_at(trajectories[0], 0.85)
    result = train_to_target(task, seed=0, budget_steps=exact - 1)
    assert optimizer_steps["steps"] == exact - 1
    assert not result.reached and result.steps_to_target is None and result.target_resolution_steps is None
    assert result.accuracy_at_budget == trajectories[0][exact - 2]
    assert train_to_target(task, seed=0, budget_steps=exact).steps_to_target == exact


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"seed": 1.5}, "seed must be an integer"),
        ({"fine_within": 1.5}, r"fine_within must be in \[0, 1\]"),
        ({"fine_within": -0.1}, "fine_within"),
        ({"budget_steps": 0}, "budget_steps must be an integer >= 1"),
        ({"budget_steps": 20, "max_steps": 10}, r"budget_steps must be an integer <= max_steps \(10\), got 20"),
    ],
)
def test_bad_seed_and_budget_arguments_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_to_target(ClassificationTask(train_samples=10, val_samples=10), **kwargs)
