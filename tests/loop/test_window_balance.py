"""A profile of one slice of the nightly loop (chapter 05, "Profile the run you pay for"): window_balance against
plain sums over the loop's history and against the whole run's true balance."""

from __future__ import annotations

import pytest

from gpucost_lab import InputError
from gpucost_lab.loop.phases import PhaseTimer
from gpucost_lab.loop.simulated import SimulatedTrainingLoop, run_instrumented


@pytest.fixture(scope="module")
def fixed():
    loop = SimulatedTrainingLoop("data_stall", steps=1100).with_lever("more_loader_workers")
    run_instrumented(loop, PhaseTimer(clock=loop.clock))
    return loop


def test_the_whole_run_as_a_window_is_the_true_balance(fixed):
    whole = fixed.window_balance(0.0, fixed.clock())
    truth = fixed.reference_balance()
    assert list(whole["phase"]) == list(truth["phase"])
    assert whole["seconds"].to_numpy() == pytest.approx(truth["seconds"].to_numpy(), rel=1e-12)
    assert list(whole["calls"]) == list(truth["calls"])


def test_a_window_inside_the_checkpoint_blames_the_checkpoint_alone(fixed):
    h = fixed.history
    save = h[h["phase"] == "checkpoint"].iloc[0]  # after step 1000
    table = fixed.window_balance(save["start_s"] + 10, save["start_s"] + 70)
    assert list(table["phase"]) == ["checkpoint"] and table["share"].iloc[0] == pytest.approx(1.0)
    assert table["seconds"].iloc[0] == pytest.approx(60.0)


def test_a_window_across_phases_sums_the_clipped_calls_by_hand(fixed):
    h = fixed.history
    lo, hi = 500.0, 800.0
    by_hand = {}
    for row in h.itertuples():
        inside = min(row.end_s, hi) - max(row.start_s, lo)
        if inside > 0:
            by_hand[row.phase] = by_hand.get(row.phase, 0.0) + inside
    table = fixed.window_balance(lo, hi).set_index("phase")
    assert set(table.index) == set(by_hand)
    for phase, seconds in by_hand.items():
        assert table.loc[phase, "seconds"] == pytest.approx(seconds)
    assert table["share"].sum() == pytest.approx(1.0)


@pytest.mark.parametrize(("lo", "hi"), [(-1.0, 10.0), (10.0, 10.0), (0.0, 1e12), (float("nan"), 1.0), ("0", 1.0)])
def test_a_window_outside_the_run_is_refused(fixed, lo, hi):
    with pytest.raises(InputError) as err:
        fixed.window_balance(lo, hi)
    assert err.value.field == "end_s"
