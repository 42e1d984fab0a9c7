"""gpucost_lab.memory.ledger (MemoryLedger) against hand computations on the course's example (chapter 04).

The course ledger (tests/memory/helpers.py): static 3.2 GB, 0.34 GB of activations per sample, 24 GB device,
10% reserve, 10 blocks: budget = 24 x 0.9 = 21.6 GB; at microbatch 32 each block adds 0.34 x 32 / 10 = 1.088 GB,
so the blocks hold 1.088, 2.176, ..., 10.88 GB and the peak is 3.2 + 10.88 = 14.08 GB (headroom 7.52 GB);
the largest microbatch that fits is floor((21.6 - 3.2) / 0.34) = floor(54.1) = 54.

Activation checkpointing, each block keeping an input of 0.1 of its activations. At microbatch 60: activations
per block = 0.34 x 60 / 10 = 2.04 GB.
  forward, after block k: k kept inputs = k x 0.1 x 2.04 = 0.204 k GB (block 10: 2.04 GB)
  backward peak (recompute the last block): 2.04 x (9 x 0.1 + 1) = 2.04 x 1.9 = 3.876 GB
  peak = 3.2 + 3.876 = 7.076 GB <= 21.6, fits; headroom 21.6 - 7.076 = 14.524 GB
  saved against no checkpointing: 23.6 - 7.076 = 16.524 GB
Largest microbatch: peak activations per sample = 0.034 x 1.9 = 0.0646 GB,
  floor((21.6 - 3.2) / 0.0646) = floor(284.83) = 284  (3.2 + 0.0646 x 284 = 21.5464; x 285 = 21.611 > 21.6).
Recompute cost: one extra forward, a forward being 1/3 of forward+backward: step time x 4/3.

The other knobs, with the stated figures of gpucost_lab.memory.figures: activations 4 bytes/element in fp32, 2
under mixed precision (x 0.5); selective recomputation keeps 0.3 of each block for +2.7% compute; full
recomputation keeps 0.1, step x 4/3; accumulation: step x (1 + (K - 1) x 0.15).

The whole step ("The whole step" in gpucost_lab.memory.ledger): backward's working memory and the gradients that
zero_grad() frees between steps. Hand case: static 10 GB of which gradients 4 GB, 4 blocks, 1 GB of activations per
sample, backward's working memory 0.5 GB per sample, keep fraction 0.5 (full recomputation), a 20 GB device with no
reserve.
  one microbatch per step (gradients freed), microbatch m: the peak is the larger of
    backward's first block: (10 - 4) + 4/4 + (1 + 0.5) m = 7 + 1.5 m     (all activations, one block's gradients)
    backward's last block:  10 + (1/4 + 0.5) m         = 10 + 0.75 m    (one block's activations, all gradients)
  accumulation (K >= 2, gradients resident): 10 + 1.5 m
  full recomputation: activations held = 1/4 x (3 x 0.5 + 1) = 0.625 per sample
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.memory.figures import RECOMPUTE_STEP_TIME_FACTOR, activation_scale
from gpucost_lab.memory.ledger import MemoryLedger

from .helpers import COURSE


def test_course_budget_peak_and_max_microbatch():
    r = COURSE.at(32)
    assert r.budget_gb == pytest.approx(21.6)
    assert r.peak_gb == pytest.approx(14.08)
    assert r.headroom_gb == pytest.approx(7.52)
    assert r.fits is True
    assert r.max_microbatch == 54


def test_course_ledger_table_at_32():
    table = COURSE.at(32).table()
    expected_activations = [1.088 * k for k in range(1, 11)]  # 1.088, 2.176, ... 10.88
    # indexed by block, 1 to 10, as the chapter names them ("block 10"), not by a 0-based row number
    assert table.index.name == "block" and list(table.index) == list(range(1, 11))
    assert list(table.columns) == ["activations_gb", "total_gb", "state"]
    assert table.loc[10, "total_gb"] == pytest.approx(3.2 + 10.88)  # the last block holds the peak, 14.08 GB
    assert list(table["activations_gb"]) == pytest.approx(expected_activations)
    assert list(table["total_gb"]) == pytest.approx([3.2 + a for a in expected_activations])
    assert set(table["state"]) == {"fits"}


def test_54_fits_and_55_does_not():
    assert COURSE.at(54).fits  # 3.2 + 0.34 x 54 = 21.56 <= 21.6
    r = COURSE.at(55)  # 3.2 + 0.34 x 55 = 21.90 > 21.6
    assert not r.fits
    assert r.headroom_gb == pytest.approx(-0.3)


def test_only_the_last_block_goes_over_at_60():
    # each block adds 0.34 x 60 / 10 = 2.04 GB: block 9 holds 3.2 + 18.36 = 21.56 (fits),
    # block 10 holds 3.2 + 20.4 = 23.6 (over the 21.6 budget)
    states = list(COURSE.at(60).table()["state"])
    assert states == ["fits"] * 9 + ["over budget"]


def test_static_memory_over_budget_leaves_no_microbatch():
    ledger = MemoryLedger(static_gb=22.0, activation_gb_per_sample=0.1, device_gb=24, reserve_fraction=0.1)
    assert ledger.max_microbatch() == 0
    assert not ledger.at(1).fits


def test_exact_budget_edge_counts_as_fitting():
    # 2 + 0.5 x 18 = 11 = 11 GB budget exactly (device 11 GB, no reserve)
    ledger = MemoryLedger(static_gb=2.0, activation_gb_per_sample=0.5, device_gb=11, reserve_fraction=0.0)
    assert ledger.max_microbatch() == 18
    assert ledger.at(18).fits


@pytest.mark.parametrize(
    "field,value",
    [
        ("static_gb", -1.0),
        ("activation_gb_per_sample", 0.0),
        ("device_gb", 0.0),
        ("device_gb", math.inf),
        ("reserve_fraction", 1.0),
        ("reserve_fraction", -0.1),
        ("blocks", 0),
        ("static_gb", math.nan),
    ],
)
def test_bad_parameters_name_the_field(field, value):
    kwargs = dict(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.1, blocks=10)
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        MemoryLedger(**kwargs)


@pytest.mark.parametrize("microbatch", [0, -3, 2.5])
def test_bad_microbatch(microbatch):
    with pytest.raises(ValueError, match="microbatch"):
        COURSE.at(microbatch)


ledgers = st.builds(
    MemoryLedger,
    static_gb=st.floats(0, 100),
    activation_gb_per_sample=st.floats(1e-3, 10),
    device_gb=st.floats(1, 200),
    reserve_fraction=st.floats(0, 0.9),
    blocks=st.integers(1, 64),
)


@given(ledgers)
def test_max_microbatch_is_the_largest_that_fits(ledger):
    m = ledger.max_microbatch()
    if m >= 1:
        assert ledger.at(m).fits
    assert not ledger.at(m + 1).fits


@given(ledgers, st.integers(1, 500))
def test_blocks_grow_to_the_peak(ledger, microbatch):
    r = ledger.at(microbatch)
    totals = [b.total_gb for b in r.blocks]
    assert totals == sorted(totals)
    assert totals[-1] == pytest.approx(r.peak_gb)
    assert r.headroom_gb == pytest.approx(r.budget_gb - r.peak_gb)


# --- activation checkpointing -----------------------------------------------------------------------------------------


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


checkpointed_ledgers = st.builds(
    MemoryLedger,
    static_gb=st.floats(0, 100),
    activation_gb_per_sample=st.floats(1e-3, 10),
    device_gb=st.floats(1, 200),
    reserve_fraction=st.floats(0, 0.9),
    blocks=st.integers(1, 64),
    checkpoint_keep_fraction=st.floats(1e-3, 1.0),
)


@given(checkpointed_ledgers)
def test_max_microbatch_with_checkpointing_is_the_largest_that_fits(ledger):
    m = ledger.max_microbatch(checkpointing=True)
    if m >= 1:
        assert ledger.at(m, checkpointing=True).fits
    assert not ledger.at(m + 1, checkpointing=True).fits
    assert m >= ledger.max_microbatch()  # checkpointing never lowers the largest microbatch


@given(checkpointed_ledgers, st.integers(1, 500))
def test_checkpointing_rows_grow_to_the_peak_and_never_exceed_the_plain_peak(ledger, microbatch):
    r = ledger.at(microbatch, checkpointing=True)
    totals = [b.total_gb for b in r.rows]
    # keep <= 1 so blocks x keep <= (blocks - 1) x keep + 1: memory only grows (up to float rounding)
    assert all(a <= b + 1e-9 for a, b in zip(totals, totals[1:]))
    assert totals[-1] == pytest.approx(r.peak_gb)
    assert r.peak_gb <= ledger.peak_gb(microbatch) * (1 + 1e-12)
    assert r.headroom_gb == pytest.approx(r.budget_gb - r.peak_gb)
    assert r.fits == (r.first_over_budget is None)


# --- from a parameter count; the defaults leave the course ledger exactly as it was -----------------------------------


def test_200_million_parameters_with_adamw_is_the_course_ledger():
    # 200e6 x 16 B = 3.2e9 B = 3.2 GB: the course's static memory
    ledger = MemoryLedger.from_parameters(200_000_000, 0.34)
    assert ledger.static_gb == pytest.approx(3.2)
    assert ledger.at(32).peak_gb == pytest.approx(14.08)
    assert ledger.max_microbatch() == 54
    sgd = MemoryLedger.from_parameters(200_000_000, 0.34, optimizer="sgd")  # 200e6 x 8 B = 1.6 GB
    assert sgd.static_gb == pytest.approx(1.6)
    assert sgd.max_microbatch() == 58  # floor((21.6 - 1.6) / 0.34) = floor(58.8)


def test_defaults_keep_the_course_figures_exactly():
    r = COURSE.at(32)
    assert r.budget_gb == 24 * (1 - 0.10)
    assert r.peak_gb == 3.2 + 0.34 * 32  # the same float expression as before the knobs
    assert r.headroom_gb == r.budget_gb - (3.2 + 0.34 * 32)
    assert r.max_microbatch == 54 and r.fits
    assert [b.activations_gb for b in r.blocks] == [0.34 * 32 * k / 10 for k in range(1, 11)]
    assert (r.accumulation_steps, r.global_batch, r.step_time_factor) == (1, 32, 1.0)
    assert (r.recomputation, r.precision, r.checkpointing, r.recompute) == ("none", "fp32", False, None)
    assert COURSE.with_precision("fp32") == COURSE


# --- precision --------------------------------------------------------------------------------------------------------


def test_mixed_precision_halves_the_activations_not_the_static_memory():
    assert activation_scale("fp32", "bf16-mixed") == 0.5 and activation_scale("bf16-mixed", "fp32") == 2.0
    bf16 = COURSE.with_precision("bf16-mixed")
    assert bf16.precision == "bf16-mixed" and bf16.static_gb == 3.2
    assert bf16.activation_gb_per_sample == pytest.approx(0.17)  # 0.34 x 2 / 4
    assert bf16.at(60).peak_gb == pytest.approx(13.4)  # 3.2 + 0.17 x 60
    assert bf16.max_microbatch() == 108  # floor(18.4 / 0.17) = floor(108.2)
    assert bf16.with_precision("fp32").activation_gb_per_sample == pytest.approx(0.34)
    assert bf16.at(8).precision == "bf16-mixed"


# --- gradient accumulation --------------------------------------------------------------------------------------------


def test_accumulation_memory_follows_the_microbatch():
    plain, accumulated = COURSE.at(60), COURSE.at(60, accumulation_steps=2)
    assert accumulated.peak_gb == plain.peak_gb == pytest.approx(23.6)  # 3.2 + 0.34 x 60, whatever K
    assert accumulated.global_batch == 120  # 60 x 2
    assert accumulated.step_time_factor == pytest.approx(1.15)  # 1 + (2 - 1) x 0.15
    half = COURSE.at(30, accumulation_steps=2)  # the global batch of 60 as two microbatches of 30
    assert half.peak_gb == pytest.approx(13.4) and half.fits and half.global_batch == 60


def test_global_batch_takes_the_smallest_accumulation_that_fits():
    # 60 does not fit (54 does): K = ceil(60 / 54) = 2, microbatches of 30, peak 3.2 + 10.2 = 13.4
    r = COURSE.at_global_batch(60)
    assert (r.accumulation_steps, r.microbatch, r.global_batch) == (2, 30, 60)
    assert r.peak_gb == pytest.approx(13.4) and r.fits
    assert r.step_time_factor == pytest.approx(1.15)
    # 200: K = ceil(200 / 54) = 4 (3 x 54 = 162 < 200), microbatches of 50, peak 3.2 + 17 = 20.2
    r = COURSE.at_global_batch(200)
    assert (r.accumulation_steps, r.microbatch) == (4, 50) and r.peak_gb == pytest.approx(20.2)
    assert COURSE.smallest_accumulation(54) == 1 and COURSE.smallest_accumulation(55) == 2


def test_global_batch_with_uneven_microbatches():
    # 60 in 7 microbatches: ceil(60 / 7) = 9 (six of 9 and one of 6); peak 3.2 + 0.34 x 9 = 6.26
    r = COURSE.at_global_batch(60, accumulation_steps=7)
    assert (r.microbatch, r.global_batch, r.accumulation_steps) == (9, 60, 7)
    assert r.peak_gb == pytest.approx(6.26)
    assert r.step_time_factor == pytest.approx(1.9)  # 1 + 6 x 0.15


def test_global_batch_when_nothing_fits():
    # static 22 GB > 21.6 GB budget: no microbatch fits; reported at microbatches of 1, not fitting
    ledger = MemoryLedger(static_gb=22.0, activation_gb_per_sample=0.1)
    assert ledger.smallest_accumulation(60) is None
    r = ledger.at_global_batch(60)
    assert (r.accumulation_steps, r.microbatch, r.fits) == (60, 1, False)


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda: COURSE.at(8, accumulation_steps=0), "accumulation_steps"),
        (lambda: COURSE.at_global_batch(60, accumulation_steps=61), "accumulation_steps"),
        (lambda: COURSE.at_global_batch(0), "global_batch"),
        (lambda: COURSE.at(8, recompute="partial"), "recompute"),
        (lambda: COURSE.at(8, True, recompute="selective"), "recompute"),
        (lambda: COURSE.with_precision("fp8"), "precision"),
        (lambda: MemoryLedger(3.2, 0.34, precision="int8"), "precision"),
        (lambda: MemoryLedger(3.2, 0.34, selective_saving_fraction=1.0), "selective_saving_fraction"),
        (lambda: MemoryLedger(3.2, 0.34, selective_extra_compute=-0.1), "selective_extra_compute"),
        (lambda: MemoryLedger(3.2, 0.34, microbatch_overhead_fraction=1.0), "microbatch_overhead_fraction"),
        (lambda: MemoryLedger(3.2, 0.34, microbatch_overhead_fraction=math.nan), "microbatch_overhead_fraction"),
    ],
)
def test_bad_knobs_name_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()


# --- recomputation ----------------------------------------------------------------------------------------------------


def test_selective_recomputation_at_60():
    # keep 1 - 0.7 = 0.3 of each block; per block 0.34 x 60 / 10 = 2.04 GB
    # forward rows 0.3 x 2.04 k = 0.612 k; backward peak 2.04 x (9 x 0.3 + 1) = 2.04 x 3.7 = 7.548
    r = COURSE.at(60, recompute="selective")
    assert [b.activations_gb for b in r.blocks] == pytest.approx([0.612 * k for k in range(1, 11)])
    assert r.recompute.activations_gb == pytest.approx(7.548)
    assert r.peak_gb == pytest.approx(10.748) and r.fits
    assert r.checkpointing_saves_gb == pytest.approx(12.852)  # 23.6 - 10.748
    assert r.recomputation == "selective" and r.checkpointing is False
    assert r.recompute_step_time_factor == pytest.approx(1.027) == r.step_time_factor
    # per sample 0.034 x 3.7 = 0.1258: floor(18.4 / 0.1258) = floor(146.3) = 146 (x 147 = 21.69 > 21.6)
    assert r.max_microbatch == 146 == COURSE.max_microbatch(recompute="selective")
    assert list(r.table()["phase"]) == ["forward"] * 10 + ["backward recompute"]
    assert r.to_dict()["recompute"]["total_gb"] == pytest.approx(10.748)


def test_full_recomputation_is_checkpointing():
    full, checkpointed = COURSE.at(60, recompute="full"), COURSE.at(60, checkpointing=True)
    assert full == checkpointed
    assert full.peak_gb == pytest.approx(7.076) and full.max_microbatch == 284  # test_memory_checkpointing
    assert full.step_time_factor == pytest.approx(4 / 3) and full.recomputation == "full"


def test_recomputation_and_accumulation_multiply():
    # full recomputation, 2 microbatches of 30: step x 1.15 x 4/3 = 1.5333; peak 3.2 + 0.034 x 30 x 1.9 = 5.138
    r = COURSE.at(30, recompute="full", accumulation_steps=2)
    assert r.step_time_factor == pytest.approx(1.15 * 4 / 3)
    assert r.peak_gb == pytest.approx(5.138)


knob_ledgers = st.builds(
    MemoryLedger,
    static_gb=st.floats(0, 100),
    activation_gb_per_sample=st.floats(1e-3, 10),
    device_gb=st.floats(1, 200),
    reserve_fraction=st.floats(0, 0.9),
    blocks=st.integers(1, 64),
    selective_saving_fraction=st.floats(0, 0.99),
)


modes = st.sampled_from(["none", "selective", "full"])


@given(knob_ledgers, st.integers(1, 10_000), modes)
def test_global_batch_accumulation_is_the_smallest_that_fits(ledger, global_batch, mode):
    r = ledger.at_global_batch(global_batch, recompute=mode)
    k = r.accumulation_steps
    assert r.microbatch == math.ceil(global_batch / k) and r.global_batch == global_batch
    if r.fits and k > 1:
        assert not ledger.at(math.ceil(global_batch / (k - 1)), recompute=mode).fits
    if not r.fits:
        assert ledger.max_microbatch(recompute=mode) == 0


@given(knob_ledgers, st.integers(1, 500), st.integers(1, 64), modes)
def test_accumulation_never_changes_the_peak(ledger, microbatch, k, mode):
    assert ledger.at(microbatch, recompute=mode, accumulation_steps=k).peak_gb == ledger.peak_gb(
        microbatch, recompute=mode
    )


@given(knob_ledgers, st.integers(1, 500))
def test_selective_sits_between_none_and_what_it_keeps(ledger, microbatch):
    # (blocks - 1) x keep + 1 blocks held: at most all blocks, at least one
    plain, selective = ledger.peak_gb(microbatch), ledger.peak_gb(microbatch, recompute="selective")
    assert selective <= plain * (1 + 1e-12)
    assert selective >= ledger.static_gb + ledger.activation_gb_per_sample * microbatch / ledger.blocks * (1 - 1e-12)


# --- the whole step ---------------------------------------------------------------------------------------------------


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
