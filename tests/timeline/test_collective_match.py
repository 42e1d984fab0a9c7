"""Communication kernels matched across ranks (gpucost_lab.timeline.collective_match): each rank's kernels by step,
the clocks aligned as the files allow, and a collective not every rank ran left out and counted."""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.timeline.collective_match import rank_collectives

from .delayed_ranks import ALL_REDUCE, schedule, write_job, write_rank
from .test_ranks import NCCL, _rank_trace


def test_a_ranks_communication_kernels_by_step_and_order(tmp_path):
    write_job(tmp_path, 2, delayed=1, steps=2, collectives=3, kernels=2)
    kernels = rank_collectives(tl.load_trace(tmp_path / "rank0.json"))
    # 2 steps x 3 all-reduces; the 2 gemms before each are computation, not listed
    assert kernels["step"].tolist() == [1, 1, 1, 2, 2, 2] and kernels["collective"].tolist() == [0, 1, 2] * 2
    assert set(kernels["name"]) == {ALL_REDUCE}
    assert kernels["dur_us"].tolist() == pytest.approx([2_500.0] * 6)  # rank 0 waits 2,000 us + the 500 us transfer


def test_the_sampled_rank_has_five_sendrecv_kernels_per_step():
    kernels = rank_collectives(tl.load_trace(tl.example_trace("sampled_rank0_gpu")))
    # the file's ten ncclKernel_SendRecv kernels, five launched in each ProfilerStep (551, 552)
    assert kernels.groupby("step").size().to_dict() == {551: 5, 552: 5}
    assert kernels["dur_us"].sum() == 30669 + 62783 + 11727 + 47652 + 42496 + 67827 + 21124 + 12119 + 36158 + 63644


def test_the_clocks_are_aligned_by_base_time_or_by_the_first_collectives_end(tmp_path):
    plan = schedule(3, delayed=0, delay_us=1_500.0, start_us=10_000_000.0)
    shift_us = {0: 0.0, 1: 7_000_000.0, 2: 3_000.0}  # each file's clock counts from another origin
    based, unnamed = tmp_path / "based", tmp_path / "unnamed"
    for r, shift in shift_us.items():
        write_rank(based / f"rank{r}.json", r, plan, world_size=3, base_time_ns=int(shift * 1e3), shift_us=shift)
        write_rank(unnamed / f"job_rank{r}.json", r, plan, world_size=3, says_rank=False, shift_us=shift)
    for folder, alignment in ((based, "baseTimeNanoseconds"), (unnamed, "first collective's end")):
        job = tl.load_ranks(folder, workers=1)
        assert tl.analyze_ranks(job)["clock_alignment"] == alignment
        assert tl.collectives(job)["spread_us"].to_numpy() == pytest.approx(1_500.0)
        assert tl.straggler(job).rank == 0


def test_a_collective_one_rank_did_not_run_is_left_out_and_counted(tmp_path):
    write_job(tmp_path, 2, delayed=1, collectives=3)
    short = schedule(2, delayed=1)
    short = [(s, e, blocks[:2]) for s, e, blocks in short]  # rank 1 runs 2 of the 3 all-reduces of every step
    write_rank(tmp_path / "rank1.json", 1, short, world_size=2)
    out = tl.analyze_ranks(tmp_path, workers=1)
    assert out["unmatched_kernels"] == 3  # rank 0's third all-reduce of each of the 3 steps
    assert [s["collectives"] for s in out["stragglers"]] == [2, 2, 2]


def test_a_job_without_a_collective_every_rank_ran_has_none_to_align(tmp_path):
    _rank_trace(tmp_path / "r0.json", 0, [("gemm", 7, 10, 40), (NCCL, 20, 30, 50)], (100, 100))
    _rank_trace(tmp_path / "r1.json", 1, [("gemm", 7, 10, 40)], (100, 100))  # no all-reduce at all
    out = tl.analyze_ranks(tmp_path, workers=1)
    assert out["clock_alignment"] == "none (no collective)" and out["unmatched_kernels"] == 1  # rank 0's one
    assert out["straggler"] is None and out["stragglers"] == []
    assert [(r["wait_ms"], r["transfer_ms"]) for r in out["ranks"]] == [(0.0, 0.0), (0.0, 0.0)]
