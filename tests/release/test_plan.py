"""The optimization plan on the built-in workload: one candidate promoted, unsafe ones fall back, reasons named."""

import dataclasses
import json
import math

import pytest

from gpucost_lab.cli.main import main
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainingStep
from gpucost_lab.release import Registry
from gpucost_lab.release.plan import BASELINE_NAME, run_plan
from gpucost_lab.roofline.bound import count_flops

pytestmark = pytest.mark.slow

CHECKS = ("contract", "parity", "memory", "window", "cost")


@pytest.fixture(scope="module")
def promoted():
    # a four-round plan, five seeds each side: the tests on it are `slow` (several seconds even on one torch thread)
    return run_plan("batch128-lr-scaled", rounds=4)


def test_lr_scaled_batch_reaches_the_target_in_fewer_steps_on_every_seed(promoted):
    # twice the batch at twice the learning rate: per seed 0-4, 40-61 steps against the baseline's 67-113
    # (deterministic CPU training; the steps are exact, evaluation runs every step near the target)
    assert promoted.baseline.steps_to_target_per_seed == (85, 67, 113, 100, 74)
    assert promoted.candidate.steps_to_target_per_seed == (40, 41, 61, 56, 45)
    assert promoted.parity.passed


def test_the_decision_follows_the_cost_comparison_and_names_every_check(promoted):
    # the step time ratio depends on the machine; what must hold anywhere: the cost ratio is the step-time ratio
    # times the per-seed steps ratio, the table's costs agree with it, and the gate promotes only on "cheaper"
    d = promoted.decision
    assert [r.split(":")[0] for r in d.reasons] == list(CHECKS)
    steps_ratio = math.prod(c / b for c, b in zip((40, 41, 61, 56, 45), (85, 67, 113, 100, 74))) ** (1 / 5)
    assert d.cost_ratio == pytest.approx(promoted.comparison.time_ratio * steps_ratio)
    table = promoted.cost_to_target_usd("candidate").value / promoted.cost_to_target_usd("baseline").value
    assert d.cost_ratio == pytest.approx(table, rel=1e-12)
    assert d.cost_ratio_ci95[0] < d.cost_ratio < d.cost_ratio_ci95[1]
    assert (d.action == "promote") == (
        promoted.cost.verdict == "cheaper" and all(ok for name, ok in d.checks.items() if name != "cost")
    )
    assert d.to == ("batch128-lr-scaled" if d.action == "promote" else BASELINE_NAME)


def test_a_model_faster_per_step_that_misses_the_target_falls_back(tmp_path):
    registry = Registry(tmp_path / "registry.json")
    result = run_plan("tiny-model", rounds=2, registry=registry)
    d = result.decision
    assert d.action == "fallback" and d.to == BASELINE_NAME
    assert not result.parity.passed and any("did not reach the target" in r for r in result.parity.reasons)
    assert result.candidate.steps_to_target_per_seed == (150,) * 5  # no seed reaches 0.85 within 150 steps
    assert any(r.startswith("parity: failed") for r in d.reasons)
    # faster per step by construction: a 32-8-8 MLP does 16x fewer multiply-adds than 32-128-8
    task = ClassificationTask()
    tiny, base = TrainingStep(task, 64, hidden=8), TrainingStep(task, 64, hidden=128)
    assert count_flops(tiny) * 16 == count_flops(base)
    assert registry.current() == BASELINE_NAME


def test_after_a_promotion_an_unsafe_candidate_falls_back_to_the_last_known_good(tmp_path, promoted):
    registry = Registry(tmp_path / "registry.json")
    # the promotion as a quiet machine decides it (a loaded one may say "inconclusive" and fall back)
    registry.record(
        dataclasses.replace(
            promoted.decision, action="promote", to="batch128-lr-scaled", checks={name: True for name in CHECKS}
        )
    )
    assert registry.last_known_good() == "batch128-lr-scaled"
    d = run_plan("tiny-model", rounds=2, registry=registry, baseline=promoted.baseline).decision
    assert d.action == "fallback" and d.to == "batch128-lr-scaled"
    assert len(Registry(tmp_path / "registry.json").decisions()) == 2


def test_bf16_candidate_decision_follows_its_checks(promoted):
    result = run_plan("bf16-autocast", rounds=2, baseline=promoted.baseline)
    assert result.parity.passed  # bf16 autocast reaches the same target within a step or two of fp32 on each seed
    assert result.candidate.steps_to_target_per_seed == (86, 67, 113, 99, 73)
    assert (result.decision.action == "promote") == all(result.decision.checks.values())


def test_cli_plan_json_and_report(tmp_path, capsys):
    report = tmp_path / "plan.html"
    assert main(["plan", "--candidate", "tiny-model", "--rounds", "2", "--report", str(report), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"baseline", "candidate", "timing", "parity", "memory", "cost_to_target", "decision"} <= set(out)
    assert out["timing"]["rounds"] == 2 and len(out["timing"]["baseline_block_times_s"]) == 4
    assert {"passed", "tolerance", "baseline_metric", "candidate_metric"} <= set(out["parity"])
    assert set(out["memory"]) == {"peak_bytes", "budget_bytes", "fits"}
    assert out["memory"]["budget_bytes"] == 24e9 * 0.9
    assert out["decision"]["action"] == "fallback" and out["decision"]["to"] == BASELINE_NAME
    html = report.read_text()
    assert "fallback" in html and "tiny-model" in html and "parity" in html
