"""gpucost_lab.loop.simulated: the simulated training loop (chapter 05 and the lab "Profile a Training Loop"), against
the hand estimates of tests/loop/helpers.py (CPU durations jittered by +-5%, hence the tolerances), brute-force counts
and the loop's own record of its calls.
"""

import dataclasses
import math

import pandas as pd
import pytest
from labtools import plain_run

from gpucost_lab import InputError
from gpucost_lab.loop.costs import TIME_SCALE
from gpucost_lab.loop.phases import PHASES, PhaseTimer, balance_table
from gpucost_lab.loop.simulated import (
    LOOP_LEVERS,
    LOOP_SCENARIOS,
    LoopScenario,
    SimulatedTrainingLoop,
    run_instrumented,
)

from .helpers import HAND_S


def instrumented(scenario="eval_checkpoint_heavy", **kw):
    loop = SimulatedTrainingLoop(scenario, **kw)
    return loop, _learner_pass(loop, PhaseTimer(clock=loop.clock))


def record_balance(loop):
    """The balance of ``loop``'s run so far from the loop's own record of its calls (``history``), not a timer's."""
    history = loop.history
    seconds = history.groupby("phase", sort=False)["duration_s"].sum().to_dict()
    calls = history["phase"].value_counts().to_dict()
    return balance_table(seconds, {p: int(calls[p]) for p in seconds}, loop.clock(), loop.price_per_hour_usd)


def truth(loop):
    """The balance of a whole run of ``loop``, on a fresh copy of it (same scenario, steps, seed, price, levers)."""
    return record_balance(
        plain_run(SimulatedTrainingLoop(loop._base, loop.steps, loop.seed, loop.price_per_hour_usd, loop.levers))
    )


def total_s(loop):
    return truth(loop)["seconds"].sum()


def shares(balance):
    return dict(zip(balance["phase"], balance["share"]))


def seconds(balance):
    return dict(zip(balance["phase"], balance["seconds"]))


@pytest.mark.parametrize("scenario", list(LOOP_SCENARIOS))
def test_the_instrumented_loop_gives_the_uninstrumented_total(scenario):
    loop, timer = instrumented(scenario)
    assert timer.wall_s == plain_run(SimulatedTrainingLoop(scenario)).clock() == loop.clock()
    assert "unaccounted" not in timer.balance()["phase"].tolist()  # the phases partition the loop's time


def test_run_instrumented_is_the_same_loop():
    loop, timer = instrumented()
    fresh = SimulatedTrainingLoop()
    run_instrumented(fresh, PhaseTimer(clock=fresh.clock))
    assert fresh.history.equals(loop.history)
    other = SimulatedTrainingLoop(steps=40)
    assert isinstance(run_instrumented(other, PhaseTimer(clock=other.clock)), PhaseTimer)


@pytest.mark.parametrize("scenario", list(LOOP_SCENARIOS))
def test_the_timer_agrees_with_the_loop_s_own_record(scenario):
    """Two independent paths: the learner's PhaseTimer on the loop's clock, the loop's own record of its calls."""
    loop, timer = instrumented(scenario)
    measured, recorded = timer.balance(), record_balance(loop)
    assert measured["phase"].tolist() == recorded["phase"].tolist()
    assert measured["calls"].tolist() == recorded["calls"].tolist()
    for column in ("seconds", "share", "cost_usd"):
        assert measured[column].tolist() == pytest.approx(recorded[column].tolist(), rel=1e-9)


def test_the_loop_hands_out_no_truth_of_its_own():
    # the lab's expected answers are the grader's (gpucost_lab.grading.truth): no method of the learner's loop
    # returns a balance or a wall time of a run it has not made
    loop = SimulatedTrainingLoop()
    assert not [name for name in ("reference_balance", "run_uninstrumented") if hasattr(loop, name)]
    assert [name for name in dir(loop) if not name.startswith("_") and callable(getattr(loop, name))] == [
        "clock",
        "evaluate",
        "forward_backward",
        "load_batch",
        "log_metrics",
        "save_checkpoint",
        "should_checkpoint",
        "should_evaluate",
        "utilization",
        "window_balance",
        "with_lever",
    ]


def test_calls_follow_the_schedule():
    # 2000 steps; eval every 25 -> 80 evals; checkpoint every 100 -> 20 saves
    _, timer = instrumented("eval_checkpoint_heavy")
    assert timer.calls == {"data": 2000, "forward_backward": 2000, "logging": 2000, "eval": 80, "checkpoint": 20}
    _, timer = instrumented("healthy")  # eval every 250 -> 8; checkpoint every 1000 -> 2
    assert timer.calls == {"data": 2000, "forward_backward": 2000, "logging": 2000, "eval": 8, "checkpoint": 2}
    loop = SimulatedTrainingLoop("eval_checkpoint_heavy", steps=100)
    assert [s for s in range(1, 101) if loop.should_evaluate(s)] == [25, 50, 75, 100]
    assert [s for s in range(1, 101) if loop.should_checkpoint(s)] == [100]


def test_per_call_durations_match_the_hand_estimates():
    heavy, stall = SimulatedTrainingLoop("eval_checkpoint_heavy"), SimulatedTrainingLoop("data_stall")
    assert TIME_SCALE == 1000
    assert heavy.per_call_s["forward_backward"] == pytest.approx(HAND_S["forward_backward"], rel=0.03)
    assert heavy.per_call_s["eval"] == pytest.approx(64 * HAND_S["eval_batch"], rel=0.03)  # 22.7 s
    assert heavy.per_call_s["checkpoint"] == pytest.approx(HAND_S["checkpoint"], rel=0.05)
    assert heavy.per_call_s["data"] == pytest.approx(HAND_S["data_workers"], rel=0.05)
    assert heavy.per_call_s["logging"] == pytest.approx(HAND_S["logging"], rel=1e-9)
    assert stall.per_call_s["data"] == pytest.approx(HAND_S["data_no_workers"], rel=0.05)
    assert stall.per_call_s["forward_backward"] == pytest.approx(HAND_S["forward_backward"], rel=0.03)
    asynchronous = heavy.with_lever("async_checkpoint")
    assert asynchronous.per_call_s["checkpoint"] == pytest.approx(HAND_S["async_checkpoint"], rel=1e-9)


def hand_total_s(data_s, steps, evals, checkpoints):
    per_step = data_s + HAND_S["forward_backward"] + HAND_S["logging"]
    return steps * per_step + evals * 64 * HAND_S["eval_batch"] + checkpoints * HAND_S["checkpoint"]


def test_eval_and_checkpoint_take_about_55_percent_of_the_heavy_loop():
    loop, timer = instrumented("eval_checkpoint_heavy")
    s = shares(timer.balance())
    assert 0.50 <= s["eval"] + s["checkpoint"] <= 0.60
    recorded = shares(record_balance(loop))
    assert recorded["eval"] + recorded["checkpoint"] == pytest.approx(s["eval"] + s["checkpoint"], rel=1e-9)
    # by hand: 2000 x 2.2458 = 4491.6 s of steps, 80 x 22.73 = 1818.6 s of eval, 20 x 185 = 3700 s of checkpoint:
    # 10,010 s, of which eval + checkpoint 5518.6 s = 55.1%
    assert timer.wall_s == pytest.approx(hand_total_s(HAND_S["data_workers"], 2000, 80, 20), rel=0.03)
    assert (s["eval"] + s["checkpoint"]) == pytest.approx(0.551, abs=0.02)


def test_data_dominates_the_stalled_loop():
    loop, timer = instrumented("data_stall")
    assert timer.dominant() == "data" == record_balance(loop)["phase"].iloc[0]
    # by hand: data 2000 x 5.24 = 10,480 s of 2000 x 7.3658 + 8 x 22.73 + 2 x 185 = 15,283 s: 68.6%
    assert shares(timer.balance())["data"] == pytest.approx(0.686, abs=0.02)
    assert timer.wall_s == pytest.approx(hand_total_s(HAND_S["data_no_workers"], 2000, 8, 2), rel=0.03)


def test_the_step_dominates_the_healthy_loop():
    loop, timer = instrumented("healthy")
    s = shares(timer.balance())
    assert timer.dominant() == "forward_backward" and s["forward_backward"] > 0.70
    assert shares(record_balance(loop))["forward_backward"] == pytest.approx(s["forward_backward"], rel=1e-9)
    # by hand: 2000 x 2.1028 = 4205.6 s of 2000 x 2.2458 + 8 x 22.73 + 2 x 185 = 5043 s: 83.4%
    assert s["forward_backward"] == pytest.approx(0.834, abs=0.02)


def test_deterministic_for_scenario_steps_and_seed():
    a, b = SimulatedTrainingLoop(seed=3, steps=300), SimulatedTrainingLoop(seed=3, steps=300)
    plain_run(a), plain_run(b)
    assert a.history.equals(b.history)
    assert a.device_busy_intervals.equals(b.device_busy_intervals)
    c = SimulatedTrainingLoop(seed=4, steps=300)
    plain_run(c)
    assert c.clock() != a.clock()
    assert c.clock() == pytest.approx(a.clock(), rel=0.05)  # only the +-5% jitter differs
    durations = a.history["duration_s"] / a.history["phase"].map(a.per_call_s)
    assert durations.between(0.95, 1.05).all()


LEVER_CASES = [  # (scenario, lever, targeted phase, expected seconds of that phase after / before, by hand)
    ("eval_checkpoint_heavy", "eval_less_often", "eval", 20 / 80),  # every 100 steps: 20 evals, not 80
    ("eval_checkpoint_heavy", "smaller_eval_set", "eval", 16 / 64),  # 16 held-out batches, not 64
    ("eval_checkpoint_heavy", "async_checkpoint", "checkpoint", 16.114 / 185.0),  # blocks for the pinned copy only
    ("eval_checkpoint_heavy", "checkpoint_less_often", "checkpoint", 10 / 20),  # every 200 steps: 10, not 20
    ("data_stall", "more_loader_workers", "data", 0.120 / 5.240),  # the workers decode ahead
]


@pytest.mark.parametrize("scenario, lever, phase, ratio", LEVER_CASES)
def test_each_lever_shrinks_its_phase_and_the_total(scenario, lever, phase, ratio):
    base = SimulatedTrainingLoop(scenario)
    better = base.with_lever(lever)
    assert better.levers == (lever,) and base.levers == ()
    before, after = seconds(truth(base)), seconds(truth(better))
    assert after[phase] < before[phase]
    assert total_s(better) < total_s(base)
    assert after[phase] / before[phase] == pytest.approx(ratio, rel=0.1)  # +-5% jitter on each side
    for other in set(before) - {phase}:  # the k-th call of every other phase lasts exactly as long as before
        assert after[other] == pytest.approx(before[other], rel=1e-12)
    saved = total_s(base) - total_s(better)
    assert saved == pytest.approx(before[phase] - after[phase], rel=1e-9)  # Amdahl: only that phase shrank


def test_a_paired_lever_is_exact_where_the_calls_are_the_same():
    base = truth(SimulatedTrainingLoop())
    smaller = truth(SimulatedTrainingLoop().with_lever("smaller_eval_set"))
    assert seconds(smaller)["eval"] == pytest.approx(seconds(base)["eval"] / 4, rel=1e-12)  # 16 of 64 batches


def test_levers_stack_and_are_named():
    loop = SimulatedTrainingLoop().with_lever("async_checkpoint").with_lever("eval_less_often")
    assert loop.levers == ("async_checkpoint", "eval_less_often")
    assert loop.schedule.eval_every == 100 and loop.schedule.checkpoint_every == 100
    assert total_s(loop) < total_s(SimulatedTrainingLoop().with_lever("async_checkpoint"))
    with pytest.raises(ValueError, match="already applied"):
        loop.with_lever("eval_less_often")
    names = "'eval_less_often', 'smaller_eval_set', 'async_checkpoint', 'checkpoint_less_often', 'more_loader_workers'"
    with pytest.raises(ValueError, match=f"lever must be one of {names}, got 'faster_gpu'"):
        loop.with_lever("faster_gpu")
    with pytest.raises(ValueError, match="lever"):
        SimulatedTrainingLoop(levers=("eval_less_often", "eval_less_often"))
    assert set(LOOP_LEVERS) >= {
        "eval_less_often",
        "smaller_eval_set",
        "async_checkpoint",
        "checkpoint_less_often",
        "more_loader_workers",
    }
    assert all(phase in PHASES for phase, _ in LOOP_LEVERS.values())


# -- the device timeline -----------------------------------------------------------------------------------------
def test_the_gpu_is_busy_only_inside_forward_backward_and_eval():
    loop = SimulatedTrainingLoop(steps=100)
    plain_run(loop)
    calls, busy = loop.history, loop.device_busy_intervals
    assert set(busy["phase"]) == {"forward_backward", "eval"}
    working = calls[calls["phase"].isin(["forward_backward", "eval"])].reset_index(drop=True)
    assert len(busy) == len(working)
    assert (busy["phase"] == working["phase"]).all()
    assert (busy["start_s"] >= working["start_s"]).all() and (busy["end_s"] <= working["end_s"]).all()
    # by hand: kernels 1716 us of a 2126 us synchronized step (81%); eval is nearly all kernels
    fb = busy[busy["phase"] == "forward_backward"]
    fb_calls = working[working["phase"] == "forward_backward"]
    assert (fb["end_s"] - fb["start_s"]).sum() / (fb_calls["end_s"] - fb_calls["start_s"]).sum() == pytest.approx(
        1716 / 2126, rel=0.02
    )


def brute_force_utilization(loop, bin_s):
    """Bin by bin with plain loops: busy seconds and each phase's seconds overlapping the bin."""
    total, rows, start = loop.clock(), [], 0.0
    busy = list(loop.device_busy_intervals.itertuples(index=False))
    calls = list(loop.history.itertuples(index=False))
    while start < total:
        end = min(start + bin_s, total)

        def overlap(s, e, start=start, end=end):
            return max(0.0, min(e, end) - max(s, start))

        used = sum(overlap(b.start_s, b.end_s) for b in busy)
        by_phase = {p: sum(overlap(c.start_s, c.end_s) for c in calls if c.phase == p) for p in PHASES}
        rows.append((start, end, used / (end - start), max(by_phase, key=by_phase.get)))
        start = end
    return pd.DataFrame(rows, columns=["start_s", "end_s", "gpu_utilization", "phase"])


def test_utilization_bins_agree_with_a_brute_force_count():
    loop = SimulatedTrainingLoop(steps=120)
    plain_run(loop)
    fast, slow = loop.utilization(bin_s=7.0), brute_force_utilization(loop, 7.0)
    assert list(fast.columns) == ["start_s", "end_s", "gpu_utilization", "phase"]
    assert len(fast) == len(slow) == math.ceil(loop.clock() / 7.0)
    assert fast["gpu_utilization"].tolist() == pytest.approx(slow["gpu_utilization"].tolist(), abs=1e-9)
    assert fast["phase"].tolist() == slow["phase"].tolist()
    whole = loop.utilization(bin_s=1e9)  # one bin: all busy time over the run
    busy = loop.device_busy_intervals
    assert whole["gpu_utilization"].tolist() == pytest.approx([(busy["end_s"] - busy["start_s"]).sum() / loop.clock()])


def test_utilization_shows_the_checkpoint_as_idle_gpu_and_eval_as_busy_gpu():
    """Correlate low utilization with what was happening: checkpoints leave the GPU idle. Eval, on the other hand,
    keeps it busy (forward passes on resident data) while training stands still: a busy GPU is not a useful one."""
    loop, _ = instrumented("eval_checkpoint_heavy")
    u = loop.utilization(bin_s=10.0)
    mean = u.groupby("phase")["gpu_utilization"].mean()
    assert mean["checkpoint"] < 0.05
    assert mean["eval"] > 0.90
    # by hand: a training step is 2.246 s with 1.716 s of kernels: 76%
    assert mean["forward_backward"] == pytest.approx(1.716 / 2.246, abs=0.05)
    low = u[u["gpu_utilization"] < 0.2]
    assert (low["phase"] == "checkpoint").mean() > 0.9  # nearly every idle bin is a checkpoint
    stalled, _ = instrumented("data_stall", steps=200)
    s = stalled.utilization(bin_s=5.0)
    assert (s[s["gpu_utilization"] < 0.4]["phase"] == "data").mean() > 0.9  # the stall shows up as idle bins


# -- input checks --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"scenario": "slow"}, "scenario"),
        ({"steps": 0}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"steps": 10**7}, "steps"),
        ({"seed": -1}, "seed"),
        ({"price_per_hour_usd": 0}, "price_per_hour_usd"),
        ({"levers": ("turbo",)}, "lever"),
    ],
)
def test_bad_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SimulatedTrainingLoop(**kwargs)


def test_bad_steps_bins_and_reruns():
    loop = SimulatedTrainingLoop(steps=10)
    for bad in (0, 11, 1.5):
        with pytest.raises(ValueError, match="step"):
            loop.should_evaluate(bad)
        with pytest.raises(ValueError, match="step"):
            loop.should_checkpoint(bad)
    with pytest.raises(ValueError, match="not run yet"):
        loop.utilization(bin_s=1.0)
    run_instrumented(loop, PhaseTimer(clock=loop.clock))
    with pytest.raises(ValueError, match="bin_s"):
        loop.utilization(bin_s=0)
    with pytest.raises(ValueError, match="already run"):
        run_instrumented(loop, PhaseTimer(clock=loop.clock))
    with pytest.raises(ValueError, match="loop"):
        run_instrumented("loop", PhaseTimer())


def test_scenarios_describe_themselves():
    assert set(LOOP_SCENARIOS) == {"healthy", "data_stall", "eval_checkpoint_heavy"}
    assert LOOP_SCENARIOS["data_stall"].sim_scenario == "dataloader_stall"
    loop = SimulatedTrainingLoop("healthy", steps=12)
    assert loop.steps == 12 and loop.schedule.steps == 12
    assert "healthy" in repr(loop)


def test_a_loop_with_a_schedule_of_its_own_runs_that_schedule():
    schedule = dataclasses.replace(
        LOOP_SCENARIOS["eval_checkpoint_heavy"],
        name="mine",
        steps=400,
        eval_every=40,
        eval_batches=10,
        checkpoint_every=200,
    )
    loop = SimulatedTrainingLoop(schedule)
    _learner_pass(loop, PhaseTimer(clock=loop.clock))
    calls = loop.history["phase"].value_counts().to_dict()
    assert calls == {"data": 400, "forward_backward": 400, "logging": 400, "eval": 400 // 40, "checkpoint": 400 // 200}
    assert loop.with_lever("eval_less_often").schedule.eval_every == 160  # 4x as many steps, as LOOP_LEVERS says
    with pytest.raises(ValueError, match="scenario.eval_every"):
        SimulatedTrainingLoop(dataclasses.replace(schedule, eval_every=0))


def test_the_loop_s_record_is_the_timer_s_table():
    small = LoopScenario("small", "healthy", steps=4, eval_every=2, eval_batches=1, checkpoint_every=4, description="")
    loop = SimulatedTrainingLoop(small)
    ref = truth(loop)
    # 4 steps: data, forward_backward and logging every step; eval after steps 2 and 4; one checkpoint after step 4
    assert dict(zip(ref["phase"], ref["calls"])) == {
        "data": 4,
        "forward_backward": 4,
        "eval": 2,
        "checkpoint": 1,
        "logging": 4,
    }
    assert set(ref["phase"]) == set(PHASES) and ref["share"].sum() == pytest.approx(1.0)  # no time outside a phase
    timer = run_instrumented(loop, PhaseTimer(clock=loop.clock))
    pd.testing.assert_frame_equal(timer.balance(loop.price_per_hour_usd), ref)


def _learner_pass(loop, timer):
    """The lab's section-1 answer, as a learner writes it (run_instrumented refuses a loop that has run)."""
    for step in range(1, loop.steps + 1):  # the learner's loop, written out as the lab asks
        with timer.phase("data"):
            loop.load_batch()
        with timer.phase("forward_backward"):
            loop.forward_backward()
        if loop.should_evaluate(step):
            with timer.phase("eval"):
                loop.evaluate()
        if loop.should_checkpoint(step):
            with timer.phase("checkpoint"):
                loop.save_checkpoint()
        with timer.phase("logging"):
            loop.log_metrics()
    return timer


def test_running_the_loop_again_replays_the_same_numbers():
    """A cell re-run (or copied and run) passes through the loop again: every phase lasts what it did the first
    time, and the history and utilization are the new pass's, from 0 s. The truth is a fresh loop's."""
    loop = SimulatedTrainingLoop("eval_checkpoint_heavy", steps=300, seed=7)
    first = truth(loop).set_index("phase")["seconds"]
    passes = []
    for _ in range(3):
        timer = _learner_pass(loop, PhaseTimer(clock=loop.clock))
        passes.append((timer, loop.history.copy(), loop.utilization(bin_s=10).copy()))
    for timer, history, utilization in passes:
        assert timer.wall_s == pytest.approx(first.sum(), rel=1e-9)
        for phase, seconds in first.items():
            assert timer.seconds[phase] == pytest.approx(seconds, rel=1e-9, abs=1e-9)
        assert history["start_s"].iloc[0] == 0.0 and len(history) == len(passes[0][1])
        pd.testing.assert_frame_equal(history, passes[0][1], rtol=1e-9)
        pd.testing.assert_frame_equal(utilization, passes[0][2], rtol=1e-9)


# -- a window of the run (chapter 05, "Profile the run you pay for"): against plain sums and the true balance ------
@pytest.fixture(scope="module")
def fixed():
    loop = SimulatedTrainingLoop("data_stall", steps=1100).with_lever("more_loader_workers")
    run_instrumented(loop, PhaseTimer(clock=loop.clock))
    return loop


def test_the_whole_run_as_a_window_is_the_true_balance(fixed):
    whole = fixed.window_balance(0.0, fixed.clock())
    whole_run = truth(fixed)
    assert list(whole["phase"]) == list(whole_run["phase"])
    assert whole["seconds"].to_numpy() == pytest.approx(whole_run["seconds"].to_numpy(), rel=1e-12)
    assert list(whole["calls"]) == list(whole_run["calls"])


def test_a_window_inside_the_checkpoint_blames_the_checkpoint_alone(fixed):
    h = fixed.history
    save = h[h["phase"] == "checkpoint"].iloc[0]  # after step 1000
    table = fixed.window_balance(save["start_s"] + 10, save["start_s"] + 70)
    assert list(table["phase"]) == ["checkpoint"] and table["share"].iloc[0] == pytest.approx(1.0)
    assert table["seconds"].iloc[0] == pytest.approx(60.0)


def test_a_window_across_phases_sums_the_clipped_calls_by_hand(fixed):
    h = fixed.history
    lo, hi = 500.0, 800.0
    by_hand = {}
    for row in h.itertuples():
        inside = min(row.end_s, hi) - max(row.start_s, lo)
        if inside > 0:
            by_hand[row.phase] = by_hand.get(row.phase, 0.0) + inside
    table = fixed.window_balance(lo, hi).set_index("phase")
    assert set(table.index) == set(by_hand)
    for phase, seconds in by_hand.items():
        assert table.loc[phase, "seconds"] == pytest.approx(seconds)
    assert table["share"].sum() == pytest.approx(1.0)


@pytest.mark.parametrize(("lo", "hi"), [(-1.0, 10.0), (10.0, 10.0), (0.0, 1e12), (float("nan"), 1.0), ("0", 1.0)])
def test_a_window_outside_the_run_is_refused(fixed, lo, hi):
    with pytest.raises(InputError) as err:
        fixed.window_balance(lo, hi)
    assert err.value.field == "end_s"
