"""gpucost_lab.quality.train's train_to_target on real runs: seeded and deterministic, judged on the held-out metric,
and a real steps-to-target checked against a plain reference loop written here (fine evaluation near the target,
the evaluation schedule, fixed step budgets).
"""

import pytest
import torch

from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import train_to_target

pytestmark = pytest.mark.slow


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
