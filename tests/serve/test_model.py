"""The served model: seeded, deterministic, the architecture the config names (checked against numpy by hand)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost_lab._validate import InputError
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.model import build_model, example_inputs, forward

SMALL = ServeConfig(input_width=8, hidden_width=16, layers=3, output_width=5, seed=7)


def _weights(model):
    return [t.clone() for t in model.state_dict().values()]


def test_same_seed_same_weights_other_seed_other_weights():
    a, b = _weights(build_model(SMALL)), _weights(build_model(SMALL))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    c = _weights(build_model(ServeConfig(**{**SMALL.to_dict(), "seed": 8})))
    assert not any(torch.equal(x, y) for x, y in zip(a, c))


def test_global_random_state_is_left_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_model(SMALL)
    assert torch.equal(torch.rand(3), expected)


def test_forward_matches_a_hand_written_mlp():
    # relu(relu(x W1^T + b1) W2^T + b2) W3^T + b3, in float64 numpy from the model's own weights
    model = build_model(SMALL)
    w1, b1, w2, b2, w3, b3 = (t.double().numpy() for t in model.state_dict().values())
    x = example_inputs(SMALL, rows=4, seed=1)
    h = np.maximum(x.double().numpy() @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    expected = h @ w3.T + b3
    got = forward(model, x)
    assert got.shape == (4, 5) and got.dtype == torch.float32
    np.testing.assert_allclose(got.double().numpy(), expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=15)
@given(
    input_width=st.integers(1, 12),
    hidden_width=st.integers(1, 12),
    layers=st.integers(1, 4),
    output_width=st.integers(1, 12),
    rows=st.integers(1, 5),
    seed=st.integers(0, 2**63 - 1),
)
def test_shape_init_bound_and_determinism(input_width, hidden_width, layers, output_width, rows, seed):
    config = ServeConfig(
        input_width=input_width, hidden_width=hidden_width, layers=layers, output_width=output_width, seed=seed
    )
    model = build_model(config)
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    assert len(linears) == layers
    for layer in linears:  # nn.Linear's own init range: uniform in +-1/sqrt(fan_in)
        bound = 1 / math.sqrt(layer.in_features)
        assert float(layer.weight.abs().max()) <= bound and float(layer.bias.abs().max()) <= bound
    x = example_inputs(config, rows=rows, seed=seed % 1000)
    assert x.shape == (rows, input_width) and float(x.abs().max()) <= 1.0
    out = forward(model, x)
    assert out.shape == (rows, output_width)
    assert torch.equal(out, forward(build_model(config), x.clone()))
    assert not out.requires_grad


def test_example_inputs_checks_rows():
    with pytest.raises(InputError) as caught:
        example_inputs(SMALL, rows=0)
    assert caught.value.field == "rows"
