"""gpucost_lab.quality.parity (check_parity, compare_to_target, price_to_target) against exact arithmetic on
hand-built results and studies (chapter 06), and half precision on CUDA where there is one (benchmarks/gpu_check.sh
runs it on a GPU machine). The real runs on this machine (fp32 against bf16 autocast on the classification task and
on the sequence task, and over seeds) are tests/quality/test_parity_training.py.
"""

import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.quality.parity import DTYPE_TOLERANCE, check_parity, compare_to_target, price_to_target
from gpucost_lab.quality.seeds import SeedRuns
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainResult

from .helpers import SMALL, result, seeded, study

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

# ---- check_parity on hand-built results ------------------------------------------------------------------------------


def test_declared_tolerances_give_half_precision_more_room():
    assert DTYPE_TOLERANCE["fp32"] == 0.005
    assert DTYPE_TOLERANCE["bf16-mixed"] == DTYPE_TOLERANCE["fp16-mixed"] == 0.01
    with pytest.raises(TypeError):
        DTYPE_TOLERANCE["fp32"] = 0.1  # declared once, read-only


def test_a_candidate_within_tolerance_passes_and_names_the_steps_change():
    report = check_parity(result(steps=100, acc=0.853), result(steps=120, acc=0.851, precision="bf16-mixed"))
    assert report.passed and report.reasons == ()
    assert report.tolerance == 0.01  # from the candidate's precision
    assert (report.baseline_steps_to_target, report.candidate_steps_to_target) == (100, 120)
    assert report.steps_change == pytest.approx(0.2)  # 120 / 100 - 1
    d = report.to_dict()
    assert d["passed"] is True and d["metric"] == "accuracy" and d["reasons"] == []
    assert d["steps_change"] == pytest.approx(0.2)


def test_a_candidate_below_baseline_minus_tolerance_fails_with_the_numbers():
    # both reached 0.80; 0.812 < 0.853 - 0.010 = 0.843
    report = check_parity(result(acc=0.853, target=0.80), result(acc=0.812, target=0.80, precision="bf16-mixed"))
    assert not report.passed
    assert report.reasons == ("candidate accuracy 0.812 is below baseline 0.853 - 0.010",)


def test_a_candidate_that_missed_the_target_fails():
    report = check_parity(result(acc=0.853), result(reached=False, acc=0.84, max_steps=300, precision="bf16-mixed"))
    assert not report.passed
    assert report.candidate_steps_to_target is None and report.steps_change is None
    # 0.84 >= 0.853 - 0.01 = 0.843 is false as well: two reasons
    assert report.reasons == (
        "candidate did not reach the target 0.85 within 300 steps",
        "candidate accuracy 0.840 is below baseline 0.853 - 0.010",
    )


def test_a_baseline_that_missed_the_target_fails():
    report = check_parity(result(reached=False, acc=0.7, max_steps=500), result(acc=0.851))
    assert report.reasons == ("baseline did not reach the target 0.85 within 500 steps",)


def test_different_targets_and_metrics_are_not_comparable():
    report = check_parity(result(target=0.85), result(target=0.80, acc=0.853))
    assert report.reasons == ("the targets differ: baseline 0.85, candidate 0.8; compare at the same target",)
    report = check_parity(result(), result(metric="next-token accuracy"))
    assert report.reasons == ("the runs measure different metrics: baseline accuracy, candidate next-token accuracy",)


def test_the_tolerance_defaults_from_the_precision_and_can_be_given():
    base, cand = result(acc=0.860), result(acc=0.852)  # shortfall 0.008
    assert not check_parity(base, cand).passed  # fp32: 0.008 > 0.005
    assert check_parity(base, cand, precision="bf16-mixed").passed  # 0.008 <= 0.01
    assert check_parity(base, cand, tolerance=0.008).passed  # exactly at the tolerance passes
    assert not check_parity(base, cand, tolerance=0.007).passed


@given(base=st.floats(0.5, 1.0), shortfall=st.floats(-0.1, 0.1), tol=st.floats(0.0, 0.05))
def test_parity_holds_exactly_when_the_shortfall_is_within_tolerance(base, shortfall, tol):
    # property: with both at the same reached target, passed <=> candidate >= baseline - tolerance
    cand = base - shortfall
    if abs(shortfall - tol) < 1e-9:
        return  # the boundary itself is covered by the exact test above
    report = check_parity(result(acc=base, target=0.5), result(acc=cand, target=0.5), tolerance=tol)
    assert report.passed == (shortfall <= tol)


@pytest.mark.parametrize(
    "kwargs,field",
    [({"tolerance": -0.1}, "tolerance"), ({"tolerance": 1.0}, "tolerance"), ({"precision": "int8"}, "precision")],
)
def test_bad_parity_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        check_parity(result(), result(), **kwargs)


def test_price_to_target_reuses_cost_per_step_times_steps_and_refuses_a_failed_report():
    report = check_parity(result(steps=100), result(steps=120, acc=0.852))
    priced = price_to_target(report, baseline_cost_per_step_usd=0.001, candidate_cost_per_step_usd=0.0008)
    # 0.001 x 100 = 0.10 USD; 0.0008 x 120 = 0.096 USD; 0.096 / 0.10 = 0.96
    assert priced["baseline_cost_to_target_usd"] == pytest.approx(0.10)
    assert priced["candidate_cost_to_target_usd"] == pytest.approx(0.096)
    assert priced["relative_cost"] == pytest.approx(0.96) and priced["verdict"] == "cheaper"
    failed = check_parity(result(), result(reached=False))
    with pytest.raises(ValueError, match="report.passed must be True.*did not reach"):
        price_to_target(failed, 0.001, 0.0008)


def test_old_style_train_results_still_compare():
    # the eight positional fields the existing code writes; the new ones default
    old = TrainResult(True, 90, 5760, 0.8533, 0.85, 64, 0.01, ((90, 0.8533),))
    assert old.precision == "fp32" and old.metric == "accuracy" and old.tokens_to_target is None
    assert check_parity(old, old).passed


# ---- CUDA ------------------------------------------------------------------------------------------------------------


@needs_cuda
@pytest.mark.parametrize("precision", ["bf16-mixed", "fp16-mixed"])
def test_half_precision_on_cuda_reaches_the_target_with_parity(precision):
    task = ClassificationTask()
    baseline, candidate, parity = compare_to_target(
        task, {"device": "cuda"}, {"device": "cuda", "precision": precision}
    )
    assert candidate.device == "cuda" and candidate.reached
    assert parity.passed, parity.reasons


# ---- parity over seeds: hand-built studies ---------------------------------------------------------------------------


def test_parity_over_seeds_compares_mean_accuracy_at_the_budget():
    base = study((0.856, 0.854, 0.853))  # mean 0.854333
    cand = study((0.855, 0.852, 0.851), steps=(40, 41, 61))  # mean 0.852667: 0.001667 short, within 0.005
    report = check_parity(base, cand)
    assert report.passed and report.reasons == () and report.tolerance == 0.005
    assert report.baseline_metric == pytest.approx(0.854333333) and report.candidate_metric == pytest.approx(
        0.852666667
    )
    assert report.baseline_steps_to_target == pytest.approx(265 / 3)  # (85 + 67 + 113) / 3
    assert report.candidate_steps_to_target == pytest.approx(142 / 3)  # (40 + 41 + 61) / 3
    assert report.steps_change == pytest.approx(142 / 265 - 1)
    assert report.seeds == (0, 1, 2) and report.budget_steps == 300
    assert report.baseline_steps_per_seed == (85, 67, 113) and report.candidate_metric_per_seed == (0.855, 0.852, 0.851)
    d = report.to_dict()
    assert d["seeds"] == [0, 1, 2] and d["candidate_steps_per_seed"] == [40, 41, 61]
    json.dumps(d)


def test_parity_over_seeds_names_every_seed_that_missed_the_target():
    base = study((0.856, 0.854, 0.853))
    report = check_parity(base, study((0.856, 0.853, 0.854), missed=(1,)))
    assert not report.passed and report.candidate_steps_to_target is None and report.steps_change is None
    assert report.candidate_steps_per_seed == (85, None, 113)
    assert report.reasons == ("candidate did not reach the target 0.85 within 300 steps with seed 1",)
    report = check_parity(study((0.856, 0.854, 0.853), missed=(0, 2)), base)
    assert report.reasons == ("baseline did not reach the target 0.85 within 300 steps with seeds 0, 2",)


def test_parity_over_seeds_tolerance_follows_the_candidate_dtype():
    base = study((0.860, 0.860, 0.860))
    short = (0.852, 0.852, 0.852)  # mean shortfall 0.008
    report = check_parity(base, study(short))
    assert not report.passed  # fp32: 0.008 > 0.005
    assert report.reasons == (
        "candidate mean accuracy after 300 steps 0.852 over seeds 0, 1, 2 is below baseline 0.860 - 0.005",
    )
    assert check_parity(base, study(short, precision="bf16-mixed")).passed  # 0.008 <= 0.01
    assert check_parity(base, study(short), precision="fp16-mixed").passed
    assert check_parity(base, study(short), tolerance=0.008).passed  # exactly at the tolerance
    assert not check_parity(base, study(short), tolerance=0.007).passed


@given(accs=st.lists(st.floats(0.5, 1.0), min_size=6, max_size=6), tol=st.floats(0.0, 0.05))
def test_parity_over_seeds_holds_exactly_when_the_mean_shortfall_is_within_tolerance(accs, tol):
    base, cand = study(accs[:3], target=0.5), study(accs[3:], target=0.5)
    shortfall = sum(accs[:3]) / 3 - sum(accs[3:]) / 3
    if abs(shortfall - tol) < 1e-9:
        return  # the boundary itself is covered by the exact test above
    assert check_parity(base, cand, tolerance=tol).passed == (shortfall <= tol)


def test_parity_over_seeds_needs_the_same_seeds_budget_target_and_enough_seeds():
    base = study((0.855,) * 3)
    assert check_parity(base, study((0.855,) * 3, seeds=(0, 1, 3))).reasons == (
        "the seeds differ: baseline 0, 1, 2, candidate 0, 1, 3; compare over the same seeds",
    )
    assert check_parity(base, study((0.855,) * 3, budget=200)).reasons == (
        "the step budgets differ: baseline 300, candidate 200; compare after the same number of steps",
    )
    assert check_parity(base, study((0.855,) * 3, target=0.8)).reasons == (
        "the targets differ: baseline 0.85, candidate 0.8; compare at the same target",
    )
    two = study((0.855,) * 2, seeds=(0, 1))
    assert check_parity(two, two).reasons == ("only 2 seeds (0, 1); parity across seeds needs at least 3",)
    assert check_parity(two, two, min_seeds=2).passed


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"baseline": result()}, "baseline must be a SeedRuns"),
        ({"tolerance": 1.0}, "tolerance must be in"),
        ({"precision": "int8"}, "precision must be one of"),
        ({"min_seeds": 0}, "min_seeds must be an integer >= 1"),
    ],
)
def test_bad_parity_over_seeds_arguments_name_the_field(kwargs, message):
    args = {"baseline": study((0.855,) * 3), "candidate": study((0.855,) * 3), **kwargs}
    with pytest.raises(ValueError, match=message):
        check_parity(**args)


def test_one_run_each_is_the_one_seed_case_of_the_same_check():
    # the same runs, alone or as studies of one seed (min_seeds=1): the same verdict and metrics; the studies'
    # report also names the seed and the budget, and its reason says it is a mean over seeds
    base, cand = seeded(0, acc=0.860), seeded(0, acc=0.852)  # shortfall 0.008 > 0.005 (fp32)
    one = check_parity(base, cand)
    one_seed = check_parity(SeedRuns((base,)), SeedRuns((cand,)), min_seeds=1)
    assert not one.passed and not one_seed.passed
    assert (one.baseline_metric, one.candidate_metric) == (one_seed.baseline_metric, one_seed.candidate_metric)
    assert one.baseline_steps_to_target == one_seed.baseline_steps_to_target == 90
    assert one.reasons == ("candidate accuracy 0.852 is below baseline 0.860 - 0.005",)
    assert one_seed.reasons == (
        "candidate mean accuracy after 300 steps 0.852 over seeds 0 is below baseline 0.860 - 0.005",
    )
    assert (one.seeds, one.budget_steps) == ((), None) and (one_seed.seeds, one_seed.budget_steps) == ((0,), 300)


@pytest.mark.parametrize(
    "baseline,candidate,message",
    [
        (study((0.855,) * 3), result(), "candidate must be a SeedRuns"),
        ("run", result(), "baseline must be a TrainResult or a SeedRuns"),
        (result(), None, "candidate must be a TrainResult or a SeedRuns"),
    ],
)
def test_both_sides_are_one_run_or_both_a_seed_study(baseline, candidate, message):
    with pytest.raises(ValueError, match=message):
        check_parity(baseline, candidate)


# ---- compare_to_target over seeds: its arguments ---------------------------------------------------------------------


def test_compare_to_target_over_seeds_needs_a_step_budget_and_enough_seeds():
    with pytest.raises(ValueError, match="budget_steps must be an integer with seeds"):
        compare_to_target(SMALL, seeds=(0, 1, 2))
    with pytest.raises(ValueError, match="seeds must be a sequence of at least 3"):
        compare_to_target(SMALL, seeds=(0, 1), budget_steps=30)
