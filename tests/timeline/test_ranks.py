"""A distributed job's traces read as one job (gpucost_lab.timeline.ranks): a row per rank and the straggler per
step, on two-rank traces written here with hand-computed figures and on the two real ranks of the sampled job against
HolisticTraceAnalysis's own figures (tests/timeline/hta_figures.py)."""

from __future__ import annotations

import json

import pytest

from gpucost_lab import timeline as tl

from .hta_figures import HTA_RANKS

RUNTIME = "cuda_runtime"


def _launch(correlation, ts):
    return {"ph": "X", "cat": RUNTIME, "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 1,
            "args": {"correlation": correlation}}  # fmt: skip


def _kernel(name, stream, ts, dur, correlation):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"stream": stream, "correlation": correlation}}  # fmt: skip


def _step(number, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": 1, "tid": 1, "ts": ts,
            "dur": dur}  # fmt: skip


def _rank_trace(path, rank, kernels, step_us, world_size=2):
    """Two ProfilerSteps (every kernel is launched in the first: the last-step rule drops none); ``kernels`` as
    (name, stream, start, duration), each launched 1 us after the step starts, one correlation id each."""
    events = [_step(1, 0, step_us[0]), _step(2, step_us[0], step_us[1])]
    for i, (name, stream, ts, dur) in enumerate(kernels):
        events += [_launch(i + 1, 1 + i), _kernel(name, stream, ts, dur, i + 1)]
    info = {} if rank is None else {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size}}
    path.write_text(json.dumps({**info, "traceEvents": events}))
    return path


NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


@pytest.fixture
def job_dir(tmp_path):
    """Rank 0: gemm [10, 50) and relu [90, 95) on stream 7, an all-reduce [30, 80) on stream 20; steps 100 and 100 us.
    Rank 1: gemm [10, 70) on stream 7, an all-reduce [60, 90) on stream 20; steps 130 and 100 us."""
    folder = tmp_path / "job"
    folder.mkdir()
    _rank_trace(folder / "b.json", 0, [("gemm", 7, 10, 40), (NCCL, 20, 30, 50), ("relu", 7, 90, 5)], (100, 100))
    _rank_trace(folder / "a.json", 1, [("gemm", 7, 10, 60), (NCCL, 20, 60, 30)], (130, 100))
    return folder


def test_each_rank_has_its_hand_computed_row(job_dir):
    table = tl.rank_table(tl.load_ranks(job_dir, workers=1)).set_index("rank")
    assert list(table.index) == [0, 1]  # by the files' own rank, not by file name (a.json is rank 1)
    r0, r1 = table.loc[0], table.loc[1]
    # rank 0: busy = [10, 80) + [90, 95) = 75 of a span [10, 95) = 85; computation [10, 50) + [90, 95) = 45,
    # communication [30, 80) = 50, both at once [30, 50) = 20
    assert (r0.span_us, r0.busy_us, r0.idle_us) == (85, 75, 10)
    assert (r0.computation_us, r0.communication_us, r0.memory_us) == (45, 50, 0)
    assert r0.communication_share == pytest.approx(50 / 75)
    assert r0.comm_comp_overlap_share == pytest.approx(20 / 50)
    # rank 1: busy [10, 90) = 80 = span; overlap [60, 70) = 10 of 30
    assert (r1.span_us, r1.busy_us, r1.idle_us) == (80, 80, 0)
    assert r1.comm_comp_overlap_share == pytest.approx(10 / 30)
    # stream 7 of rank 0 waits 40 us ([50, 90)) for relu, launched at 3 us, long before: not the host's wait, and
    # over HTA's 30 us kernel-wait threshold, so "other"; stream 20 runs one kernel and has no gap
    assert (r0.idle_host_wait_us, r0.idle_kernel_wait_us, r0.idle_other_us) == (0, 0, 40)
    assert (r1.idle_host_wait_us, r1.idle_kernel_wait_us, r1.idle_other_us) == (0, 0, 0)


def test_the_straggler_is_the_late_arrival_at_the_collective(job_dir):
    job = tl.load_ranks(job_dir, workers=1)
    # step 1's all-reduce: rank 0 enters at 30 us and leaves at 80, rank 1 enters at 60 and leaves at 90 (one clock:
    # both files say their rank); rank 1 arrives 30 us late, its 30 us are the transfer, rank 0 waits 50 - 30 = 20
    row = tl.collectives(job).iloc[0]
    assert (row.step, row.spread_us, row.earliest_rank, row.latest_rank) == (1, 30, 0, 1)
    assert (row.transfer_us, row.wait_max_us, row.wait_mean_us) == (30, 20, 10)
    late = tl.stragglers(job).set_index("step")
    assert late.loc[1, ["collectives", "latest_rank", "spread_max_us", "wait_mean_us"]].tolist() == [1, 1, 30, 20]
    assert late.loc[1, "comm_time_ratio"] == pytest.approx(50 / 30)
    table = tl.rank_table(job).set_index("rank")
    assert table["wait_us"].tolist() == [20, 0] and table["transfer_us"].tolist() == [30, 30]
    found = tl.straggler(job)
    assert (found.rank, found.wait_us.value, found.steps) == (1, 20, 1)
    assert found.verdict == "inconclusive"  # one step: no interval to decide on


def test_the_host_step_times_are_not_the_wait(tmp_path):
    # rank 1's step 1 lasts 60 us longer on the host, but both ranks enter and leave the all-reduce together
    for rank, first in enumerate((100, 160)):
        _rank_trace(tmp_path / f"r{rank}.json", rank, [("gemm", 7, 10, 40), (NCCL, 20, 50, 20)], (first, 100))
    late = tl.stragglers(tl.load_ranks(tmp_path, workers=1)).set_index("step")
    assert late.loc[1, "spread_max_us"] == 0 and late.loc[1, "wait_mean_us"] == 0


def test_the_real_ranks_agree_with_hta():
    paths = [tl.example_trace("sampled_rank0_gpu"), tl.example_trace("sampled_rank1_gpu")]
    job = tl.load_ranks(paths, workers=1)
    assert (job.device, job.world_size, job.rank_numbers) == ("cuda", 128, (0, 1))
    table = tl.rank_table(job).set_index("rank")
    for rank, hta in HTA_RANKS.items():
        row = table.loc[rank]
        for key in ("busy_us", "idle_us", "span_us"):
            assert row[key] == pytest.approx(hta[key], rel=1e-3), (rank, key)
        assert 100 * row.comm_comp_overlap_share == pytest.approx(hta["overlap_pctg"], abs=0.005)
