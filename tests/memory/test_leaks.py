"""Retained autograd graphs across steps: flagged with hand-derived growth, and no false positives (chapter 06).

The workload of every loop: ``Linear(256, 256)`` on a fresh batch ``x`` of 32 x 256 float32 each step,
loss ``out.pow(2).mean()``. Its graph, by hand: ``MeanBackward0 <- PowBackward0 <- AddmmBackward0 <-
TBackward0`` (4 new nodes; the two ``AccumulateGrad`` nodes belong to the parameters and are shared by
every step). Before backward frees them it saves ``x`` (addmm keeps its input for the weight gradient:
32 x 256 x 4 = 32,768 bytes) and ``out`` (pow keeps its input: another 32,768 bytes); the loss itself is
one float32, 4 bytes.
"""

import gc

import pytest
import torch

from gpucost_lab.memory.leaks import LeakReport, detect_retained_graphs
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainingStep

pytestmark = pytest.mark.slow

SAVED_BYTES_PER_STEP = 32 * 256 * 4 + 32 * 256 * 4  # x saved by addmm + out saved by pow
LOSS_BYTES = 4  # one float32 scalar
NODES_PER_STEP = 4  # Mean, Pow, Addmm, T


def make_loop(kind):
    """One step of a training (or evaluation) loop that keeps what ``kind`` says across steps."""
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 256)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    state = {"total_loss": 0.0}

    def step():
        x = torch.randn(32, 256)
        loss = model(x).pow(2).mean()
        if kind == "eval_append":  # validation without torch.no_grad(): no backward ever runs
            kept.append(loss)
            return
        optimizer.zero_grad(set_to_none=True)
        loss.backward(retain_graph=kind in ("append_retain", "total_retain"))
        optimizer.step()
        if kind in ("append", "append_retain"):
            kept.append(loss)
        elif kind == "item":
            kept.append(loss.item())
        elif kind == "detach":
            kept.append(loss.detach())
        elif kind in ("total", "total_retain"):
            state["total_loss"] += loss
        elif kind == "total_item":
            state["total_loss"] += loss.item()

    return step


def test_keeping_losses_without_backward_keeps_every_graph_with_its_activations():
    report = detect_retained_graphs(make_loop("eval_append"), steps=20)
    assert report.leaking
    assert report.growth_bytes_per_step >= SAVED_BYTES_PER_STEP  # the lower bound from the brief
    assert report.growth_bytes_per_step == pytest.approx(SAVED_BYTES_PER_STEP + LOSS_BYTES)  # 65,540 by hand
    assert report.retained_graph_tensors_per_step == pytest.approx(1.0)  # one loss kept per step
    assert report.retained_graph_nodes_per_step == pytest.approx(NODES_PER_STEP)
    assert "torch.no_grad()" in report.likely_cause and "loss.item()" in report.likely_cause


def test_retain_graph_true_keeps_the_activations_too():
    report = detect_retained_graphs(make_loop("append_retain"), steps=20)
    assert report.leaking and report.growth_bytes_per_step >= SAVED_BYTES_PER_STEP
    assert "retain_graph=True" in report.likely_cause


def test_appending_the_loss_after_backward_keeps_the_graph_nodes():
    # backward freed the saved activations: what grows is one loss tensor (4 bytes) and its 4 nodes per step
    report = detect_retained_graphs(make_loop("append"), steps=20)
    assert report.leaking
    assert report.retained_graph_tensors_per_step == pytest.approx(1.0)
    assert report.retained_graph_nodes_per_step == pytest.approx(NODES_PER_STEP)
    assert report.growth_bytes_per_step == pytest.approx(LOSS_BYTES)
    assert "losses.append(loss)" in report.likely_cause


def test_accumulating_total_loss_chains_the_graphs():
    # one tensor, whose history gains an AddBackward0 plus the step's 4 nodes every step
    report = detect_retained_graphs(make_loop("total"), steps=20)
    assert report.leaking
    assert report.retained_graph_tensors_per_step == pytest.approx(0.0)  # still one total_loss tensor
    assert report.retained_graph_nodes_per_step == pytest.approx(NODES_PER_STEP + 1)
    assert "total_loss += loss" in report.likely_cause


def test_accumulating_total_loss_with_retained_graphs_keeps_activations():
    report = detect_retained_graphs(make_loop("total_retain"), steps=20)
    assert report.leaking and report.growth_bytes_per_step >= SAVED_BYTES_PER_STEP
    assert "total_loss += loss" in report.likely_cause


@pytest.mark.parametrize("kind", ["item", "detach", "plain", "total_item"])
def test_loops_that_keep_numbers_not_graphs_are_not_flagged(kind):
    report = detect_retained_graphs(make_loop(kind), steps=20)
    assert not report.leaking and report.likely_cause is None
    assert report.growth_bytes_per_step == 0 and report.retained_graph_tensors_per_step == 0
    assert report.retained_graph_nodes_per_step == 0


def test_the_course_training_step_does_not_leak():
    report = detect_retained_graphs(TrainingStep(ClassificationTask(train_samples=256, val_samples=16), 64))
    assert not report.leaking
    assert all(s.graph_tensors == 0 for s in report.samples)


def test_one_jump_is_not_a_trend():
    # a cache filled once at step 10 (and then kept) is not a leak: one rise, then flat
    kept, calls = [], []
    w = torch.ones(8, requires_grad=True)

    def step():
        calls.append(1)
        if len(calls) == 10:
            kept.append((w * 2).sum())

    report = detect_retained_graphs(step, steps=20)
    assert not report.leaking
    assert [s.graph_tensors for s in report.samples] == [0] * 9 + [1] * 11


def test_the_report_keeps_every_sample_and_restores_the_collector():
    frozen_before = gc.get_freeze_count()
    report = detect_retained_graphs(make_loop("append"), steps=8, warmup_steps=2)
    assert gc.get_freeze_count() == frozen_before
    assert isinstance(report, LeakReport) and [s.step for s in report.samples] == list(range(1, 9))
    assert [s.graph_tensors for s in report.samples] == list(range(1, 9))  # one more loss per step
    assert report.device_growth_bytes_per_step is None and report.samples[0].device_allocated_bytes is None
    d = report.to_dict()
    assert d["leaking"] is True and len(d["samples"]) == 8 and d["samples"][0]["step"] == 1


@pytest.mark.parametrize(
    "kwargs,field",
    [({"steps": 4}, "steps"), ({"warmup_steps": -1}, "warmup_steps"), ({"min_growth_share": 0}, "min_growth_share")],
)
def test_bad_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        detect_retained_graphs(lambda: None, **kwargs)


def test_objects_the_caller_froze_stay_frozen():
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        report = detect_retained_graphs(make_loop("append"), steps=8, warmup_steps=2)
        # not unfrozen behind the caller's back (frozen objects that died since have left the count)
        assert 0.9 * frozen <= gc.get_freeze_count() <= frozen
        assert report.leaking and report.retained_graph_tensors_per_step == pytest.approx(1.0)
    finally:
        gc.unfreeze()
