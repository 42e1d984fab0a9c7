"""Per-learner variants of the labs (gpucost_lab.course.variants), computed from their simulated runs: the id comes
from the grader's variable, then the hub's; an id always gives the same numbers; and every learner's job has one
clear answer per question that differs from the self-study answer by more than the checks' tolerance (so numbers
copied from a run of solutions/ score 0)."""

import dataclasses
import tempfile
from pathlib import Path

import pytest
from labtools import plain_run

from gpucost_lab.course.variants import LEARNER_ENV, SELF_STUDY_LOOP, SELF_STUDY_PLAN, current_learner, lab_variant
from gpucost_lab.loop.simulated import LOOP_LEVERS, SimulatedTrainingLoop
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.simulate.write import write_trace
from gpucost_lab.timeline import busy_idle, load_trace

from .helpers import IDS

pytestmark = pytest.mark.slow

LEVER_PHASES = {"eval", "checkpoint"}
# the bottleneck knobs lab 2 lists (SimConfig fields that create a bottleneck)
BOTTLENECK_KNOBS = ["num_workers", "pin_memory", "item_sync", "eval_every", "checkpoint_every", "mixed_precision"]


def _totals(loop: SimulatedTrainingLoop) -> dict:
    """Seconds per phase, summed from the loop's own call history after a plain run."""
    return plain_run(loop).history.groupby("phase")["duration_s"].sum().to_dict()


def test_the_id_comes_from_the_grader_s_variable_then_the_hub(monkeypatch):
    monkeypatch.delenv(LEARNER_ENV, raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    assert current_learner() is None
    monkeypatch.setenv("JUPYTERHUB_USER", "hubuser")
    assert current_learner() == "hubuser"
    assert lab_variant("profile_training_loop") == lab_variant("profile_training_loop", "hubuser")
    monkeypatch.setenv(LEARNER_ENV, "graded")
    assert current_learner() == "graded"
    monkeypatch.setenv(LEARNER_ENV, "")  # set but empty: the grader's way of saying "the self-study lab"
    assert current_learner() is None
    assert lab_variant("profile_training_loop") is SELF_STUDY_LOOP


def test_an_id_always_gives_the_same_numbers_and_ids_differ():
    for lab in ("profile_training_loop", "optimization_plan"):
        assert lab_variant(lab, "alice") == lab_variant(lab, "alice")
        assert len({lab_variant(lab, i) for i in IDS}) > len(IDS) // 2


def test_every_learner_s_loop_job_has_clear_answers_away_from_the_self_study_ones():
    study = _totals(SELF_STUDY_LOOP.loop())
    study_wall = sum(study.values())
    largest_seen, fits_seen = set(), set()
    for learner in IDS:
        job = lab_variant("profile_training_loop", learner)
        assert job.learner == learner and job.price_per_hour_usd != 2.10
        totals = _totals(job.loop())
        wall = sum(totals.values())
        overheads = sorted(((totals[p], p) for p in totals if p != "forward_backward"), reverse=True)
        (top, largest), (second, _) = overheads[0], overheads[1]
        assert largest in LEVER_PHASES and top >= 1.25 * second, (learner, overheads)
        largest_seen.add(largest)
        # each numeric answer is off by more than its check allows (0.005 for shares, $0.01 for dollars)
        overhead = (totals["eval"] + totals["checkpoint"]) / wall
        assert abs(overhead - (study["eval"] + study["checkpoint"]) / study_wall) > 0.005
        assert abs(top / wall - study[largest] / study_wall) > 0.005
        assert abs(wall / 3600 * job.price_per_hour_usd - study_wall / 3600 * 2.10) > 0.01
        for lever, (phase, _) in LOOP_LEVERS.items():
            if phase == largest:
                after_h = sum(_totals(job.loop().with_lever(lever)).values()) / 3600
                assert abs(after_h - job.window_hours) >= 0.1, (learner, lever, after_h, job.window_hours)
                fits_seen.add(after_h <= job.window_hours)
    assert largest_seen == LEVER_PHASES and fits_seen == {True, False}  # the answers differ between learners


def _idle_and_busy_after(config) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        stall = busy_idle(load_trace(write_trace(config, Path(d) / "a.json.gz")))
        fixed = busy_idle(load_trace(write_trace(dataclasses.replace(config, num_workers=4), Path(d) / "b.json.gz")))
    return stall.idle_us / stall.span_us, fixed.busy_us / fixed.span_us


def test_every_learner_s_plan_job_keeps_the_lesson_and_moves_the_numbers():
    study_idle, _ = _idle_and_busy_after(SELF_STUDY_PLAN.stall_config)
    healthy = SCENARIOS["healthy"]
    for learner in IDS[:6]:
        job = lab_variant("optimization_plan", learner)
        assert 1 <= job.train_seed <= 19  # the seeds train_to_target's fine_within was measured on
        assert job.reserve_fraction != 0.10 and job.price_per_hour_usd != 2.10
        # the loader is still the one bottleneck knob that separates the stalled run from the healthy one
        assert [k for k in BOTTLENECK_KNOBS if getattr(job.stall_config, k) != getattr(healthy, k)] == ["num_workers"]
        idle, busy_after = _idle_and_busy_after(job.stall_config)
        assert abs(idle - study_idle) > 0.005  # the check's tolerance
        assert busy_after > 1 - idle  # more loader workers raise the busy share
