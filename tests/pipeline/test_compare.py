"""gpucost_lab.pipeline.compare: loader settings compared one change at a time and priced, the profiled loop, and the
decode and step costs (chapter 07), on a counting clock or hand-picked times, against hand computations.
"""

from __future__ import annotations

import math

import pytest
import torch

from gpucost_lab import InputError
from gpucost_lab.measure.compare import Comparison
from gpucost_lab.pipeline.compare import (
    ChangeResult,
    changes_table,
    compare_configs,
    decode_cost,
    one_change_at_a_time,
    profile_loop,
    step_cost,
)
from gpucost_lab.pipeline.loader import DECODE_PASSES, LoaderConfig
from gpucost_lab.timeline import load_trace, phases, steps

from .helpers import counting_clock, hand_contract


def test_decode_and_step_costs_on_a_counting_clock():
    # one read before and one after each repeat: 1 s per repeat, over 4 samples (decode) or 2 steps (step)
    assert decode_cost(4, 3, clock=counting_clock(1.0)).values == (0.25, 0.25, 0.25)
    assert step_cost(8, steps=2, repeats=2, clock=counting_clock(1.0)).values == (0.5, 0.5)


def test_epoch_figures_are_the_same_unit_as_the_contract():
    # an epoch comparison counts the epoch's samples: batches x batch size
    from gpucost_lab.pipeline.compare import epoch_contract

    contract = epoch_contract(LoaderConfig(batch_size=16), batches=3, rounds=5)
    assert contract.units_per_step == 48 and contract.repeats == 5 and contract.measured_steps == 1
    assert DECODE_PASSES >= 1


# ------------------------------------------------------------------------------------------------------------
# one change at a time


def test_a_change_row_prices_the_comparison():
    # every baseline epoch 0.4 s, every candidate epoch 0.1 s: ratio 0.25 exactly, a zero-width interval
    c = Comparison(hand_contract(), hand_contract(), (0.4,) * 4, (0.1,) * 4)
    result = ChangeResult("persistent_workers False -> True", LoaderConfig(num_workers=1), LoaderConfig(), c, 3.6)
    row = result.row()
    assert (row["time_ratio"], row["ci95_low"], row["ci95_high"]) == pytest.approx((0.25, 0.25, 0.25))
    assert row["verdict"] == "faster" and row["cost_verdict"] == "cheaper"
    # 0.4 s for 192 samples at $3.60 an hour ($0.001 a second)
    assert row["baseline_cost_per_sample_usd"] == pytest.approx(0.4 / 192 * 0.001)
    assert row["candidate_cost_per_sample_usd"] == pytest.approx(0.1 / 192 * 0.001)
    assert row["baseline_samples_per_s"] == pytest.approx(480.0)
    assert changes_table([result]).index.tolist() == ["persistent_workers False -> True"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="pinning is inert only without an accelerator")
def test_changes_that_do_nothing_here_are_not_timed():
    results = one_change_at_a_time(LoaderConfig(), [{"pin_memory": True}, {"non_blocking": True}])
    assert [r.comparison for r in results] == [None, None]
    assert results[1].candidate == LoaderConfig(pin_memory=True, non_blocking=True)  # each on top of the last
    row = results[0].row()
    assert row["verdict"] == "no effect on cpu" and row["cost_verdict"] == "same cost" and math.isnan(row["time_ratio"])
    with pytest.raises(InputError) as err:
        one_change_at_a_time(LoaderConfig(), [{"workers": 2}])
    assert err.value.field == "changes"
    with pytest.raises(InputError) as err:
        compare_configs(LoaderConfig(), LoaderConfig(batch_size=8))
    assert err.value.field == "batch_size"


def test_the_profiled_loop_has_a_data_and_a_train_phase_per_step(tmp_path):
    profile_loop(LoaderConfig(batch_size=4), tmp_path / "loop.json.gz", active=3)
    trace = load_trace(tmp_path / "loop.json.gz")
    counts = phases(trace).set_index("name")["count"]
    assert counts["data"] == 3 and counts["train"] == 3 and len(steps(trace)) == 3
