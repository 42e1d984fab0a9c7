"""The small seeded model that chapter 08 serves: a multilayer perceptron on the CPU.

Its weights come from a private ``torch.Generator`` seeded by ``ServeConfig.seed`` (the global random state is left
alone), drawn as torch's own ``nn.Linear`` draws them (uniform in +-1/sqrt(fan_in), weights and biases alike), so a
seed gives the same weights in every process, and the same input the same output. :func:`forward` runs it under
``torch.inference_mode`` (no autograd record: what a server runs).

Outputs are exact for a given batch: rows run together in a dynamic batch agree with the same rows run alone to
float32 rounding, not bit for bit, since a matrix product's kernel may block its sums differently by row count.
"""

from __future__ import annotations

import math

import torch

from gpucost_lab._validate import integer_at_least
from gpucost_lab.serve.config import MAX_ROWS_PER_REQUEST, MAX_SEED, ServeConfig


def build_model(config: ServeConfig) -> torch.nn.Sequential:
    """The model of ``config``: ``layers`` Linear layers from ``input_width`` through ``hidden_width`` to
    ``output_width``, a ReLU between each two, float32, in eval mode, its parameters frozen."""
    widths = [config.input_width] + [config.hidden_width] * (config.layers - 1) + [config.output_width]
    generator = torch.Generator().manual_seed(config.seed)
    modules: list[torch.nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
        layer = torch.nn.utils.skip_init(torch.nn.Linear, fan_in, fan_out)  # no draw from the global generator
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.uniform_(-bound, bound, generator=generator)
        modules.append(layer)
        if index < len(widths) - 2:
            modules.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*modules).eval()
    model.requires_grad_(False)
    return model


def forward(model: torch.nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """``model`` on ``inputs`` (rows x input_width, float32) under inference mode: rows x output_width."""
    with torch.inference_mode():
        return model(inputs)


def example_inputs(config: ServeConfig, rows: int = 1, seed: int = 0) -> torch.Tensor:
    """``rows`` seeded input rows for ``config``'s model, uniform in [-1, 1): the requests a load run sends
    (``.tolist()`` is the JSON body's ``inputs``)."""
    rows = integer_at_least("rows", rows, 1, MAX_ROWS_PER_REQUEST)
    seed = integer_at_least("seed", seed, 0, MAX_SEED)
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(rows, config.input_width, generator=generator) * 2.0 - 1.0
