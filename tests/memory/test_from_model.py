"""gpucost_lab.memory.from_model against hand-derived byte counts and PyTorch's documented autocast.

Reference model: Sequential(Linear(64, 128), ReLU(), Linear(128, 10)).
  parameters = (64*128 + 128 + 128*10 + 10) * 4 B = 9,610 * 4 = 38,440 B (fp32)
  gradients  = one grad per parameter, same shape and dtype = 38,440 B
  AdamW state = exp_avg + exp_avg_sq (2 x 38,440 = 76,880 B) plus one `step`
                tensor per parameter tensor: a 0-dim float32 on CPU (4 B) x 4 params = 16 B
What autograd saves in the forward pass (2-D input, so Linear = addmm(bias, x, W.t())):
  addmm saves mat1 (its input) only if mat2 (W.t()) needs grad, and mat2 only if
  mat1 needs grad. So:
  - Linear 1: saves x (B*64*4 B). x does not require grad, so W1.t() is NOT saved.
  - ReLU: saves its output (threshold_backward reads the result), B*128*4 B.
  - Linear 2: saves its input, the same ReLU output storage (counted once), and
    W2.t() because the ReLU output requires grad -- a view of a parameter,
    excluded as static memory.
  activation bytes = B * (64 + 128) * 4 = 768 B per sample.

Mixed precision does not halve what a step saves for backward (chapter 04, section 3): under autocast, ops on
PyTorch's "autocast to float32" list (layer_norm, softmax, the losses, ...) keep float32 outputs, and autocast caches
a 16-bit copy of each weight it casts (PyTorch documentation, "Automatic Mixed Precision package - torch.amp": the
autocast op reference and torch.autocast's cache_enabled). So the bytes saved for backward under bf16 autocast are
more than half of float32's: half is an upper bound on the saving.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from gpucost_lab.memory.from_model import ModelMemory, activation_bytes, measure_model_memory

PARAM_BYTES = (64 * 128 + 128 + 128 * 10 + 10) * 4
ADAMW_STEP_BYTES = 4 * 4  # 4 parameter tensors x a 0-dim float32 `step`
PER_SAMPLE = (64 + 128) * 4


def mlp(dtype: torch.dtype = torch.float32) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dtype)


def batch(n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(n, 64).to(dtype)


def test_mlp_static_and_activation_bytes_adamw() -> None:
    m = measure_model_memory(mlp(), (batch(8),))
    assert m.parameter_bytes == 38_440
    assert m.gradient_bytes == 38_440
    assert m.optimizer_state_bytes == 2 * 38_440 + ADAMW_STEP_BYTES == 76_896
    assert m.static_bytes == 38_440 * 4 + 16
    assert m.batch_size == 8
    assert m.activation_bytes == 8 * 64 * 4 + 8 * 128 * 4 == 6_144
    assert m.activation_bytes_per_sample == 768


def test_adamw_step_is_a_scalar_float32_per_parameter() -> None:
    # The derivation above assumes torch keeps `step` as a 0-dim float32 tensor on CPU.
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(batch(2)).pow(2).mean().backward()
    opt.step()
    steps = [s["step"] for s in opt.state.values()]
    assert len(steps) == 4
    assert all(t.dim() == 0 and t.dtype == torch.float32 for t in steps)


def test_sgd_state_without_and_with_momentum() -> None:
    plain = measure_model_memory(mlp(), (batch(8),), optimizer_factory=lambda ps: torch.optim.SGD(ps, lr=0.1))
    assert plain.optimizer_state_bytes == 0
    assert plain.static_bytes == 2 * 38_440
    # momentum keeps one buffer per parameter, same shape and dtype
    mom = measure_model_memory(
        mlp(), (batch(8),), optimizer_factory=lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)
    )
    assert mom.optimizer_state_bytes == 38_440


def test_activation_bytes_function_matches_derivation() -> None:
    assert activation_bytes(mlp(), batch(8)) == 8 * 768


def test_saved_weights_are_excluded_even_when_input_requires_grad() -> None:
    # With x requiring grad, Linear 1 also saves W1.t(); it is a parameter view, so
    # the count is unchanged -- while x itself still counts.
    x = batch(8).requires_grad_(True)
    assert activation_bytes(mlp(), x) == 8 * 768


def test_saved_tensors_really_include_weight_views() -> None:
    # Guard for the derivation: autograd does save W2.t() (storage of the parameter),
    # so the exclusion rule is what keeps it out of the activation count.
    model = mlp()
    ptrs: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptrs.append(t.untyped_storage().data_ptr())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(batch(8))
    assert model[2].weight.untyped_storage().data_ptr() in ptrs
    assert model[0].weight.untyped_storage().data_ptr() not in ptrs


def test_activation_bytes_double_from_batch_8_to_16() -> None:
    assert activation_bytes(mlp(), batch(16)) == 2 * activation_bytes(mlp(), batch(8))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(min_value=1, max_value=64))
def test_activation_bytes_linear_in_batch(n: int) -> None:
    assert activation_bytes(mlp(), batch(n)) == n * 768


def test_bf16_halves_parameter_and_activation_bytes() -> None:
    fp32 = measure_model_memory(mlp(), (batch(8),))
    bf16 = measure_model_memory(mlp(torch.bfloat16), (batch(8, torch.bfloat16),))
    assert bf16.parameter_bytes == fp32.parameter_bytes // 2 == 19_220
    assert bf16.gradient_bytes == 19_220
    assert bf16.activation_bytes == fp32.activation_bytes // 2 == 8 * (64 + 128) * 2
    # moments follow the parameter dtype; `step` stays float32
    assert bf16.optimizer_state_bytes == 2 * 19_220 + ADAMW_STEP_BYTES


def test_shared_module_counts_parameters_once() -> None:
    # Same Linear(16, 16) applied twice: (256 + 16) * 4 = 1,088 B of parameters.
    # Saved: x (first use, 16 floats/sample) and the first output h (second use, 16
    # floats/sample); W.t() saved in the second use is excluded -> 32 * 4 = 128 B/sample.
    torch.manual_seed(0)
    lin = nn.Linear(16, 16)
    m = measure_model_memory(nn.Sequential(lin, lin), (torch.randn(4, 16),))
    assert m.parameter_bytes == m.gradient_bytes == 1_088
    assert m.activation_bytes == 4 * 128


def test_callers_model_untouched_and_mode_kept() -> None:
    model = mlp().eval()
    before = copy.deepcopy(model.state_dict())
    measure_model_memory(model, (batch(8),))
    assert not model.training
    assert all(p.grad is None for p in model.parameters())
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])


def test_custom_loss_and_explicit_batch_size() -> None:
    calls: list[torch.Size] = []

    def loss_fn(out: torch.Tensor) -> torch.Tensor:
        calls.append(out.shape)
        return out.sum()

    m = measure_model_memory(mlp(), (batch(8),), loss_fn=loss_fn, batch_size=4)
    assert calls == [torch.Size([8, 10])]
    assert m.batch_size == 4
    assert m.activation_bytes_per_sample == 6_144 / 4


def test_ledger_and_to_dict() -> None:
    m = ModelMemory(
        parameter_bytes=38_440,
        gradient_bytes=38_440,
        optimizer_state_bytes=76_896,
        activation_bytes=6_144,
        batch_size=8,
    )
    led = m.ledger(device_gb=80.0, reserve_fraction=0.2, blocks=3)
    assert math.isclose(led.static_gb, 153_776 / 1e9)
    assert math.isclose(led.activation_gb_per_sample, 768 / 1e9)
    assert (led.device_gb, led.reserve_fraction, led.blocks) == (80.0, 0.2, 3)
    default = m.ledger()
    assert (default.device_gb, default.reserve_fraction, default.blocks) == (24.0, 0.10, 10)
    d = m.to_dict()
    assert d["static_bytes"] == 153_776
    assert d["activation_bytes_per_sample"] == 768
    assert d["batch_size"] == 8


def test_measured_ledger_matches_measurement() -> None:
    m = measure_model_memory(mlp(), (batch(8),))
    led = m.ledger()
    assert math.isclose(led.static_gb, (4 * 38_440 + 16) / 1e9)
    assert math.isclose(led.activation_gb_per_sample, 768 / 1e9)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"inputs": ()}, "inputs"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": -3}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"inputs": (torch.tensor(1.0),)}, "batch_size"),
    ],
)
def test_bad_input_raises_naming_field(kwargs: dict, field: str) -> None:
    args = {"inputs": (batch(8),), **kwargs}
    with pytest.raises(ValueError, match=field):
        measure_model_memory(mlp(), args.pop("inputs"), **args)


def test_model_without_trainable_parameters_rejected() -> None:
    frozen = mlp().requires_grad_(False)
    with pytest.raises(ValueError, match="model"):
        measure_model_memory(frozen, (batch(8),))
    with pytest.raises(ValueError, match="model"):
        measure_model_memory(nn.ReLU(), (batch(8),))


def test_buffers_are_static_memory() -> None:
    # BatchNorm1d(128) keeps running_mean and running_var (128 fp32 each, 512 B each) and
    # num_batches_tracked (one int64, 8 B): 1,032 B of buffers, resident like the weights.
    m = measure_model_memory(
        nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128)),
        (batch(8),),
        optimizer_factory=lambda ps: torch.optim.SGD(ps, lr=0.1),
    )
    assert m.buffer_bytes == 2 * 128 * 4 + 8
    assert m.static_bytes == m.parameter_bytes + m.gradient_bytes + 1_032


def test_activation_bytes_needs_inputs() -> None:
    with pytest.raises(ValueError, match="inputs"):
        activation_bytes(mlp())


# --- the whole step's measurement -------------------------------------------------------------------------------------


def test_whole_step_ledger_needs_the_measurement():
    mm = ModelMemory(
        parameter_bytes=40, gradient_bytes=40, optimizer_state_bytes=80, activation_bytes=100, batch_size=10
    )
    with pytest.raises(ValueError, match="backward_working_bytes"):
        mm.ledger(whole_step=True)
    measured = ModelMemory(
        parameter_bytes=4e9,
        gradient_bytes=4e9,
        optimizer_state_bytes=8e9,
        activation_bytes=1e9,
        batch_size=10,
        backward_working_bytes=5e8,
    )
    ledger = measured.ledger(whole_step=True, blocks=4)
    assert (ledger.gradient_gb, ledger.backward_working_gb_per_sample) == pytest.approx((4.0, 0.05))
    assert ledger.static_gb == pytest.approx(16.0)


def test_measured_working_memory_holds_a_weight_gradient_and_grows_with_the_batch():
    """Properties of the measurement: accumulating into resident gradients allocates a new gradient for the weight
    before adding it (so backward holds at least the weight's bytes), and activation gradients grow with the batch."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 64))
    small = measure_model_memory(model, (torch.randn(64, 64),), backward_working=True)
    large = measure_model_memory(model, (torch.randn(1024, 64),), backward_working=True)
    weight_bytes = 512 * 64 * 4
    assert small.backward_working_bytes >= weight_bytes
    # the ReLU's output gradient alone is 512 floats per sample: 960 more samples hold at least that much more
    assert large.backward_working_bytes - small.backward_working_bytes >= 960 * 512 * 4
    assert measure_model_memory(model, (torch.randn(8, 64),)).backward_working_bytes is None


# --- under autocast ---------------------------------------------------------------------------------------------------


def _saved(model, x):
    fp32 = activation_bytes(model, x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = activation_bytes(model, x)
    return fp32, bf16


def test_an_encoder_under_bf16_autocast_saves_more_than_half_its_float32_bytes():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    fp32, bf16 = _saved(nn.Sequential(layer, layer), torch.randn(4, 32, 64))
    assert 0.5 * fp32 < bf16 < fp32


def test_the_cached_bf16_weight_copies_can_outweigh_the_saving_on_a_small_batch():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    fp32, bf16 = _saved(mlp, torch.randn(8, 256))
    # By hand, batch 8. float32 saves the input and the two ReLU outputs (each the next Linear's input too):
    # 4 x (8 x 256 + 2 x 8 x 1024) = 73,728 bytes; its weights are parameters, not activations.
    assert fp32 == 4 * (8 * 256 + 2 * 8 * 1024) == 73_728
    # bf16 saves the same three in 2 bytes, plus the bf16 copies of the weights whose input needs a gradient
    # (the second and third Linear's): 2 x (8 x 256 + 2 x 8 x 1024) + 2 x (1024 x 1024 + 1024 x 10)
    assert bf16 == 2 * (8 * 256 + 2 * 8 * 1024) + 2 * (1024 * 1024 + 1024 * 10) == 2_154_496
