"""gpucost_lab.loop.phases: phase profiling (chapter 05) on scripted fake clocks, with hand-derived expectations beside
each assertion."""

import itertools

import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.loop import phases
from gpucost_lab.loop.phases import (
    LEVERS,
    MemorySampler,
    PhaseTimer,
    WhatIf,
    latency_percentiles,
    suggest_lever,
    what_if,
)
from gpucost_lab.measure import device as measure_device


class ScriptedClock:
    """Returns the scripted ticks in order and logs every read (and every sync, when used as the synchronizer)."""

    def __init__(self, ticks):
        self.ticks, self.log = iter(ticks), []

    def clock(self):
        self.log.append("clock")
        return next(self.ticks)

    def synchronize(self):
        self.log.append("sync")


def timed(ticks, names):
    fake = ScriptedClock(ticks)
    timer = PhaseTimer(clock=fake.clock, synchronize=fake.synchronize)
    for name in names:
        with timer.phase(name):
            pass
    return timer, fake


def test_balance_from_a_scripted_clock():
    # ticks 0, 2 | 2, 5 | 5, 6: data 2 s, forward_backward 3 s, logging 1 s; wall 6 s
    timer, _ = timed([0, 2, 2, 5, 5, 6], ["data", "forward_backward", "logging"])
    assert timer.seconds == {"data": 2.0, "forward_backward": 3.0, "logging": 1.0}
    assert timer.wall_s == 6.0
    b = timer.balance(price_per_hour_usd=3.60)  # $3.60/h = $0.001/s, so cost = seconds / 1000
    assert list(b.columns) == ["phase", "seconds", "share", "calls", "cost_usd"]
    assert list(b["phase"]) == ["forward_backward", "data", "logging"]  # widest first
    assert list(b["seconds"]) == [3.0, 2.0, 1.0]
    assert list(b["share"]) == pytest.approx([1 / 2, 1 / 3, 1 / 6])
    assert list(b["calls"]) == [1, 1, 1]
    assert list(b["cost_usd"]) == pytest.approx([0.003, 0.002, 0.001])
    assert timer.dominant() == "forward_backward"


def test_default_price_is_the_course_assumption():
    timer, _ = timed([0, 3600], ["data"])  # one hour at $2.10/h
    assert timer.balance()["cost_usd"].tolist() == pytest.approx([2.10])


def test_intervals_keep_every_call_and_calls_accumulate():
    # data 0-1, fb 1-4, data 4-6, fb 6-7: data 1 + 2 = 3 s in 2 calls, fb 3 + 1 = 4 s in 2 calls
    timer, _ = timed([0, 1, 1, 4, 4, 6, 6, 7], ["data", "forward_backward", "data", "forward_backward"])
    iv = timer.intervals
    assert list(iv.columns) == ["phase", "start_s", "end_s", "duration_s"]
    assert iv["phase"].tolist() == ["data", "forward_backward", "data", "forward_backward"]
    assert iv["duration_s"].tolist() == [1.0, 3.0, 2.0, 1.0]
    assert timer.calls == {"data": 2, "forward_backward": 2}
    assert timer.seconds == {"data": 3.0, "forward_backward": 4.0}
    assert timer.balance()["calls"].tolist() == [2, 2]


def test_synchronize_precedes_every_clock_read():
    timer, fake = timed([0, 2, 2, 5, 5, 6], ["data", "forward_backward", "logging"])
    reads = [i for i, e in enumerate(fake.log) if e == "clock"]
    assert len(reads) == 2 * 3  # both reads of each of the 3 phases
    assert all(i > 0 and fake.log[i - 1] == "sync" for i in reads)
    assert fake.log.count("sync") == 6


def test_the_default_synchronizer_comes_from_the_device(monkeypatch):
    asked, calls = [], []

    def synchronizer(device):
        asked.append(device)
        return lambda: calls.append("sync")

    monkeypatch.setattr(measure_device, "synchronizer", synchronizer)
    timer = PhaseTimer(clock=itertools.count().__next__, device="cpu")
    with timer.phase("data"):
        pass
    assert asked == ["cpu"] and calls == ["sync", "sync"]


def test_wall_time_outside_every_phase_is_unaccounted():
    # data 0-1, gap 1-3, forward_backward 3-4: wall 4 s, unaccounted 2 s = half of it
    timer, _ = timed([0, 1, 3, 4], ["data", "forward_backward"])
    b = timer.balance(price_per_hour_usd=3.60)
    assert b["phase"].tolist() == ["data", "forward_backward", "unaccounted"]
    row = b.iloc[-1]
    assert (row["seconds"], row["share"], row["calls"], row["cost_usd"]) == pytest.approx((2.0, 0.5, 0, 0.002))
    assert b["share"].sum() == pytest.approx(1.0)
    assert timer.dominant() == "data"  # a tie: 1 s each, data was recorded first


def test_adjacent_phases_leave_no_unaccounted_row():
    timer, _ = timed([0.1, 0.3, 0.3, 0.6], ["data", "forward_backward"])  # 0.2 + 0.3 = 0.5 up to rounding
    assert "unaccounted" not in timer.balance()["phase"].tolist()


def test_nested_phases_are_an_error_naming_the_phase():
    fake = ScriptedClock(itertools.count())
    timer = PhaseTimer(clock=fake.clock, synchronize=fake.synchronize)
    with pytest.raises(ValueError, match="'eval'.*'forward_backward'"):
        with timer.phase("forward_backward"):
            with timer.phase("eval"):
                pass
    assert timer.calls == {"forward_backward": 1}  # the outer phase's time is still recorded
    with timer.phase("eval"):  # and the timer is usable afterwards
        pass
    assert timer.calls == {"forward_backward": 1, "eval": 1}


def test_a_phase_that_raises_is_still_timed():
    timer = PhaseTimer(clock=iter([0, 5]).__next__, synchronize=lambda: None)
    with pytest.raises(RuntimeError):
        with timer.phase("checkpoint"):
            raise RuntimeError("disk full")
    assert timer.seconds == {"checkpoint": 5}


@pytest.mark.parametrize("name", ["", "unaccounted", None, 3])
def test_bad_phase_names(name):
    timer = PhaseTimer(clock=itertools.count().__next__, synchronize=lambda: None)
    with pytest.raises(ValueError, match="phase name"):
        with timer.phase(name):
            pass


def test_empty_timer_and_bad_arguments():
    timer = PhaseTimer(clock=itertools.count().__next__, synchronize=lambda: None)
    assert timer.wall_s == 0.0
    with pytest.raises(ValueError, match="no phases"):
        timer.balance()
    with pytest.raises(ValueError, match="no phases"):
        timer.dominant()
    with timer.phase("data"):
        pass
    with pytest.raises(ValueError, match="price_per_hour_usd"):
        timer.balance(price_per_hour_usd=0)
    with pytest.raises(ValueError, match="clock"):
        PhaseTimer(clock=1.0)
    with pytest.raises(ValueError, match="synchronize"):
        PhaseTimer(synchronize="yes")
    with pytest.raises(ValueError, match="device"):
        PhaseTimer(device="tpu")
    frozen = PhaseTimer(clock=lambda: 1.0, synchronize=lambda: None)
    with frozen.phase("data"):
        pass
    with pytest.raises(ValueError, match="wall_s"):
        frozen.balance()


def test_a_clock_running_backwards_is_an_error():
    timer = PhaseTimer(clock=iter([5, 3]).__next__, synchronize=lambda: None)
    with pytest.raises(ValueError, match="backwards"):
        with timer.phase("data"):
            pass


def test_perf_counter_by_default():
    timer = PhaseTimer()
    with timer.phase("data"):
        sum(range(1000))
    assert timer.wall_s >= 0 and timer.calls == {"data": 1}


# -- levers and what-if ----------------------------------------------------------------------------------------
def test_every_canonical_phase_has_a_lever():
    assert set(LEVERS) == {"data", "forward_backward", "eval", "checkpoint", "logging"}
    assert "worker" in suggest_lever("data")
    assert "asynchronous" in suggest_lever("checkpoint")
    assert ".item()" in suggest_lever("logging")
    with pytest.raises(ValueError, match="'data', 'forward_backward', 'eval', 'checkpoint', 'logging'.*'optimizer'"):
        suggest_lever("optimizer")


def hundred_second_balance():
    # 100 s: forward_backward 45, eval 30, checkpoint 25
    timer, _ = timed([0, 45, 45, 75, 75, 100], ["forward_backward", "eval", "checkpoint"])
    return timer.balance()


def test_what_if_removing_three_quarters_of_eval():
    w = what_if(hundred_second_balance(), "eval", 0.75)
    # 0.75 x 30 = 22.5 s saved; 100 - 22.5 = 77.5 s; 22.5 / 100 = 22.5%; 22.5 x 2.10 / 3600 = $0.013125
    assert isinstance(w, WhatIf)
    assert w.phase == "eval"
    assert w.seconds_saved == pytest.approx(22.5)
    assert w.new_wall_s == pytest.approx(77.5)
    assert w.wall_reduction_share == pytest.approx(0.225)
    assert w.cost_saved_usd == pytest.approx(0.013125)
    assert w.to_dict()["price_per_hour_usd"] == 2.10


def test_what_if_removing_the_whole_checkpoint():
    w = what_if(hundred_second_balance(), "checkpoint", 1.0, price_per_hour_usd=3.60)
    assert (w.seconds_saved, w.new_wall_s, w.wall_reduction_share, w.cost_saved_usd) == pytest.approx(
        (25.0, 75.0, 0.25, 0.025)
    )


def test_what_if_counts_unaccounted_time_in_the_wall():
    timer, _ = timed([0, 1, 3, 4], ["data", "forward_backward"])  # wall 4 s, 2 s of it unaccounted
    w = what_if(timer.balance(), "data", 1.0)
    assert (w.new_wall_s, w.wall_reduction_share) == pytest.approx((3.0, 0.25))


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"phase": "optimizer", "fraction_removed": 0.5}, "phase"),
        ({"phase": "eval", "fraction_removed": 0.0}, "fraction_removed"),
        ({"phase": "eval", "fraction_removed": 1.5}, "fraction_removed"),
        ({"phase": "eval", "fraction_removed": 0.5, "price_per_hour_usd": -1}, "price_per_hour_usd"),
    ],
)
def test_what_if_rejects_bad_input(kwargs, field):
    with pytest.raises(ValueError, match=field):
        what_if(hundred_second_balance(), **kwargs)


def test_what_if_needs_a_balance():
    with pytest.raises(ValueError, match="balance"):
        what_if({"eval": 30}, "eval", 0.5)


@given(
    seconds=st.lists(st.floats(0.001, 1e4), min_size=1, max_size=6),
    pick=st.integers(0, 5),
    fraction_removed=st.floats(0.0, 1.0, exclude_min=True),
)
def test_optimising_a_phase_saves_at_most_its_share(seconds, pick, fraction_removed):
    """Amdahl: removing a fraction f of a phase with share s of the wall time saves exactly f x s <= s."""
    names = [f"p{i}" for i in range(len(seconds))]
    balance = pd.DataFrame({"phase": names, "seconds": seconds})
    phase = names[pick % len(names)]
    share = seconds[pick % len(names)] / sum(seconds)
    w = what_if(balance, phase, fraction_removed)
    assert w.wall_reduction_share == pytest.approx(fraction_removed * share)
    assert w.wall_reduction_share <= share * (1 + 1e-12)
    assert w.new_wall_s >= sum(seconds) * (1 - share) * (1 - 1e-12)


# -- latency percentiles -------------------------------------------------------------------------------------
def test_percentiles_of_one_to_a_hundred_milliseconds():
    p = latency_percentiles([ms / 1000 for ms in range(1, 101)])
    # linear interpolation at q/100 x (n - 1) of the sorted values (0-based):
    # p50 at 49.5 -> 50 + 0.5 x 1 = 50.5 ms; p90 at 89.1 -> 90.1 ms; p99 at 98.01 -> 99.01 ms; mean 5050/100
    assert p["p50_s"] == pytest.approx(0.0505)
    assert p["p90_s"] == pytest.approx(0.0901)
    assert p["p99_s"] == pytest.approx(0.09901)
    assert p["mean_s"] == pytest.approx(0.0505)
    assert p["count"] == 100


def test_percentiles_of_four_values_and_of_one():
    # [4, 1, 3, 2] sorted 1..4: p50 at 1.5 -> 2.5; p90 at 2.7 -> 3.7; p99 at 2.97 -> 3.97
    p = latency_percentiles([4, 1, 3, 2])
    assert (p["p50_s"], p["p90_s"], p["p99_s"], p["mean_s"], p["count"]) == pytest.approx((2.5, 3.7, 3.97, 2.5, 4))
    assert latency_percentiles([0.2]) == {"p50_s": 0.2, "p90_s": 0.2, "p99_s": 0.2, "mean_s": 0.2, "count": 1}


@pytest.mark.parametrize("bad", [[], [0.1, -0.1], [0.1, float("nan")], [True], ["1"], 0.5])
def test_percentiles_reject_bad_latencies(bad):
    with pytest.raises(ValueError, match="latencies_s"):
        latency_percentiles(bad)


# -- memory sampling -------------------------------------------------------------------------------------------
def test_memory_sampler_on_the_cpu_records_nothing():
    sampler = MemorySampler("cpu")
    assert sampler.available is False
    assert sampler.sample("after forward") is None
    assert sampler.samples.empty
    assert list(sampler.samples.columns) == ["label", "time_s", "allocated_bytes"]
    with pytest.raises(ValueError, match="label"):
        sampler.sample("")
    with pytest.raises(ValueError, match="device"):
        MemorySampler("tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_memory_sampler_sees_a_tensor_on_cuda():
    ticks = iter([1.0, 2.0])
    sampler = MemorySampler("cuda", clock=ticks.__next__)
    before = sampler.sample("before")
    x = torch.empty(1024 * 1024, dtype=torch.float32, device="cuda")  # 4 MiB, a multiple of the 512-byte block
    after = sampler.sample("after")
    assert after - before == 4 * 1024 * 1024
    assert sampler.samples["label"].tolist() == ["before", "after"]
    assert sampler.samples["time_s"].tolist() == [1.0, 2.0]
    del x


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_phase_timer_synchronizes_cuda_by_default():
    timer = PhaseTimer(device="cuda")
    a = torch.randn(2048, 2048, device="cuda")
    with timer.phase("forward_backward"):
        for _ in range(10):
            a = a @ a / 2048
    with timer.phase("logging"):
        a.sum().item()
    assert timer.calls == {"forward_backward": 1, "logging": 1}
    assert timer.dominant() == "forward_backward"  # the queued matmuls are charged where they were launched


def test_the_phases_are_named_once():
    from gpucost_lab.loop import simulated as training_sim

    assert phases.PHASES == ("data", "forward_backward", "eval", "checkpoint", "logging")
    assert training_sim.PHASES is phases.PHASES and tuple(LEVERS) == phases.PHASES


def test_balance_table_by_hand():
    # data 2 s in 3 calls, eval 5 s, checkpoint 2 s; wall 10 s leaves 1 s outside every phase; $3.60/h = $0.001/s
    seconds, calls = {"data": 2.0, "eval": 5.0, "checkpoint": 2.0}, {"data": 3, "eval": 1, "checkpoint": 1}
    b = phases.balance_table(seconds, calls, wall_s=10.0, price_per_hour_usd=3.60)
    assert list(b["phase"]) == ["eval", "data", "checkpoint", "unaccounted"]  # a tie keeps the order given
    assert list(b["seconds"]) == pytest.approx([5.0, 2.0, 2.0, 1.0])
    assert list(b["share"]) == pytest.approx([0.5, 0.2, 0.2, 0.1])
    assert list(b["calls"]) == [1, 3, 1, 0]
    assert list(b["cost_usd"]) == pytest.approx([0.005, 0.002, 0.002, 0.001])


@pytest.mark.parametrize(
    "args, field",
    [
        (({}, {}, 1.0), "seconds"),
        (({"data": 1.0}, {"eval": 1}, 1.0), "calls"),
        (({"data": -1.0}, {"data": 1}, 1.0), "seconds"),
        (({"data": 1.0}, {"data": 1.5}, 1.0), "calls"),
        (({"data": 1.0}, {"data": 1}, 0.0), "wall_s"),
        (({"unaccounted": 1.0}, {"unaccounted": 1}, 1.0), "phase name"),
        (({"data": 1.0}, {"data": 1}, 1.0, 0), "price_per_hour_usd"),
    ],
)
def test_balance_table_rejects_bad_input(args, field):
    with pytest.raises(ValueError, match=field):
        phases.balance_table(*args)
