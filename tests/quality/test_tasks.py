"""gpucost_lab.quality.tasks (the classification and sequence tasks) against their seeds and the Bayes rate by hand."""

import pytest
import torch

from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask


def test_data_is_seeded_and_split():
    task = ClassificationTask(train_samples=100, val_samples=40)
    a, b = task.data(), task.data()
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    x, y, x_val, y_val = a
    assert x.shape == (100, 32) and x_val.shape == (40, 32)
    assert int(y.max()) < task.classes and int(y.min()) >= 0
    other = ClassificationTask(train_samples=100, val_samples=40, seed=1).data()
    assert not torch.equal(x, other[0])


@pytest.mark.parametrize("task", [ClassificationTask(), SequenceTask(train_sequences=8, val_sequences=2)])
def test_a_seed_changes_the_initialisation_not_the_data(task):
    default, same, other = task.model(), task.model(seed=task.seed), task.model(seed=task.seed + 1)
    assert all(torch.equal(a, b) for a, b in zip(default.parameters(), same.parameters()))
    assert all(not torch.equal(a, b) for a, b in zip(default.parameters(), other.parameters()))
    # the data are drawn from the task's seed alone: a run's seed has no say in them
    assert all(torch.equal(a, b) for a, b in zip(task.data(), task.data()))


# ---- the sequence task -----------------------------------------------------------------------------------------------


def test_sequence_data_is_seeded_shifted_by_one_and_follows_the_rule():
    task = SequenceTask()
    x, y, x_val, y_val = task.data()
    assert x.shape == y.shape == (4096, 32) and x_val.shape == (512, 32)
    assert all(torch.equal(a, b) for a, b in zip(task.data(), (x, y, x_val, y_val)))
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is the next token of x
    assert not torch.equal(x, SequenceTask(seed=1).data()[0])
    # from the third token on, the next token is rule[previous two] with p + (1 - p) / V = 0.9 + 0.1 / 32
    rule = task.rule()
    hits = (y[:, 1:] == rule[x[:, :-1], x[:, 1:]]).float()
    expected, n = 0.9 + 0.1 / 32, hits.numel()  # 4096 x 31 Bernoulli draws
    assert abs(hits.mean().item() - expected) < 5 * (expected * (1 - expected) / n) ** 0.5


def test_the_ceiling_is_the_bayes_rate_by_hand():
    # first prediction 1/32; the other 31 at 0.9 + 0.1/32 = 0.903125: (0.03125 + 31 x 0.903125) / 32
    assert SequenceTask().ceiling_accuracy == pytest.approx((0.03125 + 27.996875) / 32)  # 0.8758789...
    assert SequenceTask(follow_probability=0.0).ceiling_accuracy == pytest.approx(1 / 32)  # pure noise


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"vocab_size": 1}, "vocab_size"),
        ({"seq_len": 1}, "seq_len"),
        ({"follow_probability": 1.5}, "follow_probability"),
    ],
)
def test_bad_sequence_tasks_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SequenceTask(**kwargs)
