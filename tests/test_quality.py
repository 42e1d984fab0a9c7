"""Quality parity at a precision, and the token-counted sequence task (chapter 06).

Parity verdicts are checked on hand-built results (exact arithmetic written beside each), then on real
runs: fp32 against bf16 autocast on the classification task and on the sequence task.
"""
import dataclasses

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.quality import DTYPE_TOLERANCE, ParityReport, check_parity, compare_to_target, price_to_target
from gpucost_lab.workloads import (ClassificationTask, SequenceTask, TrainingStep, TrainResult, autocast,
                                   train_to_target)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def result(reached=True, steps=100, acc=0.853, target=0.85, precision="fp32", max_steps=300, batch=64,
           metric="accuracy"):
    """A TrainResult built by hand: no training."""
    return TrainResult(reached, steps if reached else None, steps * batch if reached else None, acc, target, batch,
                       0.01, ((steps if reached else max_steps, acc),), precision=precision, metric=metric,
                       max_steps=max_steps)


# ---- check_parity on hand-built results -------------------------------------------------------------------------

def test_declared_tolerances_give_half_precision_more_room():
    assert DTYPE_TOLERANCE["fp32"] == 0.005
    assert DTYPE_TOLERANCE["bf16-autocast"] == DTYPE_TOLERANCE["fp16-amp"] == 0.01
    with pytest.raises(TypeError):
        DTYPE_TOLERANCE["fp32"] = 0.1  # declared once, read-only


def test_a_candidate_within_tolerance_passes_and_names_the_steps_change():
    report = check_parity(result(steps=100, acc=0.853), result(steps=120, acc=0.851, precision="bf16-autocast"))
    assert report.passed and report.reasons == ()
    assert report.tolerance == 0.01  # from the candidate's precision
    assert (report.baseline_steps_to_target, report.candidate_steps_to_target) == (100, 120)
    assert report.steps_change == pytest.approx(0.2)  # 120 / 100 - 1
    d = report.to_dict()
    assert d["passed"] is True and d["metric"] == "accuracy" and d["reasons"] == []
    assert d["steps_change"] == pytest.approx(0.2)


def test_a_candidate_below_baseline_minus_tolerance_fails_with_the_numbers():
    # both reached 0.80; 0.812 < 0.853 - 0.010 = 0.843
    report = check_parity(result(acc=0.853, target=0.80), result(acc=0.812, target=0.80, precision="bf16-autocast"))
    assert not report.passed
    assert report.reasons == ("candidate accuracy 0.812 is below baseline 0.853 - 0.010",)


def test_a_candidate_that_missed_the_target_fails():
    report = check_parity(result(acc=0.853), result(reached=False, acc=0.84, max_steps=300, precision="bf16-autocast"))
    assert not report.passed
    assert report.candidate_steps_to_target is None and report.steps_change is None
    # 0.84 >= 0.853 - 0.01 = 0.843 is false as well: two reasons
    assert report.reasons == ("candidate did not reach the target 0.85 within 300 steps",
                              "candidate accuracy 0.840 is below baseline 0.853 - 0.010")


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
    assert check_parity(base, cand, precision="bf16-autocast").passed  # 0.008 <= 0.01
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


@pytest.mark.parametrize("kwargs,field", [({"tolerance": -0.1}, "tolerance"), ({"tolerance": 1.0}, "tolerance"),
                                          ({"precision": "int8"}, "precision")])
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


# ---- precision ---------------------------------------------------------------------------------------------------

def test_fp16_amp_needs_cuda_and_unknown_precisions_are_refused():
    task = ClassificationTask(train_samples=64, val_samples=16)
    with pytest.raises(ValueError, match="fp16-amp.*needs CUDA"):
        train_to_target(task, precision="fp16-amp", device="cpu")
    with pytest.raises(ValueError, match="precision must be one of"):
        train_to_target(task, precision="int8")
    with pytest.raises(ValueError, match="fp16-amp.*needs CUDA"):
        TrainingStep(task, 8, precision="fp16-amp")


def test_bf16_autocast_runs_the_matmuls_in_bfloat16_with_fp32_weights():
    model = ClassificationTask().model()
    x = torch.randn(4, 32)
    with autocast("bf16-autocast", "cpu"):
        out = model(x)
    assert out.dtype == torch.bfloat16  # torch's CPU autocast casts linear to bfloat16
    assert all(p.dtype == torch.float32 for p in model.parameters())
    with autocast("fp32", "cpu"):
        assert model(x).dtype == torch.float32


def test_fp32_and_bf16_reach_the_same_target_with_parity():
    task = ClassificationTask()
    baseline, candidate, parity = compare_to_target(task, {}, {"precision": "bf16-autocast"})
    assert candidate == train_to_target(task, precision="bf16-autocast")  # deterministic under the seed
    assert baseline.precision == "fp32" and candidate.precision == "bf16-autocast"
    for r in (baseline, candidate):
        assert r.reached and r.final_val_accuracy >= 0.85 and r.samples_to_target == r.steps_to_target * 64
    assert isinstance(parity, ParityReport) and parity.passed and parity.tolerance == 0.01


# ---- the sequence task, counted in tokens ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sequence_runs():
    task = SequenceTask()
    return task, compare_to_target(task, {}, {"precision": "bf16-autocast"})


def test_sequence_data_is_seeded_shifted_by_one_and_follows_the_rule():
    task = SequenceTask()
    x, y, x_val, y_val = task.data()
    assert x.shape == y.shape == (4096, 32) and x_val.shape == (512, 32)
    assert all(torch.equal(a, b) for a, b in zip(task.data(), (x, y, x_val, y_val)))
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is the next token of x
    assert not torch.equal(x, SequenceTask(seed=1).data()[0])
    # from the third token on, the next token is rule[previous two] with p + (1 - p) / V = 0.9 + 0.1 / 32
    rule = task.rule()
    hits = (y[:, 1:] == rule[x[:, :-1], x[:, 1:]]).float()
    expected, n = 0.9 + 0.1 / 32, hits.numel()  # 4096 x 31 Bernoulli draws
    assert abs(hits.mean().item() - expected) < 5 * (expected * (1 - expected) / n) ** 0.5


def test_the_ceiling_is_the_bayes_rate_by_hand():
    # first prediction 1/32; the other 31 at 0.9 + 0.1/32 = 0.903125: (0.03125 + 31 x 0.903125) / 32
    assert SequenceTask().ceiling_accuracy == pytest.approx((0.03125 + 27.996875) / 32)  # 0.8758789...
    assert SequenceTask(follow_probability=0.0).ceiling_accuracy == pytest.approx(1 / 32)  # pure noise


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


def test_sequence_training_step_counts_tokens():
    step = TrainingStep(SequenceTask(train_sequences=8, val_sequences=2), batch_size=20)
    assert step.x.shape == step.y.shape == (20, 32)  # 8 sequences repeated to fill the batch
    assert step.counted_unit == "tokens" and step.units_per_step == 20 * 32
    before = [p.clone() for p in step.model.parameters()]
    step()
    assert any(not torch.equal(a, b) for a, b in zip(before, step.model.parameters()))


@pytest.mark.parametrize("kwargs,field", [({"vocab_size": 1}, "vocab_size"), ({"seq_len": 1}, "seq_len"),
                                          ({"follow_probability": 1.5}, "follow_probability")])
def test_bad_sequence_tasks_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SequenceTask(**kwargs)


# ---- CUDA ---------------------------------------------------------------------------------------------------------

@needs_cuda
@pytest.mark.parametrize("precision", ["bf16-autocast", "fp16-amp"])
def test_half_precision_on_cuda_reaches_the_target_with_parity(precision):
    task = ClassificationTask()
    baseline, candidate, parity = compare_to_target(task, {"device": "cuda"},
                                                    {"device": "cuda", "precision": precision})
    assert candidate.device == "cuda" and candidate.reached
    assert parity.passed, parity.reasons


def test_train_result_fields_are_documented_in_to_dict():
    r = result()
    assert set(r.to_dict()) == {f.name for f in dataclasses.fields(TrainResult)} - {"history"}
