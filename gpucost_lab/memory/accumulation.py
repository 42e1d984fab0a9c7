"""What gradient accumulation keeps and what it changes, measured on a real model (chapter 04, section 3).

Accumulating K microbatches of B/K samples computes the same gradient as one batch of B only when three things
hold: each microbatch's loss is scaled by 1/K (a mean loss over B/K samples, summed K times, is K times the mean
over B); no layer computes statistics over the batch (``BatchNorm`` in training mode normalizes each microbatch
by that microbatch's own mean and variance: PyTorch documentation, ``torch.nn.BatchNorm1d``, "the mean and
standard-deviation are calculated per-dimension over the mini-batches"); and the floating-point sums are allowed
to come out in a different order, which changes their rounding. :func:`compare_accumulation` measures the
gradient either way on a copy of the model, so a chapter can show each effect instead of asserting it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from gpucost_lab._validate import InputError, integer_at_least


@dataclass(frozen=True)
class AccumulationCheck:
    """One batch's gradient against K accumulated microbatches' (the parameters' gradients joined)."""

    accumulation_steps: int
    scaled: bool  # each microbatch's loss divided by K
    max_abs_difference: float  # max |accumulated - one batch| over every gradient element
    relative_difference: float  # ||accumulated - one batch|| / ||one batch|| (2-norms)
    norm_ratio: float  # ||accumulated|| / ||one batch||: K when the loss is not scaled and nothing else differs


def _gradient(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])


def compare_accumulation(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    accumulation_steps: int = 2,
    *,
    scale_loss: bool = True,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = nn.functional.cross_entropy,
) -> AccumulationCheck:
    """The gradient of ``loss_fn(model(x), y)`` on the whole batch against the sum over ``accumulation_steps``
    equal microbatches (each loss divided by the steps when ``scale_loss``), each on its own deep copy of
    ``model`` in training mode. ``model`` itself is not changed."""
    if not isinstance(model, nn.Module):
        raise InputError("model", f"model must be a torch.nn.Module, got {type(model).__name__}")
    k = integer_at_least("accumulation_steps", accumulation_steps, 1)
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or len(x) != len(y):
        raise InputError("x", "x and y must be tensors with the same number of samples")
    if len(x) % k:
        raise InputError("accumulation_steps", f"accumulation_steps must divide the batch of {len(x)} samples, got {k}")
    whole, parts = copy.deepcopy(model).train(), copy.deepcopy(model).train()
    loss_fn(whole(x), y).backward()
    for xs, ys in zip(x.chunk(k), y.chunk(k)):
        loss = loss_fn(parts(xs), ys)
        (loss / k if scale_loss else loss).backward()
    one, acc = _gradient(whole).double(), _gradient(parts).double()
    norm = float(one.norm())
    return AccumulationCheck(
        k,
        bool(scale_loss),
        float((acc - one).abs().max()),
        float((acc - one).norm()) / norm if norm else float("nan"),
        float(acc.norm()) / norm if norm else float("nan"),
    )


__all__ = ["AccumulationCheck", "compare_accumulation"]
