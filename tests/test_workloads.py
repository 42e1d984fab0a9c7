"""The small training task: seeded, held-out metric, a real steps-to-target."""
import pytest
import torch

from gpucost_lab.workloads import ClassificationTask, TrainingStep, accuracy, train_to_target


def test_data_is_seeded_and_split():
    task = ClassificationTask(train_samples=100, val_samples=40)
    a, b = task.data(), task.data()
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    x, y, x_val, y_val = a
    assert x.shape == (100, 32) and x_val.shape == (40, 32)
    assert int(y.max()) < task.classes and int(y.min()) >= 0
    other = ClassificationTask(train_samples=100, val_samples=40, seed=1).data()
    assert not torch.equal(x, other[0])


def test_training_is_deterministic_and_reaches_the_target():
    task = ClassificationTask()
    first, second = train_to_target(task, batch_size=64), train_to_target(task, batch_size=64)
    assert first == second
    assert first.reached and first.final_val_accuracy >= first.target_accuracy
    assert first.steps_to_target % 10 == 0  # evaluated every 10 steps
    assert first.samples_to_target == first.steps_to_target * 64
    # the run stops at the evaluation that met the target
    assert first.history[-1] == (first.steps_to_target, first.final_val_accuracy)


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


@pytest.mark.parametrize("kwargs,field", [({"batch_size": 0}, "batch_size"), ({"lr": 0}, "lr"),
                                          ({"target_accuracy": 1.5}, "target_accuracy"), ({"max_steps": 0}, "max_steps")])
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
    from gpucost_lab.workloads import train_with_phases

    timer = RecordingTimer()
    ckpt = tmp_path / "ckpt.pt"
    acc = train_with_phases(ClassificationTask(), timer, steps=60, eval_every=20, checkpoint_every=30,
                            checkpoint_path=ckpt)
    counts = {p: timer.entered.count(p) for p in set(timer.entered)}
    # 60 steps: data, forward_backward and logging each step; eval at 20, 40, 60; checkpoint at 30, 60
    assert counts == {"data": 60, "forward_backward": 60, "logging": 60, "eval": 3, "checkpoint": 2}
    assert timer.entered[:2] == ["data", "forward_backward"]
    saved = torch.load(ckpt)
    assert saved["step"] == 60
    assert 0.125 < acc <= 1.0  # better than chance over 8 classes after 60 steps


def test_train_with_phases_without_a_checkpoint_path_skips_checkpoints():
    from gpucost_lab.workloads import train_with_phases

    timer = RecordingTimer()
    train_with_phases(ClassificationTask(), timer, steps=10, eval_every=5, checkpoint_every=5)
    assert "checkpoint" not in timer.entered and timer.entered.count("eval") == 2


def test_training_step_batch_owns_its_storage():
    # a view would charge the whole data set to the batch in storage-based memory accounting
    step = TrainingStep(ClassificationTask(), batch_size=64)
    assert step.x.untyped_storage().nbytes() == 64 * 32 * 4
