"""The optimization plan on the built-in workload: one candidate promoted, unsafe ones fall back, reasons named."""
import json

import pytest

from gpucost_lab.cli import main
from gpucost_lab.plan import BASELINE_NAME, CANDIDATES, run_plan
from gpucost_lab.release import Registry
from gpucost_lab.roofline import count_flops
from gpucost_lab.workloads import ClassificationTask, TrainingStep

CHECKS = ("contract", "parity", "memory", "window", "cost")


@pytest.fixture(scope="module")
def promoted():
    return run_plan("batch128-lr-scaled", repeats=3)


def test_lr_scaled_batch_is_promoted_with_every_check_named(promoted):
    d = promoted.decision
    assert d.action == "promote" and d.to == "batch128-lr-scaled"
    assert [r.split(":")[0] for r in d.reasons] == list(CHECKS)
    # the same quality in fewer steps: twice the batch at twice the learning rate reaches 0.85 in 40 steps, not 90
    assert (promoted.baseline.steps_to_target, promoted.candidate.steps_to_target) == (90, 40)
    assert promoted.parity.passed
    ratio = promoted.candidate.cost_to_target_usd.mean / promoted.baseline.cost_to_target_usd.mean
    assert d.cost_ratio == pytest.approx(ratio)
    assert d.cost_ratio_ci95[1] < 1


def test_a_model_faster_per_step_that_misses_the_target_falls_back(tmp_path):
    registry = Registry(tmp_path / "registry.json")
    result = run_plan("tiny-model", repeats=3, registry=registry)
    d = result.decision
    assert d.action == "fallback" and d.to == BASELINE_NAME
    assert not result.parity.passed and any("did not reach the target" in r for r in result.parity.reasons)
    assert any(r.startswith("parity: failed") for r in d.reasons)
    # faster per step by construction: a 32-8-8 MLP does 16x fewer multiply-adds than 32-128-8
    task = ClassificationTask()
    tiny, base = TrainingStep(task, 64, hidden=8), TrainingStep(task, 64, hidden=128)
    assert count_flops(tiny) * 16 == count_flops(base)
    assert registry.current() == BASELINE_NAME


def test_after_a_promotion_an_unsafe_candidate_falls_back_to_the_last_known_good(tmp_path):
    registry = Registry(tmp_path / "registry.json")
    run_plan("batch128-lr-scaled", repeats=3, registry=registry)
    assert registry.last_known_good() == "batch128-lr-scaled"
    d = run_plan("tiny-model", repeats=3, registry=registry).decision
    assert d.action == "fallback" and d.to == "batch128-lr-scaled"
    assert len(Registry(tmp_path / "registry.json").decisions()) == 2


def test_bf16_candidate_decision_follows_its_checks():
    result = run_plan("bf16-autocast", repeats=3)
    assert result.parity.passed  # bf16 autocast reaches the same target in the same 90 steps on this task
    assert (result.decision.action == "promote") == all(result.decision.checks.values())


def test_cli_plan_json_and_report(tmp_path, capsys):
    report = tmp_path / "plan.html"
    assert main(["plan", "--candidate", "tiny-model", "--repeats", "2", "--report", str(report), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"baseline", "candidate", "parity", "memory", "cost_to_target", "decision"} <= set(out)
    assert {"passed", "tolerance", "baseline_metric", "candidate_metric"} <= set(out["parity"])
    assert set(out["memory"]) == {"peak_bytes", "budget_bytes", "fits"}
    assert out["memory"]["budget_bytes"] == 24e9 * 0.9
    assert out["decision"]["action"] == "fallback" and out["decision"]["to"] == BASELINE_NAME
    html = report.read_text()
    assert "fallback" in html and "tiny-model" in html and "parity" in html


def test_cli_plan_unknown_candidate(capsys):
    assert main(["plan", "--candidate", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--candidate" in err and all(name in err for name in CANDIDATES)
