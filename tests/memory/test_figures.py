"""The ledger's precision, optimizer, accumulation and recomputation knobs against hand computations (chapter 04).

Course ledger: static 3.2 GB, 0.34 GB/sample (fp32), 24 GB device, 10% reserve -> budget 21.6 GB, 10 blocks,
checkpoint keep fraction 0.1. Stated figures (gpucost_lab.memory.figures):
  bytes per parameter (Ultra-Scale Playbook): fp32 = 4 weights + 4 grads; bf16/fp16-mixed = 2 + 2 + 4 fp32 master;
    plus optimizer state: sgd 0, sgd-momentum 4, adamw 4 + 4
  activations: 4 bytes/element in fp32, 2 under mixed precision -> x 0.5
  selective recomputation: saves 0.70 of the activations (keep 0.3), +2.7% compute (Korthikanti et al. 2022)
  full recomputation: keep 0.1 (each block's input), step x 4/3
  accumulation: step x (1 + (K - 1) x 0.15)
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.memory.figures import (
    MICROBATCH_OVERHEAD_FRACTION,
    SELECTIVE_EXTRA_COMPUTE,
    SELECTIVE_SAVING_FRACTION,
    accumulation_step_time_factor,
    activation_scale,
    selective_saving_fraction,
    static_memory,
)
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.precision import PRECISIONS, check_precision

COURSE = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.10, blocks=10)


def test_stated_defaults():
    assert SELECTIVE_SAVING_FRACTION == 0.70 and SELECTIVE_EXTRA_COMPUTE == 0.027
    assert MICROBATCH_OVERHEAD_FRACTION == 0.15


# --- static memory from a parameter count ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "precision,optimizer,per_parameter",
    [
        ("fp32", "sgd", 8),
        ("fp32", "sgd-momentum", 12),
        ("fp32", "adamw", 16),  # 4 + 4 (+ 4) (+ 4 + 4)
        ("bf16-mixed", "sgd", 8),
        ("bf16-mixed", "sgd-momentum", 12),
        ("bf16-mixed", "adamw", 16),  # 2 + 2 + 4 (+ ...)
        ("fp16-mixed", "sgd", 8),
        ("fp16-mixed", "sgd-momentum", 12),
        ("fp16-mixed", "adamw", 16),
    ],
)
def test_bytes_per_parameter(precision, optimizer, per_parameter):
    assert static_memory(1000, precision, optimizer).bytes_per_parameter == per_parameter


def test_bf16_mixed_adamw_is_16_bytes_per_parameter():
    # 1e9 parameters: 2 GB bf16 weights + 2 GB bf16 grads + 4 GB fp32 master + 4 + 4 GB Adam moments = 16 GB
    s = static_memory(10**9, "bf16-mixed", "adamw")
    assert s.static_gb == pytest.approx(16.0)
    assert s.breakdown_gb() == pytest.approx(
        {"weights_gb": 2.0, "gradients_gb": 2.0, "master_weights_gb": 4.0, "optimizer_state_gb": 8.0}
    )
    fp32 = static_memory(10**9, "fp32", "adamw")  # 4 + 4 + 0 + 8
    assert fp32.breakdown_gb() == pytest.approx(
        {"weights_gb": 4.0, "gradients_gb": 4.0, "master_weights_gb": 0.0, "optimizer_state_gb": 8.0}
    )


def test_200_million_parameters_with_adamw_is_the_course_ledger():
    # 200e6 x 16 B = 3.2e9 B = 3.2 GB: the course's static memory
    ledger = MemoryLedger.from_parameters(200_000_000, 0.34)
    assert ledger.static_gb == pytest.approx(3.2)
    assert ledger.at(32).peak_gb == pytest.approx(14.08)
    assert ledger.max_microbatch() == 54
    sgd = MemoryLedger.from_parameters(200_000_000, 0.34, optimizer="sgd")  # 200e6 x 8 B = 1.6 GB
    assert sgd.static_gb == pytest.approx(1.6)
    assert sgd.max_microbatch() == 58  # floor((21.6 - 1.6) / 0.34) = floor(58.8)


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(parameters=0), "parameters"),
        (dict(parameters=2.5), "parameters"),
        (dict(parameters=10, precision="fp8"), "precision"),
        (dict(parameters=10, optimizer="adam"), "optimizer"),
    ],
)
def test_static_memory_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        static_memory(**kwargs)


# --- the defaults leave the course ledger exactly as it was ----------------------------------------------------


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


# --- precision -------------------------------------------------------------------------------------------------


def test_the_ledger_and_the_training_runs_share_one_precision_vocabulary():
    from gpucost_lab.memory.figures import ACTIVATION_BYTES
    from gpucost_lab.quality.parity import DTYPE_TOLERANCE

    assert PRECISIONS == ("fp32", "bf16-mixed", "fp16-mixed")
    assert set(ACTIVATION_BYTES) == set(DTYPE_TOLERANCE) == set(PRECISIONS)
    # the ledger counts bytes on no device: fp16-mixed is a name it knows; a run on the CPU cannot train in it
    assert check_precision("fp16-mixed") == "fp16-mixed" and check_precision("bf16-mixed", "cpu") == "bf16-mixed"
    assert check_precision("fp16-mixed", "cuda:0") == "fp16-mixed"
    with pytest.raises(ValueError, match="fp16-mixed' needs CUDA.*use 'fp32' or 'bf16-mixed'"):
        check_precision("fp16-mixed", "cpu")
    with pytest.raises(ValueError, match="precision must be one of 'fp32', 'bf16-mixed', 'fp16-mixed', got 'bf16'"):
        MemoryLedger(3.2, 0.34, precision="bf16")


def test_mixed_precision_halves_the_activations_not_the_static_memory():
    assert activation_scale("fp32", "bf16-mixed") == 0.5 and activation_scale("bf16-mixed", "fp32") == 2.0
    bf16 = COURSE.with_precision("bf16-mixed")
    assert bf16.precision == "bf16-mixed" and bf16.static_gb == 3.2
    assert bf16.activation_gb_per_sample == pytest.approx(0.17)  # 0.34 x 2 / 4
    assert bf16.at(60).peak_gb == pytest.approx(13.4)  # 3.2 + 0.17 x 60
    assert bf16.max_microbatch() == 108  # floor(18.4 / 0.17) = floor(108.2)
    assert bf16.with_precision("fp32").activation_gb_per_sample == pytest.approx(0.34)
    assert bf16.at(8).precision == "bf16-mixed"


# --- gradient accumulation -------------------------------------------------------------------------------------


def test_accumulation_memory_follows_the_microbatch():
    plain, accumulated = COURSE.at(60), COURSE.at(60, accumulation_steps=2)
    assert accumulated.peak_gb == plain.peak_gb == pytest.approx(23.6)  # 3.2 + 0.34 x 60, whatever K
    assert accumulated.global_batch == 120  # 60 x 2
    assert accumulated.step_time_factor == pytest.approx(1.15)  # 1 + (2 - 1) x 0.15
    half = COURSE.at(30, accumulation_steps=2)  # the global batch of 60 as two microbatches of 30
    assert half.peak_gb == pytest.approx(13.4) and half.fits and half.global_batch == 60


def test_accumulation_step_time_model():
    assert accumulation_step_time_factor(1) == 1.0
    assert accumulation_step_time_factor(4, 0.15) == pytest.approx(1.45)  # 1 + 3 x 0.15
    assert accumulation_step_time_factor(8, 0.05) == pytest.approx(1.35)  # 1 + 7 x 0.05
    assert COURSE.at(10, accumulation_steps=6).step_time_factor == pytest.approx(1.75)  # 1 + 5 x 0.15
    custom = MemoryLedger(3.2, 0.34, microbatch_overhead_fraction=0.1)
    assert custom.at(10, accumulation_steps=3).step_time_factor == pytest.approx(1.2)  # 1 + 2 x 0.1


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


# --- recomputation ---------------------------------------------------------------------------------------------


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


def test_selective_saving_fraction_formula():
    # Korthikanti et al. 2022: 5as/h / (34 + 5as/h); GPT-3 175B: 5 x 96 x 2048 / 12288 = 80 -> 80 / 114
    assert selective_saving_fraction(2048, 12288, 96) == pytest.approx(80 / 114)
    assert round(selective_saving_fraction(2048, 12288, 96), 2) == SELECTIVE_SAVING_FRACTION
    # s 64, h 128, a 4: 5 x 4 x 64 / 128 = 10 -> 10 / 44
    assert selective_saving_fraction(64, 128, 4) == pytest.approx(10 / 44)


ledgers = st.builds(
    MemoryLedger,
    static_gb=st.floats(0, 100),
    activation_gb_per_sample=st.floats(1e-3, 10),
    device_gb=st.floats(1, 200),
    reserve_fraction=st.floats(0, 0.9),
    blocks=st.integers(1, 64),
    selective_saving_fraction=st.floats(0, 0.99),
)
modes = st.sampled_from(["none", "selective", "full"])


@given(ledgers, st.integers(1, 10_000), modes)
def test_global_batch_accumulation_is_the_smallest_that_fits(ledger, global_batch, mode):
    r = ledger.at_global_batch(global_batch, recompute=mode)
    k = r.accumulation_steps
    assert r.microbatch == math.ceil(global_batch / k) and r.global_batch == global_batch
    if r.fits and k > 1:
        assert not ledger.at(math.ceil(global_batch / (k - 1)), recompute=mode).fits
    if not r.fits:
        assert ledger.max_microbatch(recompute=mode) == 0


@given(ledgers, st.integers(1, 500), st.integers(1, 64), modes)
def test_accumulation_never_changes_the_peak(ledger, microbatch, k, mode):
    assert ledger.at(microbatch, recompute=mode, accumulation_steps=k).peak_gb == ledger.peak_gb(
        microbatch, recompute=mode
    )


@given(ledgers, st.integers(1, 500))
def test_selective_sits_between_none_and_what_it_keeps(ledger, microbatch):
    # (blocks - 1) x keep + 1 blocks held: at most all blocks, at least one
    plain, selective = ledger.peak_gb(microbatch), ledger.peak_gb(microbatch, recompute="selective")
    assert selective <= plain * (1 + 1e-12)
    assert selective >= ledger.static_gb + ledger.activation_gb_per_sample * microbatch / ledger.blocks * (1 - 1e-12)
