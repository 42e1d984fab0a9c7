"""gpucost_lab.quality.parity (compare_to_target, check_parity) on real training runs (chapter 06): fp32 against bf16
autocast on the classification task and on the sequence task, and over seeds, the optimization plan's candidates
among them. (The arithmetic on hand-built results and studies, and half precision on CUDA:
tests/quality/test_parity.py.)
"""

import pytest

from gpucost_lab.quality.parity import ParityReport, ParityRuns, check_parity, compare_to_target
from gpucost_lab.quality.seeds import train_over_seeds
from gpucost_lab.quality.tasks import ClassificationTask, SequenceTask
from gpucost_lab.quality.train import train_to_target

from .helpers import SMALL

pytestmark = pytest.mark.slow


# ---- real runs at a precision ----------------------------------------------------------------------------------------


def test_fp32_and_bf16_reach_the_same_target_with_parity():
    task = ClassificationTask()
    baseline, candidate, parity = compare_to_target(task, {}, {"precision": "bf16-mixed"})
    assert candidate == train_to_target(task, precision="bf16-mixed")  # deterministic under the seed
    assert baseline.precision == "fp32" and candidate.precision == "bf16-mixed"
    for r in (baseline, candidate):
        assert r.reached and r.final_val_accuracy >= 0.85 and r.samples_to_target == r.steps_to_target * 64
    assert isinstance(parity, ParityReport) and parity.passed and parity.tolerance == 0.01


# ---- the sequence task, counted in tokens ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sequence_runs():
    task = SequenceTask()
    return task, compare_to_target(task, {}, {"precision": "bf16-mixed"})


def test_the_sequence_task_reaches_its_target_counted_in_tokens(sequence_runs):
    task, (baseline, candidate, parity) = sequence_runs
    assert task.default_target_accuracy < task.ceiling_accuracy
    for r in (baseline, candidate):
        assert r.reached and r.metric == "next-token accuracy" and r.counted_unit == "tokens"
        assert r.tokens_to_target == r.steps_to_target * 64 * 32  # steps x batch x sequence length
        assert r.units_to_target == r.tokens_to_target
        # no model beats the Bayes rate: 512 x 32 held-out tokens, 4 standard errors of room
        assert r.final_val_accuracy <= task.ceiling_accuracy + 4 * (0.876 * 0.124 / (512 * 32)) ** 0.5
    assert parity.passed, parity.reasons


# ---- parity over seeds: real runs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plan_configs_over_seeds():
    """The optimization plan's configs (gpucost_lab.release.plan) over seeds 0, 1, 2 at a 300-step budget."""
    task = ClassificationTask()
    configs = {
        "baseline": {},
        "batch128": {"batch_size": 128, "lr": 0.02},
        "bf16": {"precision": "bf16-mixed"},
        "hidden8": {"hidden": 8},
    }
    return {name: train_over_seeds(task, budget_steps=300, **kwargs) for name, kwargs in configs.items()}


def test_plan_candidates_pass_or_fail_parity_across_seeds(plan_configs_over_seeds):
    runs = plan_configs_over_seeds
    base = runs["baseline"]
    assert base.reached_all and all(r.steps_to_target < 300 for r in base.runs)
    for name in ("batch128", "bf16"):
        report = check_parity(base, runs[name])
        assert report.passed, (name, report.reasons)
        assert report.baseline_metric == pytest.approx(sum(base.accuracy_at_budget_values) / 3)
    # a 32-8-8 MLP is too narrow: every seed that missed 0.85 is named, and/or its mean accuracy falls short
    tiny = runs["hidden8"]
    report = check_parity(base, tiny)
    assert not report.passed
    for seed in tiny.missed_seeds:
        assert any(
            r.startswith("candidate did not reach") and str(seed) in r.split("with seed")[1] for r in report.reasons
        )
    assert report.tolerance == 0.005 and check_parity(base, runs["bf16"]).tolerance == 0.01


def test_compare_to_target_over_seeds_trains_both_and_checks_parity():
    compared = compare_to_target(
        SMALL, {"lr": 0.05}, {"lr": 0.05, "precision": "bf16-mixed"}, budget_steps=30, seeds=(0, 1, 2)
    )
    assert isinstance(compared, ParityRuns)
    baseline, candidate, parity = compared
    assert candidate == train_over_seeds(SMALL, budget_steps=30, lr=0.05, precision="bf16-mixed")
    assert parity == check_parity(baseline, candidate)
