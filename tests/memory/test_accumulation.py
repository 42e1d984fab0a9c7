"""Gradient accumulation against one batch (chapter 04, section 3): what it keeps and what it does not.

Hand reasoning behind each assertion: with equal microbatches, the mean loss over B is the average of the K
microbatch means, so its gradient is the sum of the microbatch gradients divided by K: exactly the same function
(float64 shows it to rounding), computed in another order (float32 shows the rounding); without the 1/K the sum is
K times the gradient; BatchNorm in training mode normalizes each microbatch by its own statistics, a different
function (PyTorch documentation, torch.nn.BatchNorm1d: statistics "calculated per-dimension over the mini-batches").
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gpucost_lab import InputError
from gpucost_lab.memory.accumulation import compare_accumulation


def _mlp(batch_norm: bool = False) -> nn.Module:
    torch.manual_seed(0)
    middle = [nn.BatchNorm1d(32)] if batch_norm else []
    return nn.Sequential(nn.Linear(16, 32), *middle, nn.ReLU(), nn.Linear(32, 5))


def _batch(n: int = 60):
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 16, generator=g), torch.randint(0, 5, (n,), generator=g)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_scaled_accumulation_is_the_same_gradient_to_float64_rounding(k):
    x, y = _batch()
    check = compare_accumulation(_mlp().double(), x.double(), y, k)
    assert check.relative_difference < 1e-12 and check.norm_ratio == pytest.approx(1.0, abs=1e-12)


def test_in_float32_the_summation_order_changes_the_rounding_but_not_more():
    x, y = _batch()
    check = compare_accumulation(_mlp(), x, y, 2)
    assert 0 < check.relative_difference < 1e-5  # not bit-identical: the sums run in another order


@pytest.mark.parametrize("k", [2, 3])
def test_without_the_one_over_k_the_gradient_is_k_times_larger(k):
    x, y = _batch()
    check = compare_accumulation(_mlp().double(), x.double(), y, k, scale_loss=False)
    assert check.norm_ratio == pytest.approx(k, rel=1e-12)
    assert check.relative_difference == pytest.approx(k - 1, rel=1e-12)  # ||k g - g|| / ||g||


def test_batch_norm_follows_the_microbatch():
    x, y = _batch()
    check = compare_accumulation(_mlp(batch_norm=True).double(), x.double(), y, 2)
    assert check.relative_difference > 1e-2  # not rounding: a different function of the batch


def test_the_model_is_left_alone_and_bad_input_is_named():
    model, (x, y) = _mlp(), _batch()
    before = [p.detach().clone() for p in model.parameters()]
    compare_accumulation(model, x, y, 2)
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    for kwargs, field in (({"accumulation_steps": 7}, "accumulation_steps"), ({"accumulation_steps": 0}, None)):
        with pytest.raises(InputError) as err:
            compare_accumulation(model, x, y, **kwargs)
        assert field is None or err.value.field == field
    with pytest.raises(InputError) as err:
        compare_accumulation("model", x, y)
    assert err.value.field == "model"
