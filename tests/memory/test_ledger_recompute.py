"""Activation checkpointing in the memory ledger, against hand computations (chapter 04).

Course ledger: static 3.2 GB, 0.34 GB/sample, 24 GB device, 10% reserve (budget 21.6 GB), 10 blocks,
each block keeping an input of 0.1 of its activations.

At microbatch 60: activations per block = 0.34 x 60 / 10 = 2.04 GB.
  forward, after block k: k kept inputs = k x 0.1 x 2.04 = 0.204 k GB (block 10: 2.04 GB)
  backward peak (recompute the last block): 2.04 x (9 x 0.1 + 1) = 2.04 x 1.9 = 3.876 GB
  peak = 3.2 + 3.876 = 7.076 GB <= 21.6, fits; headroom 21.6 - 7.076 = 14.524 GB
  saved against no checkpointing: 23.6 - 7.076 = 16.524 GB
Largest microbatch: peak activations per sample = 0.034 x 1.9 = 0.0646 GB,
  floor((21.6 - 3.2) / 0.0646) = floor(284.83) = 284  (3.2 + 0.0646 x 284 = 21.5464; x 285 = 21.611 > 21.6).
Recompute cost: one extra forward, a forward being 1/3 of forward+backward: step time x 4/3.
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.memory.figures import RECOMPUTE_STEP_TIME_FACTOR
from gpucost_lab.memory.ledger import MemoryLedger

COURSE = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.10, blocks=10)


def test_default_keep_fraction_is_a_tenth():
    assert COURSE.checkpoint_keep_fraction == 0.1


def test_course_peak_at_60_with_checkpointing():
    r = COURSE.at(60, checkpointing=True)
    assert r.checkpointing is True
    assert r.peak_gb == pytest.approx(7.076)
    assert COURSE.peak_gb(60, checkpointing=True) == pytest.approx(7.076)
    assert r.fits is True
    assert r.headroom_gb == pytest.approx(14.524)
    assert r.checkpointing_saves_gb == pytest.approx(16.524)


def test_course_rows_at_60_with_checkpointing():
    r = COURSE.at(60, checkpointing=True)
    assert [b.block for b in r.blocks] == list(range(1, 11))
    assert [b.activations_gb for b in r.blocks] == pytest.approx([0.204 * k for k in range(1, 11)])
    assert [b.total_gb for b in r.blocks] == pytest.approx([3.2 + 0.204 * k for k in range(1, 11)])
    assert r.recompute.block == 10
    assert r.recompute.activations_gb == pytest.approx(3.876)
    assert r.recompute.total_gb == pytest.approx(7.076)
    assert {b.state for b in r.rows} == {"fits"}
    table = r.table()
    assert list(table["phase"]) == ["forward"] * 10 + ["backward recompute"]
    assert table["total_gb"].iloc[-1] == pytest.approx(7.076)
    assert list(table.index) == [*range(1, 11), 10]  # the recompute row is block 10's, recomputed in backward


def test_course_max_microbatch_with_checkpointing():
    assert COURSE.max_microbatch(checkpointing=True) == 284
    assert COURSE.at(284, checkpointing=True).fits  # 3.2 + 0.0646 x 284 = 21.5464
    assert not COURSE.at(285, checkpointing=True).fits  # 3.2 + 0.0646 x 285 = 21.611
    assert COURSE.at(60, checkpointing=True).max_microbatch == 284


def test_without_checkpointing_nothing_changes():
    r = COURSE.at(60)
    assert r.peak_gb == pytest.approx(23.6)  # 3.2 + 0.34 x 60
    assert r.max_microbatch == 54 and COURSE.max_microbatch() == 54
    assert r.checkpointing is False and r.recompute is None
    assert r.recompute_step_time_factor == 1.0
    assert "checkpointing" not in r.to_dict() and "recompute" not in r.to_dict()  # CLI keys unchanged
    assert list(r.table().reset_index().columns) == ["block", "activations_gb", "total_gb", "state"]


def test_recompute_costs_a_third_more_step_time():
    assert RECOMPUTE_STEP_TIME_FACTOR == pytest.approx(1 + 1 / 3)
    assert COURSE.at(60, checkpointing=True).recompute_step_time_factor == pytest.approx(4 / 3)


def test_recompute_crossing_is_the_first_over_budget_row():
    # microbatch 300: per block 0.34 x 300 / 10 = 10.2 GB; forward block 10 holds 3.2 + 10.2 = 13.4 (fits),
    # the recompute holds 3.2 + 10.2 x 1.9 = 22.58 > 21.6
    r = COURSE.at(300, checkpointing=True)
    assert not r.fits
    assert {b.state for b in r.blocks} == {"fits"}
    assert r.first_over_budget is r.recompute
    assert r.recompute.total_gb == pytest.approx(22.58)


def test_to_dict_with_checkpointing_carries_the_new_keys():
    d = COURSE.at(60, checkpointing=True).to_dict()
    assert d["checkpointing"] is True
    assert d["recompute_step_time_factor"] == pytest.approx(4 / 3)
    assert d["recompute"]["total_gb"] == pytest.approx(7.076)
    assert d["checkpointing_saves_gb"] == pytest.approx(16.524)


def test_one_block_saves_nothing():
    # a single block is recomputed whole: (1 - 1) x keep + 1 = 1 block, as without checkpointing
    ledger = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, blocks=1)
    assert ledger.peak_gb(60, checkpointing=True) == pytest.approx(23.6)


@pytest.mark.parametrize("keep", [0.0, -0.1, 1.5, math.nan])
def test_bad_keep_fraction_names_the_field(keep):
    with pytest.raises(ValueError, match="checkpoint_keep_fraction"):
        MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, checkpoint_keep_fraction=keep)


def test_keep_fraction_one_is_allowed_and_saves_nothing():
    # keep 1: (10 - 1) x 1 + 1 = 10 blocks, the same as holding every block
    ledger = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, checkpoint_keep_fraction=1.0)
    assert ledger.peak_gb(60, checkpointing=True) == pytest.approx(ledger.peak_gb(60))


ledgers = st.builds(
    MemoryLedger,
    static_gb=st.floats(0, 100),
    activation_gb_per_sample=st.floats(1e-3, 10),
    device_gb=st.floats(1, 200),
    reserve_fraction=st.floats(0, 0.9),
    blocks=st.integers(1, 64),
    checkpoint_keep_fraction=st.floats(1e-3, 1.0),
)


@given(ledgers)
def test_max_microbatch_with_checkpointing_is_the_largest_that_fits(ledger):
    m = ledger.max_microbatch(checkpointing=True)
    if m >= 1:
        assert ledger.at(m, checkpointing=True).fits
    assert not ledger.at(m + 1, checkpointing=True).fits
    assert m >= ledger.max_microbatch()  # checkpointing never lowers the largest microbatch


@given(ledgers, st.integers(1, 500))
def test_checkpointing_rows_grow_to_the_peak_and_never_exceed_the_plain_peak(ledger, microbatch):
    r = ledger.at(microbatch, checkpointing=True)
    totals = [b.total_gb for b in r.rows]
    # keep <= 1 so blocks x keep <= (blocks - 1) x keep + 1: memory only grows (up to float rounding)
    assert all(a <= b + 1e-9 for a, b in zip(totals, totals[1:]))
    assert totals[-1] == pytest.approx(r.peak_gb)
    assert r.peak_gb <= ledger.peak_gb(microbatch) * (1 + 1e-12)
    assert r.headroom_gb == pytest.approx(r.budget_gb - r.peak_gb)
    assert r.fits == (r.first_over_budget is None)
