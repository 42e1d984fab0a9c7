"""The ledger's whole step (gpucost_lab.memory.ledger, "The whole step"): backward's working memory and the
gradients that zero_grad() frees between steps, against hand computations, and the measurement that feeds them.

Hand case: static 10 GB of which gradients 4 GB, 4 blocks, 1 GB of activations per sample, backward's working
memory 0.5 GB per sample, keep fraction 0.5 (full recomputation), a 20 GB device with no reserve.
  one microbatch per step (gradients freed), microbatch m: the peak is the larger of
    backward's first block: (10 - 4) + 4/4 + (1 + 0.5) m = 7 + 1.5 m     (all activations, one block's gradients)
    backward's last block:  10 + (1/4 + 0.5) m         = 10 + 0.75 m    (one block's activations, all gradients)
  accumulation (K >= 2, gradients resident): 10 + 1.5 m
  full recomputation: activations held = 1/4 x (3 x 0.5 + 1) = 0.625 per sample
"""

import pytest
import torch
from torch import nn

from gpucost_lab.memory.from_model import ModelMemory, measure_model_memory
from gpucost_lab.memory.ledger import MemoryLedger

HAND = MemoryLedger(
    static_gb=10,
    activation_gb_per_sample=1,
    device_gb=20,
    reserve_fraction=0,
    blocks=4,
    checkpoint_keep_fraction=0.5,
    gradient_gb=4,
    backward_working_gb_per_sample=0.5,
)


def test_peak_of_one_microbatch_is_the_higher_end_of_backward():
    assert HAND.peak_gb(2) == pytest.approx(max(7 + 1.5 * 2, 10 + 0.75 * 2))  # 11.5: the last block binds
    assert HAND.peak_gb(8) == pytest.approx(max(7 + 1.5 * 8, 10 + 0.75 * 8))  # 19: the first block binds


def test_accumulation_keeps_the_gradients_resident():
    assert HAND.peak_gb(2, accumulation_steps=2) == pytest.approx(10 + 1.5 * 2)
    assert HAND.peak_gb(2, accumulation_steps=8) == pytest.approx(10 + 1.5 * 2)


def test_full_recomputation_with_the_whole_step():
    held = 0.25 * (3 * 0.5 + 1)  # 0.625 GB per sample
    assert HAND.peak_gb(4, recompute="full") == pytest.approx(max(7 + (held + 0.5) * 4, 10 + 0.75 * 4))  # 11.5
    assert HAND.peak_gb(4, recompute="full", accumulation_steps=4) == pytest.approx(10 + (held + 0.5) * 4)  # 14.5


def test_largest_microbatch_and_accumulation():
    # one microbatch: 7 + 1.5 m <= 20 -> m <= 8.67; 10 + 0.75 m <= 20 -> m <= 13.3: 8
    assert HAND.max_microbatch() == 8
    # gradients resident: 10 + 1.5 m <= 20 -> 6
    assert HAND.max_microbatch(accumulation_steps=2) == 6
    assert HAND.smallest_accumulation(8) == 1
    assert HAND.smallest_accumulation(12) == 2  # 12 > 8, then microbatches of at most 6
    assert HAND.smallest_accumulation(13) == 3
    r = HAND.at_global_batch(12)
    assert (r.accumulation_steps, r.microbatch, r.fits) == (2, 6, True)
    assert r.peak_gb == pytest.approx(19)


def test_rows_show_the_forward_without_gradients_and_the_backward_peak():
    r = HAND.at(2)
    assert [b.total_gb for b in r.blocks] == pytest.approx([6 + 0.5 * k for k in range(1, 5)])  # static - gradients
    assert r.backward.total_gb == pytest.approx(11.5) and r.rows[-1] is r.backward
    assert list(r.table()["phase"]) == ["forward"] * 4 + ["backward"]
    over = HAND.at(9)  # 7 + 13.5 = 20.5 > 20: only backward's row is over
    assert not over.fits and over.first_over_budget is over.backward
    assert over.to_dict()["backward"]["total_gb"] == pytest.approx(20.5)


def test_defaults_have_no_backward_row():
    plain = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34)
    assert plain.at(32).backward is None and "backward" not in plain.at(32).to_dict()


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(gradient_gb=-1), "gradient_gb"),
        (dict(gradient_gb=11), "gradient_gb"),
        (dict(backward_working_gb_per_sample=-0.1), "backward_working_gb_per_sample"),
    ],
)
def test_bad_whole_step_inputs_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        MemoryLedger(static_gb=10, activation_gb_per_sample=1, **kwargs)


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
