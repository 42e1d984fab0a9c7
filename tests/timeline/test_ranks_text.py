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
    "wait_ms": 20.0,
    "transfer_ms": 30.0,
}
STRAGGLER = {
    "rank": 1,
    "lateness_ms": 30.0,
    "wait_ms": {"value": 20.0, "ci95_low": 15.0, "ci95_high": 26.5},
    "comm_time_ratio": {"value": 1.667, "ci95_low": 1.5, "ci95_high": 1.8},
    "verdict": "straggler",
    "steps": 2,
    "collectives": 4,
}


def _result(steps):
    ranks = [
        {**ROW, "rank": 0, "path": "job/r0.json", "rank_source": "distributedInfo"},
        {**ROW, "rank": 1, "path": "job/r1.json", "rank_source": "distributedInfo", "comm_comp_overlap_share": None},
    ]
    return {
        "device": "cuda",
        "world_size": 8,
        "definitions": "course",
        "ranks": ranks,
        "clock_alignment": "one clock (distributedInfo)",
        "unmatched_kernels": 0,
        "straggler": STRAGGLER if steps else None,
        "stragglers": steps,
    }


def test_a_row_per_rank_then_the_straggler_and_each_steps_late_arrivals():
    step = {"step": 3, "collectives": 2, "latest_rank": 1, "spread_max_ms": 30.0, "spread_mean_ms": 25.0}
    text = render_job(_result([{**step, "wait_mean_ms": 20.0, "comm_time_ratio": 1.667}]))
    lines = text.splitlines()
    assert lines[0] == "cuda job: 2 ranks of a world of 8 (course definitions)"
    rank0 = lines[2].split()
    assert rank0[:4] == ["0", "85.000", "75.000", "10.000"] and rank0[-4:] == ["66.7%", "40.0%", "20.000", "30.000"]
    assert lines[3].split()[-3] == "-"  # no overlap share without communication
    assert "  rank 1: job/r1.json (rank from its distributedInfo)" in lines
    assert any(line.startswith("clocks aligned by: one clock (distributedInfo)") for line in lines)
    said = next(line for line in lines if line.startswith("straggler:"))
    assert "rank 1" in said and "20.000 ms per collective" in said and "15.000-26.500 ms" in said
    assert said.endswith(": straggler")
    assert lines[-1].split() == ["3", "2", "1", "30.000", "25.000", "20.000", "1.667"]


def test_without_a_common_step_it_says_so():
    lines = render_job(_result([])).splitlines()
    assert lines[-1] == "no step with a collective every rank ran: no late arrivals per step"
    assert lines[-2].startswith("straggler: none")
