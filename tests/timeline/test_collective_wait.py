"""The wait per collective (gpucost_lab.timeline.collective_match and collective_wait) on chosen jobs: synthetic ranks
(tests/timeline/delayed_ranks.py) with no delay, with one rank, with one step; the two shipped ranks of the sampled
job by hand; the straggler and its late start of the sampled job and of a delayed one against HolisticTraceAnalysis's
straggler function (tests/timeline/hta_figures.py); and the JSON. A delay recovered within 5% over generated jobs is
tests/timeline/test_collective_wait_property.py.
"""

from __future__ import annotations

import math

import pytest

from gpucost_lab import timeline as tl

from .delayed_ranks import write_job
from .hta_figures import HTA_STRAGGLER

SAMPLED = [tl.example_trace("sampled_rank0_gpu"), tl.example_trace("sampled_rank1_gpu")]


def test_without_a_delay_no_rank_waits_for_another(tmp_path):
    write_job(tmp_path, 3, delayed=1, delay_us=0.0)
    found = tl.straggler(tl.load_ranks(tmp_path, workers=1))
    # every rank arrives together: every wait is 0, the others' time in the collectives equals the straggler's
    assert found.wait_us.value == 0.0 and found.wait_us.ci95_low is None
    assert found.comm_time_ratio.value == pytest.approx(1.0) and found.verdict == "same"


def test_one_rank_has_no_straggler_and_one_step_no_interval(tmp_path):
    write_job(tmp_path / "one", 1, delayed=0)
    job = tl.load_ranks(tmp_path / "one", workers=1)
    assert tl.straggler(job) is None and tl.stragglers(job).empty
    assert tl.rank_table(job).loc[0, "wait_us"] == 0.0
    write_job(tmp_path / "short", 2, delayed=1, steps=1)
    found = tl.straggler(tl.load_ranks(tmp_path / "short", workers=1))
    assert found.wait_us.ci95_low is None and found.verdict == "inconclusive"
    assert found.wait_us.value == pytest.approx(2_000.0)


def test_the_sampled_ranks_by_hand():
    job = tl.load_ranks(SAMPLED, workers=1)
    found = tl.straggler(job)
    # the two files' ncclKernel_SendRecv kernels, the k-th of each step on either rank matched (durations in us):
    # step 551 rank 0: 30669, 62783, 11727, 47652, 42496; rank 1: 57924, 41375, 8370, 17614, 42744
    # step 552 rank 0: 67827, 21124, 12119, 36158, 63644; rank 1: 39630, 4624, 90771, 13838, 62163
    # rank 1 starts later on average (its starts less rank 0's, us: 35534, 109290, 3302, 164191, 84; -39645, 45308,
    # -92521, 22328, 1292: mean 24916.3 after rank 0, or 38132.9 after the earliest of the two): the straggler.
    assert found.rank == 1 and found.lateness_us == pytest.approx(38_132.9)
    # rank 0's wait for it, per collective (its duration less the faster one's): step 551 (0 + 21408 + 3357 + 30038
    # + 0) / 5 = 10960.6 us; step 552 (28197 + 16500 + 0 + 22320 + 1481) / 5 = 13699.6 us; their geometric mean
    late = tl.stragglers(job).set_index("step")
    assert late["wait_mean_us"].tolist() == pytest.approx([10_960.6, 13_699.6])
    assert found.wait_us.value == pytest.approx(math.sqrt(10_960.6 * 13_699.6))
    # log-scale 95% interval over 2 steps: t(0.975, 1) = 12.706, se = |ln(13699.6 / 10960.6)| / 2
    half = 12.706 * abs(math.log(13_699.6 / 10_960.6)) / 2
    assert found.wait_us.ci95_low == pytest.approx(found.wait_us.value * math.exp(-half), rel=1e-3)
    # rank 0's time in the collectives over rank 1's: 195327 / 168027 = 1.162 and 200872 / 211026 = 0.952
    assert late["comm_time_ratio"].tolist() == pytest.approx([195_327 / 168_027, 200_872 / 211_026])
    assert found.verdict == "inconclusive"  # the interval of the ratio over two steps holds 1
    table = tl.rank_table(job).set_index("rank")
    # transfer: the faster rank's duration per collective, summed over both steps, the same for both ranks
    transfer = 30669 + 41375 + 8370 + 17614 + 42496 + 39630 + 4624 + 12119 + 13838 + 62163
    assert table["transfer_us"].tolist() == [transfer, transfer]
    assert table.loc[0, "wait_us"] == 21408 + 3357 + 30038 + 28197 + 16500 + 22320 + 1481


@pytest.mark.parametrize("folder", ["sampled", "delayed"])
def test_the_straggler_and_its_late_start_agree_with_hta(tmp_path, folder):
    hta = HTA_STRAGGLER[folder]
    paths = SAMPLED if folder == "sampled" else write_job(tmp_path)
    job = tl.load_ranks(paths, workers=1)
    assert [tl.straggler(job).rank] == hta["straggler"]
    table = tl.collectives(job)
    for step in hta["iterations"]:
        kernels = {int(k.split()[1]): v for k, v in hta["kernels"].items() if int(k.split()[0]) == step}
        first = min(v["start_us"] for v in kernels.values())
        spread = max(v["start_us"] for v in kernels.values()) - first
        # HTA's kernel is one collective of ours: its late-arrival spread and its last rank are HTA's
        ours = table[(table["step"] == step) & (table["spread_us"] == spread)]
        assert len(ours) >= 1, (step, spread)
        assert ours["latest_rank"].iloc[0] == max(kernels, key=lambda r: kernels[r]["start_us"])
        assert ours["transfer_us"].iloc[0] == min(v["dur_us"] for v in kernels.values())


def test_the_json_says_the_straggler_and_each_steps_spreads(tmp_path):
    out = tl.analyze_ranks(write_job(tmp_path, 3, delayed=1, delay_us=4_000.0), workers=1)
    assert out["straggler"]["rank"] == 1 and out["straggler"]["verdict"] == "straggler"
    assert set(out["straggler"]["wait_ms"]) == {"value", "ci95_low", "ci95_high"}
    assert out["straggler"]["wait_ms"]["value"] == pytest.approx(4.0)
    assert [r["wait_ms"] for r in out["ranks"]] == pytest.approx([48.0, 0.0, 48.0])  # 4 ms x 4 x 3 steps
    assert [r["transfer_ms"] for r in out["ranks"]] == pytest.approx([6.0] * 3)  # 0.5 ms x 12
    spreads = [c["spread_ms"] for s in out["stragglers"] for c in s["per_collective"]]
    assert spreads == pytest.approx([4.0] * 12)
