"""gpucost_lab.quality.train (train_to_target, TrainingStep, autocast) on small steps and short runs: accuracy by hand,
a training step's batch, the phases of a run, precision, the result's fields, and bad arguments. The real
steps-to-target, seeded, on the held-out metric and checked against a plain reference loop written there, is
tests/quality/test_train_to_target.py.
"""

import dataclasses

import pytest
import torch

from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import TrainingStep, TrainResult, accuracy, autocast, train_to_target

from .helpers import result


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


# ---- seeds and step budgets: their arguments -------------------------------------------------------------------------


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
