"""The text of `gpucost-lab analyze DIR` (gpucost_lab.timeline.ranks_text.render_job), from a result written here."""

from __future__ import annotations

from gpucost_lab.timeline.ranks_text import render_job

ROW = {
    "span_ms": 85.0,
    "busy_ms": 75.0,
    "idle_ms": 10.0,
    "idle_host_wait_ms": 0.0,
    "idle_kernel_wait_ms": 0.0,
    "idle_other_ms": 40.0,
    "computation_ms": 45.0,
    "communication_ms": 50.0,
    "memory_ms": 0.0,
    "communication_share": 50 / 75,
    "comm_comp_overlap_share": 0.4,
}


def _result(steps):
    ranks = [
        {**ROW, "rank": 0, "path": "job/r0.json", "rank_source": "distributedInfo"},
        {**ROW, "rank": 1, "path": "job/r1.json", "rank_source": "distributedInfo", "comm_comp_overlap_share": None},
    ]
    return {"device": "cuda", "world_size": 8, "definitions": "course", "ranks": ranks, "stragglers": steps}


def test_a_row_per_rank_then_the_straggler_of_each_step():
    step = {"step": 3, "slowest_rank": 1, "slowest_ms": 130.0, "fastest_rank": 0, "fastest_ms": 100.0}
    text = render_job(_result([{**step, "wait_max_ms": 30.0, "wait_mean_ms": 30.0}]))
    lines = text.splitlines()
    assert lines[0] == "cuda job: 2 ranks of a world of 8 (course definitions)"
    rank0 = lines[2].split()
    assert rank0[:4] == ["0", "85.000", "75.000", "10.000"] and rank0[-2:] == ["66.7%", "40.0%"]
    assert lines[3].split()[-1] == "-"  # no overlap share without communication
    assert "  rank 1: job/r1.json (rank from its distributedInfo)" in lines
    assert lines[-1].split() == ["3", "1", "130.000", "0", "100.000", "30.000", "30.000"]


def test_without_a_common_step_it_says_so():
    assert render_job(_result([])).splitlines()[-1] == "no ProfilerStep#N common to every rank: no straggler per step"
