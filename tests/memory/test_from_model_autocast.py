"""Mixed precision does not halve what a step saves for backward (chapter 04, section 3).

Under autocast, ops on PyTorch's "autocast to float32" list (layer_norm, softmax, the losses, ...) keep float32
outputs, and autocast caches a 16-bit copy of each weight it casts (PyTorch documentation, "Automatic Mixed
Precision package - torch.amp": the autocast op reference and torch.autocast's cache_enabled). So the bytes
saved for backward under bf16 autocast are more than half of float32's: half is an upper bound on the saving.
"""

from __future__ import annotations

import torch
from torch import nn

from gpucost_lab.memory.from_model import activation_bytes


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
