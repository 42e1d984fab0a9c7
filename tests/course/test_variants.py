"""Per-learner variants of the labs (gpucost_lab.course.variants) that need no simulated run: the self-study numbers
are the ones the lab text states, bad ids and labs are refused, and lab 2's memory plan follows from the model's
memory by hand, with one clear answer for every learner that differs from the self-study answer by more than the
checks' tolerance. The variants computed from the simulated runs (the id's source, each learner's loop and plan job)
are test_variants_jobs.py.
"""

import math

import pytest
import torch

from gpucost_lab.course.variants import PLAN_MODEL_MEMORY, SELF_STUDY_LOOP, SELF_STUDY_PLAN, lab_variant, plan_ledger
from gpucost_lab.memory.fixes import plan_fixes
from gpucost_lab.memory.from_model import measure_model_memory
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.simulate.config import SCENARIOS

from .helpers import IDS


def test_the_self_study_numbers_are_the_ones_the_lab_text_states():
    # profile_training_loop's text: a checkpoint every 100 steps, eval every 25 on 64 batches, $2.10, 2.5 hours
    s = SELF_STUDY_LOOP.schedule
    assert (s.steps, s.checkpoint_every, s.eval_every, s.eval_batches) == (2000, 100, 25, 64)
    assert (SELF_STUDY_LOOP.price_per_hour_usd, SELF_STUDY_LOOP.window_hours, SELF_STUDY_LOOP.seed) == (2.10, 2.5, 0)
    # optimization_plan's text: dataloader_stall as it is, seed 0, a 100 kB scaled device with a 10% reserve, $2.10,
    # 2e9 samples in 8 hours
    p = SELF_STUDY_PLAN
    assert p.stall_config == SCENARIOS["dataloader_stall"]
    assert (p.train_seed, p.reserve_fraction, p.price_per_hour_usd, p.nightly_samples, p.window_hours) == (
        0,
        0.10,
        2.10,
        2_000_000_000,
        8.0,
    )
    assert (p.device_kb, p.device_gb) == (100, 1e-4)  # "the team's 24 GB divided by 240,000"
    assert 24 / 240_000 == p.device_gb
    assert lab_variant("profile_training_loop", None) is SELF_STUDY_LOOP
    assert lab_variant("optimization_plan", None) is SELF_STUDY_PLAN


@pytest.mark.parametrize("bad", ["", "   ", "a\nb", "x" * 201, 7])
def test_bad_ids_and_labs_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="learner must be"):
        lab_variant("profile_training_loop", bad)


def test_an_unknown_lab_is_refused():
    with pytest.raises(ValueError, match="lab must be one of 'profile_training_loop', 'optimization_plan'"):
        lab_variant("profile", "alice")


# Lab 2's memory plan, by hand. ClassificationTask().model() is Linear(32, 128), ReLU, Linear(128, 8): 32 x 128 + 128
# + 128 x 8 + 8 = 5,256 parameters; SGD with momentum keeps weights, gradients and one momentum buffer, 4 bytes each
# per parameter; backward needs the fp32 input (32 values) and the hidden layer (128 values) of every sample.
STATIC_BYTES = 5_256 * 4 * 3  # 63,072
ACTIVATION_BYTES_PER_SAMPLE = (32 + 128) * 4  # 640
GLOBAL_BATCH = 64
ACCUMULATION_OVERHEAD = 0.15  # per extra microbatch, chapter 04's measured figure


def _by_hand(device_kb: int, reserve: float) -> tuple[int, int, float, int]:
    """(largest microbatch, fewest microbatches for 64, their step-time factor, the planned step's peak in bytes)."""
    free = device_kb * 1000 * (1 - reserve) - STATIC_BYTES
    largest = math.floor(free / ACTIVATION_BYTES_PER_SAMPLE)
    k = math.ceil(GLOBAL_BATCH / largest)
    return (
        largest,
        k,
        1 + (k - 1) * ACCUMULATION_OVERHEAD,
        STATIC_BYTES + ACTIVATION_BYTES_PER_SAMPLE * math.ceil(GLOBAL_BATCH / k),
    )


def test_the_plan_lab_s_model_memory_is_what_the_lab_measures():
    task = ClassificationTask()
    assert sum(p.numel() for p in task.model().parameters()) == 5_256
    measured = measure_model_memory(
        task.model(),
        (task.data()[0][:64].clone(),),
        optimizer_factory=lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
    )
    assert (measured.static_bytes, measured.activation_bytes_per_sample) == (STATIC_BYTES, ACTIVATION_BYTES_PER_SAMPLE)
    assert {k: getattr(measured, k) for k in PLAN_MODEL_MEMORY} == PLAN_MODEL_MEMORY


def test_the_self_study_memory_plan_binds_and_accumulates_twice():
    # (100,000 x 0.9 - 63,072) / 640 = 42.08: 42; 64 needs 2 microbatches of 32, each step x1.15
    assert _by_hand(100, 0.10) == (42, 2, 1.15, 63_072 + 640 * 32)
    ledger = plan_ledger(100, 0.10)
    assert ledger.max_microbatch() == 42 and not ledger.at(64).fits


def test_every_learner_s_memory_plan_binds_with_one_clear_answer_away_from_the_self_study_one():
    study = _by_hand(SELF_STUDY_PLAN.device_kb, SELF_STUDY_PLAN.reserve_fraction)
    seen = set()
    for learner in IDS:
        job = lab_variant("optimization_plan", learner)
        largest, k, factor, peak = _by_hand(job.device_kb, job.reserve_fraction)
        assert 20 <= largest <= 31, (learner, job.device_kb, job.reserve_fraction, largest)  # in the tens, below 64
        # one clear answer: the budget is at least 16 bytes from the peaks of the largest microbatch and the next
        budget = job.device_kb * 1000 * (1 - job.reserve_fraction)
        edge = budget - STATIC_BYTES - ACTIVATION_BYTES_PER_SAMPLE * largest
        assert 16 <= edge <= ACTIVATION_BYTES_PER_SAMPLE - 16, (learner, edge)
        # every answer differs from the self-study one by more than its check's tolerance: the microbatch and the
        # accumulation exactly, the factor by 1e-9 of itself, the peak by half a sample's activations
        assert largest != study[0] and k != study[1] and abs(factor - study[2]) > 1e-9 * study[2]
        assert abs(peak - study[3]) >= ACTIVATION_BYTES_PER_SAMPLE / 2
        seen.add(k)
    assert seen == {3, 4}  # the answers differ between learners too


@pytest.mark.parametrize("learner", [None, "alice", "bob", "learner07"])
def test_the_plan_s_cheapest_fix_without_a_parity_check_is_the_accumulation_by_hand(learner):
    job = lab_variant("optimization_plan", learner)
    largest, k, factor, peak = _by_hand(job.device_kb, job.reserve_fraction)
    ledger = plan_ledger(job.device_kb, job.reserve_fraction)
    assert ledger.max_microbatch() == largest
    # one block: recomputation frees nothing, so it never fits a larger microbatch
    assert ledger.max_microbatch(recompute="full") == ledger.max_microbatch(recompute="selective") == largest
    plan = plan_fixes(
        ledger, 64, samples_per_s=400_000, window_hours=job.window_hours, samples_per_night=job.nightly_samples
    )
    fix = next(f for f in plan.fixes if not f.needs_parity_check)
    assert (fix.name, fix.recomputation, fix.accumulation_steps) == (
        f"accumulation x{k} (microbatch {math.ceil(64 / k)})",
        "none",
        k,
    )
    assert fix.step_time_factor == pytest.approx(factor, rel=1e-12) and fix.peak_gb * 1e9 == pytest.approx(peak)
    assert all(f.redundant for f in plan.fixes if f.recomputation != "none")  # the plan table shows it
